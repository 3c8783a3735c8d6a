// FlightTable: one fill per name, the outcome kept only for the clients that
// began it, a follower's failure kept briefly, threads bounded and joined.

#include <blobstreaming/blobstore/FlightTable.h>

#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE FlightTableTest
#include <boost/test/unit_test.hpp>

#include "ServerTestSupport.h"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

using blobstreaming::BlobInFlight;
using blobstreaming::BlobInfo;
using blobstreaming::Errc;
using blobstreaming::Error;
using blobstreaming::FlightTable;

using blobstreaming::server::test::code_of;

namespace {

BlobInfo info(const std::string& name, std::uint64_t size)
{
    BlobInfo i;
    i.name = name;
    i.size = size;
    return i;
}


}  // namespace

BOOST_AUTO_TEST_CASE(a_second_fetch_of_a_name_joins_the_first_and_gets_its_outcome)
{
    FlightTable table;
    bool first = false;
    auto flight = table.join("CT.1", first);
    BOOST_TEST(first);
    bool second = true;
    auto joined = table.join("CT.1", second);
    BOOST_TEST(!second);
    BOOST_TEST(joined.get() == flight.get());
    auto waiter = std::async(std::launch::async, [&] { return table.landed(*joined); });
    table.land("CT.1", *flight, info("CT.1", 7), nullptr);
    BOOST_TEST(waiter.get().size == 7u);
    // Landed: the next fetch of the name opens a new flight.
    table.join("CT.1", first);
    BOOST_TEST(first);
}

BOOST_AUTO_TEST_CASE(the_outcome_is_kept_for_the_clients_that_began_it_only)
{
    FlightTable table;
    bool first = false;
    auto flight = table.join("CT.2", first);
    table.keep_for(*flight, "CN=ws1");
    table.land("CT.2", *flight, info("CT.2", 3), nullptr);
    BOOST_TEST(table.await("CT.2", "b", "CN=ws1").size == 3u);
    BOOST_TEST(code_of([&] { table.await("CT.2", "b", "CN=other"); }) == Errc::no_such_blob);
    try {
        table.await("CT.2", "b", "CN=other");
    } catch (const Error& e) {
        BOOST_TEST(std::string(e.what()).find("this client began no fetch of it at store \"b\"") != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(pulls_follow_a_flight_once_it_has_begun)
{
    FlightTable table;
    bool first = false;
    auto flight = table.join("CT.3", first);
    BOOST_TEST(!table.in_flight("CT.3"));
    auto progress = std::make_shared<BlobInFlight>(info("CT.3", 10));
    auto waiter = std::async(std::launch::async, [&] { return table.wait_begun(*flight); });
    table.begun(*flight, progress);
    BOOST_TEST(waiter.get().get() == progress.get());
    BOOST_TEST(table.in_flight("CT.3").get() == progress.get());
    table.land("CT.3", *flight, std::nullopt, std::make_exception_ptr(Error(Errc::timeout, "stalled")));
    BOOST_TEST(!table.in_flight("CT.3"));
}

BOOST_AUTO_TEST_CASE(a_spawned_flight_that_failed_under_followers_is_remembered_one_awaited_is_not)
{
    FlightTable table;
    for (const std::string client : {"", "CN=ws1"}) {
        const std::string name = client.empty() ? "CT.followed" : "CT.awaited";
        bool first = false;
        auto flight = table.join(name, first);
        if (!client.empty()) table.keep_for(*flight, client);
        std::promise<void> go;
        auto started = go.get_future().share();
        table.spawn(name, flight, "read-through", [&table, flight, name, started]() -> BlobInfo {
            table.begun(*flight, std::make_shared<BlobInFlight>(info(name, 1)));
            started.wait();
            throw Error(Errc::unreachable, "the source went away");
        });
        go.set_value();
        BOOST_TEST(code_of([&] { table.landed(*flight); }) == Errc::unreachable);
    }
    table.stop();  // the threads have ended: what they recorded is there
    BOOST_TEST(code_of([&] { table.rethrow_recent_failure("CT.followed"); }) == Errc::unreachable);
    BOOST_TEST(code_of([&] { table.rethrow_recent_failure("CT.awaited"); }) == Errc::ok);
    BOOST_TEST(code_of([&] { table.await("CT.awaited", "b", "CN=ws1"); }) == Errc::unreachable);
}

BOOST_AUTO_TEST_CASE(no_new_flight_once_stopping)
{
    FlightTable table;
    table.stop();
    bool first = false;
    BOOST_TEST(code_of([&] { table.join("CT.4", first); }) == Errc::cancelled);
}
