#include "server/ReservationTable.h"

#include <blobstreaming/blobstore/Error.h>
#include <blobstreaming/blobstore/MemoryStore.h>

#define BOOST_TEST_MODULE ReservationTable
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

using namespace blobstreaming;
using namespace blobstreaming::server;
using namespace std::chrono_literals;

namespace {

struct Fixture {
    std::chrono::steady_clock::time_point now{std::chrono::hours(10)};
    MemoryStore store{MemoryStore::Options{1u << 20, false}};
    ReservationTable table{60s, [this] { return now; }};
};

Errc code_of(const std::function<void()>& f)
{
    try {
        f();
    } catch (const Error& e) {
        return e.code();
    }
    return Errc::ok;
}

std::string message_of(const std::function<void()>& f)
{
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(unused_reservation_is_aborted_after_the_grace_period, Fixture)
{
    const auto id = table.add(store.reserve("CT.1", 1000));
    BOOST_CHECK_EQUAL(store.usage().reserved, 1000u);
    now += 59s;
    BOOST_CHECK_EQUAL(table.purge(), 0u);
    now += 1s;
    BOOST_CHECK_EQUAL(table.purge(), 1u);
    BOOST_CHECK_EQUAL(store.usage().reserved, 0u);
    BOOST_CHECK(code_of([&] { table.find(id); }) == Errc::no_such_reservation);
}

BOOST_FIXTURE_TEST_CASE(claimed_reservation_is_not_purged_and_abort_cancels_its_push, Fixture)
{
    const auto id = table.add(store.reserve("CT.2", 10));
    auto control = std::make_shared<TransferControl>();
    table.attach(id, control);
    auto reservation = table.claim(id);
    BOOST_REQUIRE(reservation != nullptr);
    now += 120s;
    BOOST_CHECK_EQUAL(table.purge(), 0u);
    BOOST_CHECK_EQUAL(message_of([&] { table.claim(id); }),
                      "reservation " + std::to_string(id) + " is already being filled by another connection");
    BOOST_CHECK(code_of([&] { table.take(id); }) == Errc::no_such_reservation);
    table.abort(id);
    BOOST_CHECK(control->cancelled);
    table.release(id);
    BOOST_CHECK(code_of([&] { table.abort(id); }) == Errc::no_such_reservation);
}

BOOST_FIXTURE_TEST_CASE(abort_of_a_waiting_reservation_releases_space, Fixture)
{
    const auto id = table.add(store.reserve("CT.3", 100));
    table.abort(id);
    BOOST_CHECK_EQUAL(store.usage().reserved, 0u);
    BOOST_CHECK_EQUAL(message_of([&] { table.claim(id); }),
                      "reservation " + std::to_string(id) + " of this ticket was committed, aborted or expired meanwhile");
    BOOST_CHECK(code_of([&] { table.claim(id); }) == Errc::refused);
}

BOOST_FIXTURE_TEST_CASE(take_hands_over_for_a_control_plane_commit, Fixture)
{
    const auto id = table.add(store.reserve("CT.4", 3));
    auto reservation = table.take(id);
    BOOST_REQUIRE(!reservation->write("abc", 3));
    reservation->commit();
    BOOST_CHECK(store.contains("CT.4"));
    BOOST_CHECK_EQUAL(table.waiting(), 0u);
}

BOOST_FIXTURE_TEST_CASE(abort_all_releases_everything, Fixture)
{
    table.add(store.reserve("A", 10));
    table.add(store.reserve("B", 20));
    table.abort_all();
    BOOST_CHECK_EQUAL(store.usage().reserved, 0u);
    BOOST_CHECK_EQUAL(table.waiting(), 0u);
}

BOOST_FIXTURE_TEST_CASE(a_reservation_remembers_its_client_also_when_claimed_and_parked, Fixture)
{
    const auto id = table.add(store.reserve("CT.5", 10), "CN=modality1");
    BOOST_CHECK_EQUAL(table.client_of(id), "CN=modality1");
    BOOST_CHECK_EQUAL(table.find(id).client, "CN=modality1");
    auto reservation = table.claim(id);
    BOOST_CHECK_EQUAL(table.client_of(id), "CN=modality1");
    BOOST_REQUIRE(!reservation->write("abcd", 4));
    table.park(id, std::move(reservation));
    BOOST_CHECK_EQUAL(table.resumable("CT.5", "CN=modality1").received, 4u);
    BOOST_CHECK_EQUAL(table.resumable("CT.5", "CN=modality1").client, "CN=modality1");
    // Another client sees what it would see if there were none.
    BOOST_CHECK_EQUAL(message_of([&] { table.resumable("CT.5", "CN=modality2"); }),
                      "no interrupted push of \"CT.5\" to resume (none was started, it was committed or aborted, "
                      "its grace period ran out, or a data connection is still filling it)");
    BOOST_CHECK(code_of([&] { table.resumable("CT.5", ""); }) == Errc::no_such_reservation);
    table.abort(id);
    BOOST_CHECK(code_of([&] { table.client_of(id); }) == Errc::no_such_reservation);
}
