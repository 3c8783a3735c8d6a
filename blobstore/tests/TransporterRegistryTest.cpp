#include "server/TransporterRegistry.h"

#include <blobstreaming/transporter/corba/Security.h>

#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE TransporterRegistry
#include <boost/test/unit_test.hpp>

#include "ServerTestSupport.h"

#include <chrono>
#include <string>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::server;
using namespace blobstreaming::server::test;
using namespace std::chrono_literals;

namespace {

TransporterLimits limits(std::size_t total, std::size_t per_client, std::chrono::milliseconds idle = 10s)
{
    TransporterLimits l;
    l.total = total;
    l.per_client = per_client;
    l.idle = idle;
    return l;
}

std::string refusal(TransporterRegistry& r, const std::string& client)
{
    return message_of([&] { r.admit(client); }, Errc::limit_reached, "admitted");
}

}  // namespace

BOOST_AUTO_TEST_CASE(caps_per_client_and_in_total_with_the_exact_messages)
{
    FakeClock clock;
    TransporterRegistry r(limits(5, 3, 300s), clock.fn());
    std::vector<std::shared_ptr<TransporterActivity>> held;
    for (int i = 0; i < 3; ++i) held.push_back(r.admit("10.0.0.1"));
    BOOST_CHECK_EQUAL(refusal(r, "10.0.0.1"),
                      "openTransporter: client 10.0.0.1 has reached its limit of open transporters (3, "
                      "--max-client-transporters): close() the ones it no longer uses; transporters left idle are "
                      "reclaimed after 300 s (--transporter-idle)");
    held.push_back(r.admit("10.0.0.2"));
    held.push_back(r.admit("CN=ws1"));
    BOOST_CHECK_EQUAL(r.open(), 5u);
    BOOST_CHECK_EQUAL(refusal(r, "10.0.0.3"),
                      "openTransporter: the store has reached its limit of open transporters (5 in all, "
                      "--max-transporters) and every client holding more than 10.0.0.3 is using its transporters: "
                      "try again later; transporters left idle are reclaimed after 300 s (--transporter-idle)");

    // Closing one makes room, for its client and in total.
    r.release(held[0].get());
    r.release(held[0].get());  // twice: quiet, counted once
    BOOST_CHECK_EQUAL(r.open(), 4u);
    BOOST_CHECK_NO_THROW(held.push_back(r.admit("10.0.0.1")));
    const auto swept = r.sweep();
    BOOST_CHECK_EQUAL(swept.refused, 2u);
    BOOST_CHECK_EQUAL(swept.reclaimed, 0u);
    BOOST_CHECK_EQUAL(swept.open, 5u);
    BOOST_CHECK_EQUAL(swept.clients, 3u);
    BOOST_CHECK_EQUAL(r.sweep().refused, 0u);  // counted since the previous sweep
}

BOOST_AUTO_TEST_CASE(an_idle_transporter_is_reclaimed_once_after_the_lifetime_not_before)
{
    FakeClock clock;
    TransporterRegistry r(limits(10, 10, 10s), clock.fn());
    int reclaimed = 0;
    auto a = r.admit("h");
    r.on_reclaim(a, [&] { ++reclaimed; });
    auto b = r.admit("h");
    r.on_reclaim(b, [&] { ++reclaimed; });

    clock.now += 9s;
    b->touch();  // b is used; a is not
    BOOST_CHECK_EQUAL(r.sweep().reclaimed, 0u);
    clock.now += 1s;
    auto s = r.sweep();
    BOOST_CHECK_EQUAL(s.reclaimed, 1u);
    BOOST_CHECK_EQUAL(s.open, 1u);
    BOOST_CHECK_EQUAL(reclaimed, 1);
    clock.now += 9s;
    BOOST_CHECK_EQUAL(r.sweep().reclaimed, 1u);
    BOOST_CHECK_EQUAL(reclaimed, 2);
    BOOST_CHECK_EQUAL(r.open(), 0u);
    clock.now += 100s;
    BOOST_CHECK_EQUAL(r.sweep().reclaimed, 0u);  // once only
    BOOST_CHECK_EQUAL(reclaimed, 2);
}

BOOST_AUTO_TEST_CASE(a_transporter_with_a_transfer_that_may_still_run_is_not_idle)
{
    FakeClock clock;
    TransporterRegistry r(limits(10, 10, 10s), clock.fn());
    auto a = r.admit("h");
    auto control = std::make_shared<TransferControl>();
    a->track(control);  // a ticket issued: the registry or a data connection holds its control

    clock.now += 1h;
    BOOST_CHECK_EQUAL(r.sweep().reclaimed, 0u);  // a long transfer is still running

    a->ended(control.get());  // the transfer ended an hour later: that was a use
    BOOST_CHECK_EQUAL(r.sweep().reclaimed, 0u);
    clock.now += 10s;
    BOOST_CHECK_EQUAL(r.sweep().reclaimed, 1u);

    // A ticket that was never used: busy while its control is held (until the
    // ticket registry purges it), idle once nobody holds it.
    auto b = r.admit("h");
    auto unused = std::make_shared<TransferControl>();
    b->track(unused);
    clock.now += 1h;
    BOOST_CHECK_EQUAL(r.sweep().reclaimed, 0u);
    unused.reset();
    BOOST_CHECK_EQUAL(r.sweep().reclaimed, 1u);
}

