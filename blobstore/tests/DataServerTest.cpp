#include "server/DataServer.h"

#include "server/ReservationTable.h"
#include "server/TicketRegistry.h"

#include <blobstreaming/blobstore/MemoryStore.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Protocol.h>

#define BOOST_TEST_MODULE DataServer
#include <boost/test/unit_test.hpp>

#include "ProtocolPeer.h"
#include "ServerTestSupport.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::server;
using namespace blobstreaming::server::test;
using blobstreaming::test::ProtocolPeer;
using namespace std::chrono_literals;

namespace {

/// A data server on 127.0.0.1:0 over a MemoryStore.
struct Fixture {
    MemoryStore store{MemoryStore::Options{64u << 20, false}};
    TicketRegistry tickets{30s};
    /// Moves the reservation table's clock forward (read on the data-plane thread).
    std::atomic<std::int64_t> skew_ms{0};
    ReservationTable reservations{
        60s, [this] { return std::chrono::steady_clock::now() + std::chrono::milliseconds(skew_ms.load()); }};
    DataServer server{store, tickets, reservations, config()};

    static DataServerConfig config()
    {
        DataServerConfig c;
        c.host = "127.0.0.1";
        c.inactivity_timeout = 500ms;
        return c;
    }
    Fixture() { server.start(); }

    /// A client's data connection; no test waits more than 10 s for anything.
    ProtocolPeer connect() const { return ProtocolPeer::connect("127.0.0.1", server.port(), 10s); }

