#pragma once
/// Helpers shared by the unit tests of blobstore/src/server: a clock the test
/// moves by hand, a wait for a condition with a deadline, the message of an
/// expected refusal, and the Requests and pull bindings the ticket tests
/// present.

#include "Eventually.h"
#include "server/TicketRegistry.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Protocol.h>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

namespace blobstreaming::server::test {

/// A clock the test moves by hand.
struct FakeClock {
    std::chrono::steady_clock::time_point now{std::chrono::hours(1000)};
    std::function<std::chrono::steady_clock::time_point()> fn()
    {
        return [this] { return now; };
    }
};

/// The code of the Error `f` throws; Errc::ok when it throws nothing.
inline Errc code_of(const std::function<void()>& f)
{
    try {
        f();
    } catch (const Error& e) {
        return e.code();
    }
    return Errc::ok;
}

/// The message of the Error `f` throws, checked to be of code `expected`;
/// `otherwise` when it throws nothing.
template <class F>
std::string message_of(F f, Errc expected, const std::string& otherwise)
{
    try {
        f();
    } catch (const Error& e) {
        BOOST_CHECK(e.code() == expected);
        return e.what();
    }
    return otherwise;
}

inline protocol::Request request_for(const protocol::TicketId& id, protocol::FrameType type, std::uint64_t offset,
                                     std::uint64_t length)
{
    return protocol::Request{type, id, offset, length};
}

inline TicketBinding pull_binding(std::string blob, std::uint64_t offset, std::uint64_t length)
{
    TicketBinding b;
    b.direction = protocol::FrameType::pull;
    b.blob = std::move(blob);
    b.offset = offset;
    b.length = length;
    return b;
}

using blobstreaming::test::eventually;

}  // namespace blobstreaming::server::test
