#include "server/ConnectionLimits.h"

#include "server/LogThrottle.h"

#define BOOST_TEST_MODULE ConnectionLimits
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

using namespace blobstreaming::server;
using namespace std::chrono_literals;

namespace {

struct Conn {
    int id;
};

using Limits = ConnectionLimits<Conn>;
using Verdict = Limits::Verdict;

ConnectionCaps caps(std::size_t connections, std::size_t unauthenticated, std::size_t per_peer)
{
    ConnectionCaps c;
    c.connections = connections;
    c.unauthenticated = unauthenticated;
    c.unauthenticated_per_peer = per_peer;
    return c;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_peer_above_its_cap_is_refused_others_are_not)
{
    Limits limits(caps(100, 100, 2));
    Conn a{1}, b{2};
    BOOST_CHECK(limits.assess("10.0.0.1") == Verdict::admit);
    limits.add(&a, "10.0.0.1");
    limits.add(&b, "10.0.0.1");
    BOOST_CHECK(limits.assess("10.0.0.1") == Verdict::refuse_peer_cap);
    BOOST_CHECK(limits.assess("10.0.0.2") == Verdict::admit);
    BOOST_CHECK_EQUAL(limits.unauthenticated_from("10.0.0.1"), 2u);
    BOOST_CHECK_EQUAL(limits.unauthenticated_from("10.0.0.2"), 0u);
}

BOOST_AUTO_TEST_CASE(an_authenticated_connection_frees_its_peers_slot_but_stays_counted)
{
    Limits limits(caps(100, 100, 1));
    Conn a{1};
    limits.add(&a, "10.0.0.1");
    BOOST_CHECK(limits.assess("10.0.0.1") == Verdict::refuse_peer_cap);
    limits.authenticated(&a);
    BOOST_CHECK(limits.assess("10.0.0.1") == Verdict::admit);
    BOOST_CHECK_EQUAL(limits.unauthenticated(), 0u);
    BOOST_CHECK_EQUAL(limits.connections(), 1u);
    limits.remove(&a);
    BOOST_CHECK_EQUAL(limits.connections(), 0u);
}

BOOST_AUTO_TEST_CASE(above_the_total_cap_the_oldest_unauthenticated_connection_makes_room)
{
    Limits limits(caps(100, 3, 3));
    Conn a{1}, b{2}, c{3}, d{4};
    limits.add(&a, "10.0.0.1");
    limits.add(&b, "10.0.0.2");
    limits.add(&c, "10.0.0.3");
    BOOST_CHECK(limits.assess("10.0.0.4") == Verdict::admit_after_eviction);
    BOOST_CHECK_EQUAL(limits.oldest_unauthenticated(), &a);
    limits.remove(&a);  // what the acceptor does: evict, then admit
    limits.add(&d, "10.0.0.4");
    BOOST_CHECK_EQUAL(limits.oldest_unauthenticated(), &b);
    limits.authenticated(&b);  // an authenticated connection is never evicted
    BOOST_CHECK_EQUAL(limits.oldest_unauthenticated(), &c);
    BOOST_CHECK_EQUAL(limits.unauthenticated(), 2u);
}

BOOST_AUTO_TEST_CASE(a_full_table_of_authenticated_connections_refuses_newcomers)
{
    Limits limits(caps(2, 2, 2));
    Conn a{1}, b{2}, c{3};
    limits.add(&a, "10.0.0.1");
    limits.add(&b, "10.0.0.1");
    BOOST_CHECK(limits.assess("10.0.0.2") == Verdict::admit_after_eviction);
    limits.authenticated(&a);
    limits.authenticated(&b);
    BOOST_CHECK(limits.assess("10.0.0.2") == Verdict::refuse_full);
    BOOST_CHECK(limits.oldest_unauthenticated() == nullptr);
    limits.remove(&a);
    BOOST_CHECK(limits.assess("10.0.0.2") == Verdict::admit);
    limits.add(&c, "10.0.0.2");
    BOOST_CHECK_EQUAL(limits.connections(), 2u);
}

BOOST_AUTO_TEST_CASE(unknown_and_repeated_calls_are_harmless)
{
    Limits limits(caps(10, 10, 10));
    Conn a{1}, stranger{2};
    limits.add(&a, "10.0.0.1");
    limits.add(&a, "10.0.0.1");
    BOOST_CHECK_EQUAL(limits.connections(), 1u);
    BOOST_CHECK_EQUAL(limits.unauthenticated_from("10.0.0.1"), 1u);
    limits.authenticated(&stranger);
    limits.remove(&stranger);
    limits.authenticated(&a);
    limits.authenticated(&a);
    limits.remove(&a);
    limits.remove(&a);
    BOOST_CHECK_EQUAL(limits.connections(), 0u);
    BOOST_CHECK_EQUAL(limits.unauthenticated(), 0u);
}

BOOST_AUTO_TEST_CASE(a_log_throttle_allows_a_burst_per_window)
{
    LogThrottle throttle("test lines", 3, std::chrono::seconds(10));
    const auto t0 = LogThrottle::Clock::now();
    int allowed = 0;
    for (int i = 0; i < 100; ++i) allowed += throttle.allow(t0 + std::chrono::milliseconds(i)) ? 1 : 0;
    BOOST_CHECK_EQUAL(allowed, 3);
    BOOST_CHECK_EQUAL(throttle.suppressed(), 97u);
    throttle.flush(t0 + 5s);  // the window is not over
    BOOST_CHECK_EQUAL(throttle.suppressed(), 97u);
    throttle.flush(t0 + 11s);
    BOOST_CHECK_EQUAL(throttle.suppressed(), 0u);
    BOOST_CHECK(throttle.allow(t0 + 11s));
}