    protocol::TicketId push_ticket(const std::string& name, std::uint64_t size)
    {
        TicketBinding b;
        b.direction = protocol::FrameType::push;
        b.blob = name;
        b.reservation = reservations.add(store.reserve(name, size));
        b.length = size;
        return tickets.issue(b);
    }
    protocol::TicketId pull_ticket(const std::string& name, std::uint64_t offset, std::uint64_t length)
    {
        return tickets.issue(pull_binding(name, offset, length));
    }
};

std::vector<std::uint8_t> pattern(std::size_t size)
{
    std::vector<std::uint8_t> v(size);
    for (std::size_t i = 0; i < size; ++i) v[i] = static_cast<std::uint8_t>(i * 7 + i / 251);
    return v;
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(push_then_pull_on_one_connection, Fixture)
{
    const auto data = pattern(3u << 20);
    const Checksum checksum = ChecksumState::of(ChecksumAlgorithm::crc32c, data.data(), data.size());
    ProtocolPeer peer = connect();

    peer.send_request(protocol::FrameType::push, push_ticket("CT.1", data.size()), 0, data.size());
    peer.send(data.data(), data.size());
    peer.send_trailer(checksum);
    protocol::Response ack = peer.receive_response();
    BOOST_CHECK(ack.status == Errc::ok);
    BOOST_CHECK_EQUAL(ack.length, data.size());
    BOOST_CHECK_EQUAL(ack.blob_size, data.size());
    BOOST_CHECK(ack.checksum == checksum);
    BOOST_CHECK(store.contains("CT.1"));  // visible when acknowledged

    peer.send_request(protocol::FrameType::pull, pull_ticket("CT.1", 1000, 5000), 1000, 5000);
    protocol::Response head = peer.receive_response();
    BOOST_CHECK(head.status == Errc::ok);
    BOOST_CHECK_EQUAL(head.length, 5000u);
    BOOST_CHECK_EQUAL(head.blob_size, data.size());
    BOOST_CHECK(head.checksum == checksum);
    std::vector<std::uint8_t> part(5000);
    peer.receive(part.data(), part.size());
    BOOST_CHECK(std::equal(part.begin(), part.end(), data.begin() + 1000));
    // The pull ends on the server just after its last byte left: wait, bounded.
    for (int i = 0; i < 200 && server.active_transfers() != 0; ++i) std::this_thread::sleep_for(5ms);
    BOOST_CHECK_EQUAL(server.active_transfers(), 0u);
}

BOOST_FIXTURE_TEST_CASE(garbage_gets_protocol_error_and_close, Fixture)
{
    ProtocolPeer peer = connect();
    const std::string junk(protocol::kRequestSize, 'x');
    peer.send(junk.data(), junk.size());
    protocol::Response r = peer.receive_response();
    BOOST_CHECK(r.status == Errc::protocol_error);
    BOOST_CHECK_EQUAL(r.message, "not a Blob Streaming data connection (bad magic)");
    BOOST_CHECK(peer.closed_by_peer());

    // The server keeps serving.
    auto reservation = store.reserve("A", 3);
    BOOST_REQUIRE(!reservation->write("abc", 3));
    reservation->commit();
    ProtocolPeer other = connect();
    other.send_request(protocol::FrameType::pull, pull_ticket("A", 0, 3), 0, 3);
    BOOST_CHECK(other.receive_response().status == Errc::ok);
    char bytes[3] = {};
    other.receive(bytes, 3);
    BOOST_CHECK_EQUAL(std::string(bytes, 3), "abc");
}

BOOST_FIXTURE_TEST_CASE(unknown_ticket_is_refused_even_with_a_push_body, Fixture)
{
    ProtocolPeer peer = connect();
    protocol::TicketId bogus{};
    bogus[0] = 0x12;
    bogus[1] = 0x34;
    bogus[2] = 0x56;
    bogus[3] = 0x78;
    peer.send_request(protocol::FrameType::push, bogus, 0, 1u << 20);
    const auto body = pattern(1u << 20);
    peer.send(body.data(), body.size());  // the refusal must survive the unread body
    protocol::Response r = peer.receive_response();
    BOOST_CHECK(r.status == Errc::refused);
    BOOST_CHECK_EQUAL(r.message, "unknown ticket 12345678");
}

BOOST_FIXTURE_TEST_CASE(digest_mismatch_stores_nothing, Fixture)
{
    const auto data = pattern(100000);
    Checksum wrong = ChecksumState::of(ChecksumAlgorithm::crc32c, data.data(), data.size());
    wrong.value[2] ^= 0xff;
    ProtocolPeer peer = connect();
    peer.send_request(protocol::FrameType::push, push_ticket("CT.2", data.size()), 0, data.size());
    peer.send(data.data(), data.size());
    peer.send_trailer(wrong);
    protocol::Response r = peer.receive_response();
    BOOST_CHECK(r.status == Errc::digest_mismatch);
    BOOST_CHECK(r.message.find("nothing was stored") != std::string::npos);
    BOOST_CHECK(!store.contains("CT.2"));
    BOOST_CHECK_EQUAL(store.usage().reserved, 0u);
}

BOOST_FIXTURE_TEST_CASE(stalled_push_times_out_and_leaves_nothing, Fixture)
{
    const auto data = pattern(200000);
    ProtocolPeer peer = connect();
    peer.send_request(protocol::FrameType::push, push_ticket("CT.3", data.size()), 0, data.size());
    peer.send(data.data(), data.size() / 2);
    protocol::Response r = peer.receive_response();  // after the 500 ms inactivity timeout
    BOOST_CHECK(r.status == Errc::timeout);
    BOOST_CHECK(r.message.find("no progress for") != std::string::npos);
    BOOST_CHECK(peer.closed_by_peer());
    BOOST_CHECK(!store.contains("CT.3"));
    // The reservation waits, with the half received, to be resumed ...
    BOOST_CHECK_EQUAL(reservations.resumable("CT.3").received, data.size() / 2);
    BOOST_CHECK_EQUAL(store.usage().reserved, data.size());
    // ... for the grace period; then its space comes back.
    skew_ms += 61000;
    BOOST_CHECK_EQUAL(reservations.purge(), 1u);
    BOOST_CHECK_EQUAL(store.usage().reserved, 0u);
    BOOST_CHECK(!store.contains("CT.3"));
}

BOOST_FIXTURE_TEST_CASE(a_client_cannot_lengthen_the_inactivity_timeout, Fixture)
{
    const auto data = pattern(200000);
    TicketBinding b;
    b.direction = protocol::FrameType::push;
    b.blob = "CT.slow";
    b.reservation = reservations.add(store.reserve(b.blob, data.size()));
    b.length = data.size();
    b.inactivity_timeout = std::chrono::hours(24 * 365);  // what a hostile client asks for
    ProtocolPeer peer = connect();
    const auto t0 = std::chrono::steady_clock::now();
    peer.send_request(protocol::FrameType::push, tickets.issue(b), 0, data.size());
    peer.send(data.data(), 1000);
    protocol::Response r = peer.receive_response();  // after the server's 500 ms, not a year
    BOOST_CHECK(r.status == Errc::timeout);
    BOOST_CHECK(std::chrono::steady_clock::now() - t0 < 9s);
    BOOST_CHECK(!store.contains("CT.slow"));
    BOOST_CHECK_EQUAL(reservations.resumable("CT.slow").received, 1000u);
}

BOOST_FIXTURE_TEST_CASE(push_cut_by_the_client_is_parked_until_superseded, Fixture)
{
    const auto data = pattern(200000);
    {
        ProtocolPeer peer = connect();
        peer.send_request(protocol::FrameType::push, push_ticket("CT.4", data.size()), 0, data.size());
        peer.send(data.data(), 1000);
    }
    // Wait, bounded, for the server to notice the EOF and park the reservation.
    auto parked = [this] {
        try {
            return reservations.resumable("CT.4").received == 1000;
        } catch (const Error&) {
            return false;
        }
    };
    for (int i = 0; i < 500 && !parked(); ++i) std::this_thread::sleep_for(10ms);
    BOOST_CHECK(parked());
    BOOST_CHECK(!store.contains("CT.4"));
    // A new push of the same name supersedes the broken one.
    BOOST_CHECK(reservations.abort_parked("CT.4"));
    BOOST_CHECK_EQUAL(store.usage().reserved, 0u);
    BOOST_CHECK(!store.contains("CT.4"));
}

BOOST_FIXTURE_TEST_CASE(stop_aborts_a_push_in_flight, Fixture)
{
    const auto data = pattern(200000);
    ProtocolPeer peer = connect();
    peer.send_request(protocol::FrameType::push, push_ticket("CT.5", data.size()), 0, data.size());
    peer.send(data.data(), 1000);
    for (int i = 0; i < 200 && server.active_transfers() == 0; ++i) std::this_thread::sleep_for(10ms);
    BOOST_REQUIRE_EQUAL(server.active_transfers(), 1u);
    server.stop();
    BOOST_CHECK_EQUAL(server.active_transfers(), 0u);
    BOOST_CHECK_EQUAL(store.usage().reserved, 0u);
    BOOST_CHECK(!store.contains("CT.5"));
}
