#include "server/TicketRegistry.h"

#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE TicketRegistry
#include <boost/test/unit_test.hpp>

#include "ServerTestSupport.h"

#include <chrono>
#include <string>

using namespace blobstreaming;
using namespace blobstreaming::server;
using namespace blobstreaming::server::test;
using namespace std::chrono_literals;

namespace {

/// The reason of the refusal of `request`, or "accepted".
std::string refusal(TicketRegistry& registry, const protocol::Request& request)
{
    return message_of([&] { registry.consume(request); }, Errc::refused, "accepted");
}

}  // namespace

BOOST_AUTO_TEST_CASE(matching_request_gets_the_binding_once)
{
    FakeClock clock;
    TicketRegistry registry(30s, clock.fn());
    TicketBinding b = pull_binding("CT.1", 10, 100);
    b.reservation = 7;
    const auto id = registry.issue(b);
    BOOST_CHECK_EQUAL(registry.pending(), 1u);

    const TicketBinding got = registry.consume(request_for(id, protocol::FrameType::pull, 10, 100));
    BOOST_CHECK_EQUAL(got.blob, "CT.1");
    BOOST_CHECK_EQUAL(got.offset, 10u);
    BOOST_CHECK_EQUAL(got.length, 100u);
    BOOST_CHECK_EQUAL(got.reservation, 7u);
    BOOST_CHECK(got.control != nullptr);
    BOOST_CHECK_EQUAL(registry.pending(), 0u);

    BOOST_CHECK_EQUAL(refusal(registry, request_for(id, protocol::FrameType::pull, 10, 100)),
                      "ticket " + protocol::ticket_tag(id) + " was already used");
}

BOOST_AUTO_TEST_CASE(unknown_ticket_is_refused)
{
    TicketRegistry registry(30s);
    registry.issue(pull_binding("CT.1", 0, 1));
    protocol::TicketId other{};
    other[0] = 0xab;
    other[1] = 0xcd;
    BOOST_CHECK_EQUAL(refusal(registry, request_for(other, protocol::FrameType::pull, 0, 1)),
                      "unknown ticket abcd0000");
}

BOOST_AUTO_TEST_CASE(expired_ticket_says_how_long_ago)
{
    FakeClock clock;
    TicketRegistry registry(30s, clock.fn());
    const auto id = registry.issue(pull_binding("CT.1", 0, 5));
    clock.now += 29999ms;
    BOOST_CHECK_EQUAL(registry.pending(), 1u);
    clock.now += 1250ms;  // 1249 ms past the lifetime
    BOOST_CHECK_EQUAL(registry.pending(), 0u);
    BOOST_CHECK_EQUAL(refusal(registry, request_for(id, protocol::FrameType::pull, 0, 5)),
                      "ticket " + protocol::ticket_tag(id) + " expired 1249 ms ago");
}

BOOST_AUTO_TEST_CASE(ticket_just_before_expiry_is_accepted)
{
    FakeClock clock;
    TicketRegistry registry(2s, clock.fn());
    const auto id = registry.issue(pull_binding("CT.1", 0, 5));
    clock.now += 1999ms;
    BOOST_CHECK_EQUAL(refusal(registry, request_for(id, protocol::FrameType::pull, 0, 5)), "accepted");
}

BOOST_AUTO_TEST_CASE(direction_mismatch_is_refused_and_consumes)
{
    TicketRegistry registry(30s);
    const auto id = registry.issue(pull_binding("CT.1", 0, 100));
    BOOST_CHECK_EQUAL(refusal(registry, request_for(id, protocol::FrameType::push, 0, 100)),
                      "ticket " + protocol::ticket_tag(id) +
                          " is bound to a pull of \"CT.1\" [0, 100), not a push of [0, 100)");
    // Consumed even though refused: the right request now fails too.
    BOOST_CHECK_EQUAL(refusal(registry, request_for(id, protocol::FrameType::pull, 0, 100)),
                      "ticket " + protocol::ticket_tag(id) + " was already used");
}

BOOST_AUTO_TEST_CASE(range_mismatch_is_refused)
{
    TicketRegistry registry(30s);
    TicketBinding b = pull_binding("MR.2", 0, 4096);
    b.direction = protocol::FrameType::push;
    const auto id = registry.issue(b);
    BOOST_CHECK_EQUAL(refusal(registry, request_for(id, protocol::FrameType::push, 4096, 1024)),
                      "ticket " + protocol::ticket_tag(id) +
                          " is bound to a push of \"MR.2\" [0, 4096), not a push of [4096, 5120)");
}

BOOST_AUTO_TEST_CASE(overflowing_request_range_is_reported_not_wrapped)
{
    TicketRegistry registry(30s);
    const auto id = registry.issue(pull_binding("CT.1", 0, 10));
    BOOST_CHECK_EQUAL(refusal(registry, request_for(id, protocol::FrameType::pull, 10, ~std::uint64_t{0})),
                      "ticket " + protocol::ticket_tag(id) +
                          " is bound to a pull of \"CT.1\" [0, 10), not a pull of [10, beyond 2^64)");
}

BOOST_AUTO_TEST_CASE(withdrawn_ticket_is_refused)
{
    TicketRegistry registry(30s);
    const auto id = registry.issue(pull_binding("CT.1", 0, 1));
    BOOST_CHECK(registry.withdraw(id));
    BOOST_CHECK(!registry.withdraw(id));
    BOOST_CHECK_EQUAL(refusal(registry, request_for(id, protocol::FrameType::pull, 0, 1)),
                      "ticket " + protocol::ticket_tag(id) + " was withdrawn");
}