BOOST_AUTO_TEST_CASE(a_released_transporter_is_never_reclaimed)
{
    FakeClock clock;
    TransporterRegistry r(limits(10, 10, 10s), clock.fn());
    int reclaimed = 0;
    auto a = r.admit("h");
    r.on_reclaim(a, [&] { ++reclaimed; });
    r.release(a.get());
    clock.now += 1h;
    BOOST_CHECK_EQUAL(r.sweep().reclaimed, 0u);
    BOOST_CHECK_EQUAL(reclaimed, 0);
}

BOOST_AUTO_TEST_CASE(a_failing_reclaim_is_logged_and_the_sweep_goes_on)
{
    FakeClock clock;
    TransporterRegistry r(limits(10, 10, 10s), clock.fn());
    int reclaimed = 0;
    auto a = r.admit("h");
    r.on_reclaim(a, [] { throw std::runtime_error("no POA"); });
    auto b = r.admit("h");
    r.on_reclaim(b, [&] { ++reclaimed; });
    clock.now += 11s;
    BOOST_CHECK_EQUAL(r.sweep().reclaimed, 2u);
    BOOST_CHECK_EQUAL(reclaimed, 1);
    BOOST_CHECK_EQUAL(r.open(), 0u);
}

BOOST_AUTO_TEST_CASE(the_host_of_an_omniorb_peer_address)
{
    BOOST_CHECK_EQUAL(corba::host_of_peer("giop:tcp:127.0.0.1:4711"), "127.0.0.1");
    BOOST_CHECK_EQUAL(corba::host_of_peer("giop:ssl:10.1.2.3:4711"), "10.1.2.3");
    BOOST_CHECK_EQUAL(corba::host_of_peer("giop:tcp:[::1]:4711"), "::1");
    BOOST_CHECK_EQUAL(corba::host_of_peer("giop:unix:/tmp/omni-x/000"), "local");
    BOOST_CHECK_EQUAL(corba::host_of_peer("host:1"), "host");
}

BOOST_AUTO_TEST_CASE(new_limits_apply_from_the_next_admission_and_sweep)
{
    FakeClock clock;
    TransporterRegistry r(limits(5, 1, 300s), clock.fn());
    auto first = r.admit("10.0.0.1");
    BOOST_CHECK(!refusal(r, "10.0.0.1").empty());
    r.set_limits(limits(5, 2, 10s));  // a SIGHUP reload
    BOOST_CHECK_EQUAL(r.limits().per_client, 2u);
    auto second = r.admit("10.0.0.1");
    clock.now += 11s;
    BOOST_CHECK_EQUAL(r.sweep().reclaimed, 2u);  // the new idle lifetime
}

BOOST_AUTO_TEST_CASE(at_the_total_cap_the_least_recently_used_idle_one_of_the_biggest_holder_makes_room)
{
    FakeClock clock;
    TransporterRegistry r(limits(6, 4, 300s), clock.fn());
    std::vector<std::string> reclaimed;
    std::vector<std::shared_ptr<TransporterActivity>> held;
    auto admit = [&](const std::string& client) {
        auto a = r.admit(client);
        const auto n = held.size();
        r.on_reclaim(a, [&reclaimed, client, n] { reclaimed.push_back(client + "#" + std::to_string(n)); });
        held.push_back(a);
        clock.now += 10ms;
        return a;
    };
    // Two hostile addresses fill the store: 4 + 2.
    for (int i = 0; i < 4; ++i) admit("10.0.0.66");
    admit("10.0.0.77");
    admit("10.0.0.77");
    BOOST_CHECK_EQUAL(r.open(), 6u);

    // Transporters used a moment ago are not taken: refused.
    BOOST_CHECK_EQUAL(refusal(r, "10.0.0.1"),
                      "openTransporter: the store has reached its limit of open transporters (6 in all, "
                      "--max-transporters) and every client holding more than 10.0.0.1 is using its transporters: "
                      "try again later; transporters left idle are reclaimed after 300 s (--transporter-idle)");

    // Idle for the pressure lifetime: the least recently used of the client
    // holding the most (10.0.0.66, #0 is the oldest; #1 is busy with a
    // transfer and #2 was used since) makes room, long before --transporter-idle.
    clock.now += 2s;
    auto busy = std::make_shared<TransferControl>();
    held[0]->touch();
    held[1]->track(busy);
    clock.now += 2s;
    held[2]->touch();
    BOOST_CHECK_NO_THROW(admit("10.0.0.1"));
    BOOST_REQUIRE_EQUAL(reclaimed.size(), 1u);
    BOOST_CHECK_EQUAL(reclaimed[0], "10.0.0.66#3");
    BOOST_CHECK_EQUAL(r.open(), 6u);

    // Another newcomer: 10.0.0.66 still holds the most (3); its oldest idle
    // one now is #0 (#1 busy, #2 used 2 s ago but after #0).
    BOOST_CHECK_NO_THROW(admit("CN=ws1"));
    BOOST_REQUIRE_EQUAL(reclaimed.size(), 2u);
    BOOST_CHECK_EQUAL(reclaimed[1], "10.0.0.66#0");

    // Shares are now 2 (66), 2 (77), 1, 1: nobody holds more than one more
    // than a newcomer with one, so a client never takes from its equals.
    BOOST_CHECK_EQUAL(message_of([&] { r.admit("10.0.0.1"); }, Errc::limit_reached, "admitted").substr(0, 60),
                      "openTransporter: the store has reached its limit of open tra");
    const auto swept = r.sweep();
    BOOST_CHECK_EQUAL(swept.evicted, 2u);
    BOOST_CHECK_EQUAL(swept.refused, 2u);
    BOOST_CHECK_EQUAL(swept.reclaimed, 0u);
    BOOST_CHECK_EQUAL(swept.clients, 4u);
}
