#include "server/EventHub.h"

#define BOOST_TEST_MODULE EventHub
#include <boost/test/unit_test.hpp>

#include "ServerTestSupport.h"

#include <blobstreaming/common/Error.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>

using namespace blobstreaming;
using namespace blobstreaming::server;
using namespace blobstreaming::daemon;
using blobstreaming::server::test::eventually;
using namespace std::chrono_literals;

namespace {

/// Counts the store events it is given.
class CountingSink final : public NoticeSinkOf<StoreEvent> {
public:
    explicit CountingSink(std::string endpoint) : endpoint_(std::move(endpoint)) {}
    std::string deliver(const StoreEvent&) noexcept override
    {
        ++events;
        return {};
    }
    const std::string& endpoint() const noexcept override { return endpoint_; }
    const char* noun() const noexcept override { return "store events"; }
    const char* recipient() const noexcept override { return "subscriber"; }
    std::atomic<int> events{0};

private:
    const std::string endpoint_;
};

StoreEvent committed(std::uint64_t sequence)
{
    StoreEvent e;
    e.sequence = sequence;
    e.time = std::chrono::system_clock::now();
    e.blob.name = "CT." + std::to_string(sequence);
    return e;
}

}  // namespace

BOOST_AUTO_TEST_CASE(ids_are_random_and_never_zero)
{
    SubscriptionTable table;
    std::set<std::uint64_t> ids;
    for (int i = 0; i < 200; ++i) ids.insert(table.add({nullptr, 0, "CN=a"}));
    BOOST_TEST(ids.size() == 200u);
    BOOST_TEST(ids.count(0) == 0u);
    // Not a sequence: the ids of one client are no guide to another's.
    BOOST_TEST(*ids.rbegin() - *ids.begin() > 1000000u);
}

BOOST_AUTO_TEST_CASE(only_the_owner_ends_a_subscription)
{
    SubscriptionTable table;
    const std::uint64_t mine = table.add({nullptr, 0, "CN=watcher"});
    const std::uint64_t local = table.add({nullptr, 0, ""});
    BOOST_TEST((table.unsubscribe(mine, "CN=reader") == SubscriptionTable::Removal::foreign));
    BOOST_TEST((table.unsubscribe(mine + 1, "CN=reader") == SubscriptionTable::Removal::unknown));
    BOOST_TEST((table.unsubscribe(local, "") == SubscriptionTable::Removal::foreign));
    BOOST_TEST((table.unsubscribe(local, "local") == SubscriptionTable::Removal::foreign));
    BOOST_TEST(table.size() == 2u);
    BOOST_TEST((table.unsubscribe(mine, "CN=watcher") == SubscriptionTable::Removal::ended));
    BOOST_TEST((table.unsubscribe(mine, "CN=watcher") == SubscriptionTable::Removal::unknown));
    BOOST_TEST(table.size() == 1u);
}

// The defect: any reader ended any other client's subscription by trying
// the (sequential) ids; the subscriber then saw no further event.
BOOST_AUTO_TEST_CASE(another_client_cannot_end_a_subscription_and_it_keeps_receiving)
{
    NoticeDispatcher dispatcher;
    EventHub hub("alpha", dispatcher);
    auto watcher = std::make_shared<CountingSink>("watcher");
    auto indexer = std::make_shared<CountingSink>("indexer");
    const std::uint64_t watch = hub.subscribe(watcher, kEveryEventKind, "CN=watcher");
    const std::uint64_t index = hub.subscribe(indexer, kEveryEventKind, "10.0.0.7");
    std::atomic<int> local_events{0};
    const std::uint64_t local = hub.subscribe_local("index", kEveryEventKind, [&](const StoreEvent&) { ++local_events; });

    // Whatever ids another client tries, in a row or the real ones, nothing ends.
    for (std::uint64_t id = 1; id <= 30; ++id) BOOST_TEST(!hub.unsubscribe(id, "CN=reader"));
    for (std::uint64_t id : {watch, index, local}) BOOST_TEST(!hub.unsubscribe(id, "CN=reader"));
    BOOST_TEST(!hub.unsubscribe(watch, "10.0.0.7"));
    BOOST_TEST(!hub.unsubscribe(index, "CN=watcher"));
    BOOST_TEST(hub.subscriptions() == 3u);

    hub.published(committed(1));
    BOOST_TEST(eventually([&] { return watcher->events == 1 && indexer->events == 1 && local_events == 1; }));

    // Its owner ends it; the others go on.
    BOOST_TEST(hub.unsubscribe(watch, "CN=watcher"));
    BOOST_TEST(!hub.unsubscribe(watch, "CN=watcher"));
    BOOST_TEST(hub.subscriptions() == 2u);
    hub.published(committed(2));
    BOOST_TEST(eventually([&] { return indexer->events == 2 && local_events == 2; }));
    BOOST_TEST(watcher->events == 1);
    hub.close();
    dispatcher.stop();
}

BOOST_AUTO_TEST_CASE(the_limit_counts_every_client)
{
    NoticeDispatcher dispatcher;
    EventHub hub("alpha", dispatcher);
    for (std::size_t i = 0; i < EventHub::kMaxSubscriptions; ++i)
        hub.subscribe(std::make_shared<CountingSink>("s"), kEveryEventKind, "CN=c" + std::to_string(i));
    try {
        hub.subscribe(std::make_shared<CountingSink>("s"), kEveryEventKind, "CN=late");
        BOOST_FAIL("subscribe past the limit succeeded");
    } catch (const Error& e) {
        BOOST_TEST((e.code() == Errc::limit_reached));
        BOOST_TEST(std::string(e.what()) == "subscribe to the events of store \"alpha\": 1000 subscriptions are "
                                            "open, the most the store keeps; try again later");
    }
    hub.close();
    dispatcher.stop();
}