BOOST_AUTO_TEST_CASE(old_entries_are_purged)
{
    FakeClock clock;
    TicketRegistry registry(1s, clock.fn());
    const auto used = registry.issue(pull_binding("A", 0, 1));
    registry.consume(request_for(used, protocol::FrameType::pull, 0, 1));
    for (int i = 0; i < 100; ++i) registry.issue(pull_binding("B", 0, 1));
    BOOST_CHECK_EQUAL(registry.remembered(), 101u);
    clock.now += 30s;
    BOOST_CHECK_EQUAL(registry.purge(), 0u);  // still remembered to explain refusals
    clock.now += 40s;
    BOOST_CHECK_EQUAL(registry.purge(), 101u);
    BOOST_CHECK_EQUAL(registry.remembered(), 0u);
    BOOST_CHECK_EQUAL(refusal(registry, request_for(used, protocol::FrameType::pull, 0, 1)),
                      "unknown ticket " + protocol::ticket_tag(used));
}

// Each entry is forgotten exactly when it is due, in any order of issue
// and use: a used ticket a minute after its use, an unused one a minute
// after it expired; an unused ticket lets go of its transfer control at
// expiry.
BOOST_AUTO_TEST_CASE(entries_are_forgotten_when_due)
{
    FakeClock clock;
    TicketRegistry registry(10s, clock.fn());  // remembered for 60 s (the minimum)
    const auto unused = registry.issue(pull_binding("A", 0, 1));
    auto binding = pull_binding("B", 0, 1);
    binding.control = std::make_shared<TransferControl>();
    const std::weak_ptr<TransferControl> control = binding.control;
    const auto expires = registry.issue(binding);
    binding.control.reset();
    clock.now += 5s;
    const auto used_late = registry.issue(pull_binding("C", 0, 1));
    const auto used_early = registry.issue(pull_binding("D", 0, 1));
    registry.consume(request_for(used_early, protocol::FrameType::pull, 0, 1));  // at 5 s
    clock.now += 4s;
    registry.consume(request_for(used_late, protocol::FrameType::pull, 0, 1));  // at 9 s
    BOOST_CHECK(!control.expired());
    clock.now += 1s;  // 10 s: "A" and "B" expire
    BOOST_CHECK_EQUAL(registry.purge(), 0u);
    BOOST_CHECK(control.expired());
    clock.now = clock.now + 55s - 1ms;  // just before 65 s
    BOOST_CHECK_EQUAL(registry.purge(), 0u);
    clock.now += 1ms;  // 65 s: "D", used at 5 s
    BOOST_CHECK_EQUAL(registry.purge(), 1u);
    BOOST_CHECK_EQUAL(refusal(registry, request_for(used_early, protocol::FrameType::pull, 0, 1)),
                      "unknown ticket " + protocol::ticket_tag(used_early));
    clock.now += 4s;  // 69 s: "C", used at 9 s
    BOOST_CHECK_EQUAL(registry.purge(), 1u);
    BOOST_CHECK_EQUAL(registry.remembered(), 2u);
    clock.now += 1s;  // 70 s: "A" and "B", expired at 10 s
    BOOST_CHECK_EQUAL(registry.purge(), 2u);
    BOOST_CHECK_EQUAL(registry.remembered(), 0u);
    BOOST_CHECK_EQUAL(refusal(registry, request_for(unused, protocol::FrameType::pull, 0, 1)),
                      "unknown ticket " + protocol::ticket_tag(unused));
    BOOST_CHECK_EQUAL(refusal(registry, request_for(expires, protocol::FrameType::pull, 0, 1)),
                      "unknown ticket " + protocol::ticket_tag(expires));
}

// A named request's ticket, which no client holds, is gone once consumed:
// a daemon serving named transfers keeps no entry per transfer. Its binding
// is checked and handed over as any ticket's.
BOOST_AUTO_TEST_CASE(a_named_requests_ticket_is_forgotten_once_consumed)
{
    FakeClock clock;
    TicketRegistry registry(30s, clock.fn());
    const auto other = registry.issue(pull_binding("A", 0, 1));
    for (int i = 0; i < 100; ++i) {
        const auto id = registry.issue(pull_binding("CT.1", 0, 10));
        const TicketBinding got = registry.consume_named(request_for(id, protocol::FrameType::pull, 0, 10));
        BOOST_CHECK_EQUAL(got.blob, "CT.1");
        BOOST_CHECK(got.control != nullptr);
    }
    BOOST_CHECK_EQUAL(registry.remembered(), 1u);
    BOOST_CHECK_EQUAL(registry.pending(), 1u);
    const auto id = registry.issue(pull_binding("CT.1", 0, 10));
    BOOST_CHECK_EQUAL(message_of([&] { registry.consume_named(request_for(id, protocol::FrameType::push, 0, 10)); },
                                 Errc::refused, "accepted"),
                      "ticket " + protocol::ticket_tag(id) +
                          " is bound to a pull of \"CT.1\" [0, 10), not a push of [0, 10)");
    clock.now += 31s;
    BOOST_CHECK_EQUAL(refusal(registry, request_for(other, protocol::FrameType::pull, 0, 1)),
                      "ticket " + protocol::ticket_tag(other) + " expired 1000 ms ago");
    BOOST_CHECK_EQUAL(registry.purge(), 0u);
}

BOOST_AUTO_TEST_CASE(tickets_are_distinct)
{
    TicketRegistry registry(30s);
    const auto a = registry.issue(pull_binding("A", 0, 1));
    const auto b = registry.issue(pull_binding("A", 0, 1));
    BOOST_CHECK(a != b);
    BOOST_CHECK_EQUAL(registry.pending(), 2u);
}
