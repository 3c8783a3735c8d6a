#include <blobstreaming/transporter/daemon/EventHub.h>

#define BOOST_TEST_MODULE EventHub
#include <boost/test/unit_test.hpp>

#include "Eventually.h"

#include <blobstreaming/common/Error.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

using namespace blobstreaming;
using namespace blobstreaming::daemon;
using blobstreaming::test::eventually;
using namespace std::chrono_literals;

namespace {

/// What the tests publish.
struct Event {
    std::uint64_t sequence = 0;
};

/// A hub named as a store's (the servants' refusals carry these words).
struct Hub : EventHub<Event> {
    explicit Hub(NoticeDispatcher& dispatcher)
        : EventHub<Event>(EventSource{"store events", "the events of store \"alpha\"", "store", {}}, dispatcher)
    {}
};

/// Counts the events it is given; fails them all when told to.
class CountingSink final : public NoticeSinkOf<Event> {
public:
    explicit CountingSink(std::string endpoint, std::string failure = "")
        : endpoint_(std::move(endpoint)), failure_(std::move(failure))
    {}
    std::string deliver(const Event&) noexcept override
    {
        ++events;
        return failure_;
    }
    const std::string& endpoint() const noexcept override { return endpoint_; }
    std::atomic<int> events{0};

private:
    const std::string endpoint_;
    const std::string failure_;
};

Event committed(std::uint64_t sequence) { return Event{sequence}; }

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
    Hub hub(dispatcher);
    auto watcher = std::make_shared<CountingSink>("watcher");
    auto indexer = std::make_shared<CountingSink>("indexer");
    const std::uint64_t watch = hub.subscribe(watcher, Hub::kEveryKind, "CN=watcher");
    const std::uint64_t index = hub.subscribe(indexer, Hub::kEveryKind, "10.0.0.7");
    std::atomic<int> local_events{0};
    const std::uint64_t local = hub.subscribe_local("index", Hub::kEveryKind, [&](const Event&) { ++local_events; });

    // Whatever ids another client tries, in a row or the real ones, nothing ends.
    for (std::uint64_t id = 1; id <= 30; ++id) BOOST_TEST(!hub.unsubscribe(id, "CN=reader"));
    for (std::uint64_t id : {watch, index, local}) BOOST_TEST(!hub.unsubscribe(id, "CN=reader"));
    BOOST_TEST(!hub.unsubscribe(watch, "10.0.0.7"));
    BOOST_TEST(!hub.unsubscribe(index, "CN=watcher"));
    BOOST_TEST(hub.subscriptions() == 3u);

    hub.publish(committed(1));
    BOOST_TEST(eventually([&] { return watcher->events == 1 && indexer->events == 1 && local_events == 1; }));

    // Its owner ends it; the others go on.
    BOOST_TEST(hub.unsubscribe(watch, "CN=watcher"));
    BOOST_TEST(!hub.unsubscribe(watch, "CN=watcher"));
    BOOST_TEST(hub.subscriptions() == 2u);
    hub.publish(committed(2));
    BOOST_TEST(eventually([&] { return indexer->events == 2 && local_events == 2; }));
    BOOST_TEST(watcher->events == 1);
    hub.close();
    dispatcher.stop();
}

BOOST_AUTO_TEST_CASE(the_limit_counts_every_client)
{
    NoticeDispatcher dispatcher;
    Hub hub(dispatcher);
    for (std::size_t i = 0; i < Hub::kMaxSubscriptions; ++i)
        hub.subscribe(std::make_shared<CountingSink>("s"), Hub::kEveryKind, "CN=c" + std::to_string(i));
    try {
        hub.subscribe(std::make_shared<CountingSink>("s"), Hub::kEveryKind, "CN=late");
        BOOST_FAIL("subscribe past the limit succeeded");
    } catch (const Error& e) {
        BOOST_TEST((e.code() == Errc::limit_reached));
        BOOST_TEST(std::string(e.what()) == "subscribe to the events of store \"alpha\": 1000 subscriptions are "
                                            "open, the most the store keeps; try again later");
    }
    hub.close();
    dispatcher.stop();
}

BOOST_AUTO_TEST_CASE(a_subscriber_that_fails_a_delivery_is_ended_and_an_in_daemon_one_is_not)
{
    NoticeDispatcher dispatcher;
    Hub hub(dispatcher);
    auto dead = std::make_shared<CountingSink>("dead", "CORBA TIMEOUT");
    auto alive = std::make_shared<CountingSink>("alive");
    hub.subscribe(dead, Hub::kEveryKind, "CN=dead");
    hub.subscribe(alive, Hub::kEveryKind, "CN=alive");
    hub.subscribe_local("index", Hub::kEveryKind, [](const Event&) { throw std::runtime_error("index full"); });
    hub.publish(committed(1));
    BOOST_TEST(eventually([&] { return hub.subscriptions() == 2u && alive->events == 1; }));
    BOOST_TEST(dead->events == 1);
    hub.publish(committed(2));
    BOOST_TEST(eventually([&] { return alive->events == 2; }));
    BOOST_TEST(dead->events == 1);
    BOOST_TEST(hub.subscriptions() == 2u);
    hub.close();
    dispatcher.stop();
}

BOOST_AUTO_TEST_CASE(a_subscription_takes_the_kinds_it_asked_for)
{
    NoticeDispatcher dispatcher;
    Hub hub(dispatcher);
    auto firsts = std::make_shared<CountingSink>("firsts");
    auto all = std::make_shared<CountingSink>("all");
    hub.subscribe(firsts, 1u, "CN=a");
    hub.subscribe(all, Hub::kEveryKind, "CN=b");
    hub.publish(committed(1), 2u);
    hub.publish(committed(2), 1u);
    BOOST_TEST(eventually([&] { return all->events == 2 && firsts->events == 1; }));
    hub.close();
    dispatcher.stop();
}
