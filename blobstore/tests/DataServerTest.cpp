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
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

using namespace blobstreaming;
using namespace blobstreaming::server;
using namespace blobstreaming::server::test;
using blobstreaming::test::ProtocolPeer;
using namespace std::chrono_literals;

namespace {

/// Where GatedReservations (below) wait until the test opens it.
struct Gate {
    std::mutex mutex;
    std::condition_variable changed;
    bool open = false;
    int entered = 0;  ///< reservations that reached the gate
    int committed = 0;

    /// Waits (at most 10 s) until `n` reservations reached the gate.
    bool wait_entered(int n)
    {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, 10s, [&] { return entered >= n; });
    }
    void let_through()
    {
        std::lock_guard lock(mutex);
        open = true;
        changed.notify_all();
    }
};

/// Where a GatedReservation waits for the gate, as a store that waits for
/// a disk or another host does.
enum class Waits {
    commit,   ///< its commit (a FileStore's fsync)
    window,   ///< window() from byte `at` on (a RadosStore with both buffers in flight: window_waits())
    suspend,  ///< suspend() once it holds bytes (a RadosStore's writes in flight: ending_waits())
};

/// A reservation in memory that waits at the gate where `waits` says.
class GatedReservation final : public Reservation {
public:
    GatedReservation(std::string name, std::uint64_t size, std::shared_ptr<Gate> gate, Waits waits,
                     std::uint64_t at = 0)
        : Reservation(std::move(name), size, ChecksumAlgorithm::crc32c), bytes_(size), gate_(std::move(gate)),
          waits_(waits), at_(at)
    {}
    ~GatedReservation() override { abort(); }

private:
    Window do_window(std::uint64_t offset, std::size_t max, std::error_code&) override
    {
        if (waits_ == Waits::window && offset >= at_) pass();
        const std::uint64_t end = waits_ == Waits::window && offset < at_ ? at_ : size();
        return {bytes_.data() + offset, static_cast<std::size_t>(std::min<std::uint64_t>(max, end - offset))};
    }
    bool do_window_waits() const noexcept override
    {
        if (waits_ != Waits::window) return false;
        std::lock_guard lock(gate_->mutex);
        return written() >= at_ && !gate_->open;
    }
    void do_wait_window() noexcept override { pass(); }
    bool do_ending_waits() const noexcept override { return waits_ == Waits::suspend; }
    void do_suspend() noexcept override
    {
        if (waits_ == Waits::suspend && written() > 0) pass();  // not when added: it holds nothing yet
    }
    bool commit_syncs() const noexcept override { return waits_ == Waits::commit; }
    BlobInfo do_commit(const Checksum& checksum) override
    {
        if (waits_ == Waits::commit) {
            pass();
            std::lock_guard lock(gate_->mutex);
            ++gate_->committed;
        }
        return BlobInfo{name(), size(), checksum, std::chrono::system_clock::now()};
    }
    void do_abort() noexcept override {}

    /// Counts in `entered` (once per reservation) and waits until the gate opens.
    void pass()
    {
        std::unique_lock lock(gate_->mutex);
        if (!counted_) {
            counted_ = true;
            ++gate_->entered;
            gate_->changed.notify_all();
        }
        gate_->changed.wait(lock, [this] { return gate_->open; });
    }

    std::vector<std::uint8_t> bytes_;
    std::shared_ptr<Gate> gate_;
    Waits waits_;
    std::uint64_t at_;
    bool counted_ = false;
};

/// Waits (at most 2 s) until `server` has `n` active transfers.
bool transfers_reach(const DataServer& server, std::uint32_t n)
{
    for (int i = 0; i < 400 && server.active_transfers() != n; ++i) std::this_thread::sleep_for(5ms);
    return server.active_transfers() == n;
}

/// A data server on 127.0.0.1:0 over a MemoryStore.
struct Fixture {
    MemoryStore store{MemoryStore::Options{64u << 20}};
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
    /// A push ticket for a GatedReservation behind `gate`, waiting where
    /// `waits` says (from byte `at` on for Waits::window).
    protocol::TicketId gated_push_ticket(const std::string& name, std::uint64_t size, std::shared_ptr<Gate> gate,
                                         Waits waits = Waits::commit, std::uint64_t at = 0)
    {
        TicketBinding b;
        b.direction = protocol::FrameType::push;
        b.blob = name;
        b.reservation = reservations.add(std::make_unique<GatedReservation>(name, size, std::move(gate), waits, at));
        b.length = size;
        return tickets.issue(b);
    }
    /// `peer`'s push is answered ok with `checksum` and `size`, and nothing
    /// is left open.
    void expect_committed(ProtocolPeer& peer, const Checksum& checksum, std::uint64_t size)
    {
        const protocol::Response ack = peer.receive_response();
        BOOST_CHECK(ack.status == Errc::ok);
        BOOST_CHECK(ack.checksum == checksum);
        BOOST_CHECK_EQUAL(ack.blob_size, size);
        BOOST_CHECK(idle());
        BOOST_CHECK_EQUAL(reservations.open(), 0u);
    }
    /// Pushes `data` as `name` over `peer`, then pulls it back: both answered
    /// ok, the bytes pulled as pushed.
    void push_and_pull_back(ProtocolPeer& peer, const std::string& name, const std::vector<std::uint8_t>& data)
    {
        const Checksum checksum = ChecksumState::of(ChecksumAlgorithm::crc32c, data.data(), data.size());
        peer.send_request(protocol::FrameType::push, push_ticket(name, data.size()), 0, data.size());
        peer.send(data.data(), data.size());
        peer.send_trailer(checksum);
        BOOST_CHECK(peer.receive_response().status == Errc::ok);
        ChecksumState pulled(ChecksumAlgorithm::crc32c);
        BOOST_CHECK(peer.pull(pull_ticket(name, 0, data.size()), 0, data.size(), &pulled).status == Errc::ok);
        BOOST_CHECK(pulled.finish() == checksum);
    }
    /// Waits (at most 2 s) until `n` transfers are active: a pull ends on
    /// the server just after its last byte left.
    bool active(std::uint32_t n) const { return transfers_reach(server, n); }
    bool idle() const { return active(0); }
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

// A commit that waits for the disk runs off the reactor thread: while one
// push's commit is held at the gate, another connection's push and pull
// are served; the held push is answered once its commit ends.
BOOST_FIXTURE_TEST_CASE(a_commit_that_waits_does_not_stall_other_connections, Fixture)
{
    auto gate = std::make_shared<Gate>();
    const auto held = pattern(1u << 20);
    const Checksum held_checksum = ChecksumState::of(ChecksumAlgorithm::crc32c, held.data(), held.size());
    ProtocolPeer slow = connect();
    slow.send_request(protocol::FrameType::push, gated_push_ticket("CT.slow", held.size(), gate), 0, held.size());
    slow.send(held.data(), held.size());
    slow.send_trailer(held_checksum);
    BOOST_REQUIRE(gate->wait_entered(1));

    const auto data = pattern(2u << 20);
    const Checksum checksum = ChecksumState::of(ChecksumAlgorithm::crc32c, data.data(), data.size());
    ProtocolPeer other = connect();
    push_and_pull_back(other, "CT.fast", data);
    BOOST_CHECK(active(1));  // the held push only

    gate->let_through();
    expect_committed(slow, held_checksum, held.size());
    // The connection serves its next transfer after the commit.
    ChecksumState again(ChecksumAlgorithm::crc32c);
    BOOST_CHECK(slow.pull(pull_ticket("CT.fast", 0, data.size()), 0, data.size(), &again).status == Errc::ok);
    BOOST_CHECK(again.finish() == checksum);
}

// Pushes committing at once each get their own answer, whatever order
// their commits end in.
BOOST_FIXTURE_TEST_CASE(concurrent_commits_each_answer_their_connection, Fixture)
{
    auto gate = std::make_shared<Gate>();
    constexpr int kPushes = 6;
    std::vector<ProtocolPeer> peers;
    std::vector<Checksum> sums;
    for (int i = 0; i < kPushes; ++i) {
        const auto data = pattern(100000 + 4096 * static_cast<std::size_t>(i));
        sums.push_back(ChecksumState::of(ChecksumAlgorithm::crc32c, data.data(), data.size()));
        peers.push_back(connect());
        peers.back().send_request(protocol::FrameType::push,
                                  gated_push_ticket("CT.c" + std::to_string(i), data.size(), gate), 0, data.size());
        peers.back().send(data.data(), data.size());
        peers.back().send_trailer(sums.back());
    }
    // As many wait at once as the pool has threads; the rest queue.
    BOOST_REQUIRE(gate->wait_entered(std::min<int>(kPushes, 4)));
    gate->let_through();
    for (int i = 0; i < kPushes; ++i) {
        const protocol::Response ack = peers[static_cast<std::size_t>(i)].receive_response();
        BOOST_CHECK(ack.status == Errc::ok);
        BOOST_CHECK(ack.checksum == sums[static_cast<std::size_t>(i)]);
    }
    BOOST_CHECK_EQUAL(gate->committed, kPushes);
    BOOST_CHECK(idle());
}

// The client goes away while its push commits: the commit's outcome
// stands, the connection's object lives until it ends, the server serves on.
BOOST_FIXTURE_TEST_CASE(a_connection_closed_during_its_commit, Fixture)
{
    auto gate = std::make_shared<Gate>();
    const auto data = pattern(300000);
    {
        ProtocolPeer gone = connect();
        gone.send_request(protocol::FrameType::push, gated_push_ticket("CT.gone", data.size(), gate), 0, data.size());
        gone.send(data.data(), data.size());
        gone.send_trailer(ChecksumState::of(ChecksumAlgorithm::crc32c, data.data(), data.size()));
        BOOST_REQUIRE(gate->wait_entered(1));
        const linger reset{1, 0};  // close with a reset
        ::setsockopt(gone.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
    // The reset is in before the commit ends (the server's socket is
    // unwatched meanwhile, so it finds out when it answers); whichever
    // comes first, the outcome below is the same.
    std::this_thread::sleep_for(50ms);
    gate->let_through();
    BOOST_CHECK(idle());
    BOOST_CHECK_EQUAL(gate->committed, 1);
    BOOST_CHECK_EQUAL(reservations.open(), 0u);
    ProtocolPeer next = connect();
    next.send_request(protocol::FrameType::push, push_ticket("CT.next", data.size()), 0, data.size());
    next.send(data.data(), data.size());
    next.send_trailer(ChecksumState::of(ChecksumAlgorithm::crc32c, data.data(), data.size()));
    BOOST_CHECK(next.receive_response().status == Errc::ok);
}

// stop() lets a commit in flight finish and answers it before closing.
BOOST_FIXTURE_TEST_CASE(stop_answers_a_commit_in_flight, Fixture)
{
    auto gate = std::make_shared<Gate>();
    const auto data = pattern(200000);
    const Checksum checksum = ChecksumState::of(ChecksumAlgorithm::crc32c, data.data(), data.size());
    ProtocolPeer peer = connect();
    peer.send_request(protocol::FrameType::push, gated_push_ticket("CT.stop", data.size(), gate), 0, data.size());
    peer.send(data.data(), data.size());
    peer.send_trailer(checksum);
    BOOST_REQUIRE(gate->wait_entered(1));
    // Opened while stop() waits for the commit (or before: the same outcome).
    std::thread opener([gate] {
        std::this_thread::sleep_for(50ms);
        gate->let_through();
    });
    server.stop();
    opener.join();
    BOOST_CHECK_EQUAL(gate->committed, 1);
    const protocol::Response ack = peer.receive_response();
    BOOST_CHECK(ack.status == Errc::ok);
    BOOST_CHECK(ack.checksum == checksum);
    BOOST_CHECK_EQUAL(server.active_transfers(), 0u);
    BOOST_CHECK_EQUAL(reservations.open(), 0u);
}

// A push whose store waits for its own writes (a RadosStore with both
// buffers in flight) waits off the reactor: other connections are served
// meanwhile, and the push goes on once the store is ready.
BOOST_FIXTURE_TEST_CASE(a_push_waiting_for_the_stores_writes_does_not_stall_other_connections, Fixture)
{
    auto gate = std::make_shared<Gate>();
    const auto held = pattern(1u << 20);
    const Checksum held_checksum = ChecksumState::of(ChecksumAlgorithm::crc32c, held.data(), held.size());
    ProtocolPeer slow = connect();
    slow.send_request(protocol::FrameType::push,
                      gated_push_ticket("CT.w", held.size(), gate, Waits::window, 256u << 10), 0, held.size());
    std::thread sender([&] {
        slow.send(held.data(), held.size());
        slow.send_trailer(held_checksum);
    });
    BOOST_REQUIRE(gate->wait_entered(1));

    ProtocolPeer other = connect();
    push_and_pull_back(other, "CT.other", pattern(2u << 20));
    BOOST_CHECK(active(1));  // the waiting push only

    gate->let_through();
    sender.join();
    expect_committed(slow, held_checksum, held.size());
}

// The client goes away while its push waits for the store's writes: the
// transfer ends as a break (the reservation kept for a resume), and the
// server serves on.
BOOST_FIXTURE_TEST_CASE(a_connection_closed_while_its_push_waits_for_the_store, Fixture)
{
    auto gate = std::make_shared<Gate>();
    const auto data = pattern(1u << 20);
    {
        ProtocolPeer gone = connect();
        gone.send_request(protocol::FrameType::push,
                          gated_push_ticket("CT.wg", data.size(), gate, Waits::window, 128u << 10), 0, data.size());
        gone.send(data.data(), 512u << 10);
        BOOST_REQUIRE(gate->wait_entered(1));
        const linger reset{1, 0};
        ::setsockopt(gone.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
    BOOST_CHECK(active(1));  // ended only once the store is ready
    gate->let_through();
    BOOST_CHECK(idle());
    BOOST_CHECK_EQUAL(reservations.open(), 1u);  // parked for a resume
    ProtocolPeer next = connect();
    next.send_request(protocol::FrameType::push, push_ticket("CT.next", data.size()), 0, data.size());
    next.send(data.data(), data.size());
    next.send_trailer(ChecksumState::of(ChecksumAlgorithm::crc32c, data.data(), data.size()));
    BOOST_CHECK(next.receive_response().status == Errc::ok);
}

// A broken push whose reservation waits to be suspended (a RadosStore's
// writes in flight) is parked from the CommitPool: the reactor serves the
// other connections meanwhile.
BOOST_FIXTURE_TEST_CASE(a_reservation_whose_suspend_waits_is_parked_off_the_reactor, Fixture)
{
    auto gate = std::make_shared<Gate>();
    const auto data = pattern(1u << 20);
    {
        ProtocolPeer gone = connect();
        gone.send_request(protocol::FrameType::push, gated_push_ticket("CT.sg", data.size(), gate, Waits::suspend), 0,
                          data.size());
        gone.send(data.data(), 256u << 10);
        BOOST_REQUIRE(active(1));
        const linger reset{1, 0};
        ::setsockopt(gone.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
    BOOST_REQUIRE(gate->wait_entered(1));
    ProtocolPeer other = connect();
    push_and_pull_back(other, "CT.other", pattern(2u << 20));
    gate->let_through();
    BOOST_CHECK(idle());
    // Parked for a resume once the suspend is through (a new push of the
    // name would supersede it: abort_parked() finds it).
    bool parked = false;
    for (int i = 0; i < 400 && !parked; ++i) {
        parked = reservations.abort_parked("CT.sg");
        if (!parked) std::this_thread::sleep_for(5ms);
    }
    BOOST_CHECK(parked);
    BOOST_CHECK_EQUAL(reservations.open(), 0u);
}

namespace {

bool same_address(const sockaddr_storage& a, socklen_t alen, const sockaddr_storage& b, socklen_t blen)
{
    return alen == blen && std::memcmp(&a, &b, alen) == 0;
}

/// This process's end of the connection whose other end is `client` (the
/// data server runs in the test process): the descriptor the server
/// accepted, -1 while it has not.
int accepted_end_of(int client)
{
    sockaddr_storage local{}, remote{};
    socklen_t local_len = sizeof local, remote_len = sizeof remote;
    ::getsockname(client, reinterpret_cast<sockaddr*>(&local), &local_len);
    ::getpeername(client, reinterpret_cast<sockaddr*>(&remote), &remote_len);
    DIR* dir = ::opendir("/proc/self/fd");
    if (!dir) return -1;
    int found = -1;
    while (const dirent* e = ::readdir(dir)) {
        const int fd = std::atoi(e->d_name);
        if (fd <= 2 || fd == client || fd == ::dirfd(dir)) continue;
        sockaddr_storage mine{}, peer{};
        socklen_t mine_len = sizeof mine, peer_len = sizeof peer;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &mine_len) != 0 ||
            ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0)
            continue;
        if (same_address(mine, mine_len, remote, remote_len) && same_address(peer, peer_len, local, local_len)) {
            found = fd;
            break;
        }
    }
    ::closedir(dir);
    return found;
}

}  // namespace

// The receive window a connection may offer is bounded at its handshake by
// the listener's receive buffer (tcp(7): set it before listen). A buffer set
// on the accepted socket alone left pushes with a 64 KiB window.
BOOST_AUTO_TEST_CASE(socket_buffers_bound_the_window_from_the_handshake)
{
    constexpr int kBuffer = 256 * 1024;
    MemoryStore store{MemoryStore::Options{1u << 20}};
    TicketRegistry tickets{30s};
    ReservationTable reservations{60s};
    DataServerConfig config = Fixture::config();
    config.socket.send_buffer = kBuffer;
    config.socket.receive_buffer = kBuffer;
    DataServer server{store, tickets, reservations, config};
    server.start();
    ProtocolPeer peer = ProtocolPeer::connect("127.0.0.1", server.port(), 10s);

    int accepted = -1;
    for (int i = 0; i < 1000 && accepted < 0; ++i) {  // accepted on the reactor thread: at most 5 s
        accepted = accepted_end_of(peer.fd());
        if (accepted < 0) std::this_thread::sleep_for(5ms);
    }
    BOOST_REQUIRE_MESSAGE(accepted >= 0, "the server never accepted the connection");
    int clamp = 0;
    socklen_t len = sizeof clamp;
    BOOST_REQUIRE_EQUAL(::getsockopt(accepted, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, &len), 0);
    // Linux doubles the request and keeps part of it for its own use: the
    // window may reach well past 64 KiB, not the whole buffer.
    BOOST_CHECK_MESSAGE(clamp > kBuffer / 2,
                        "window clamp " << clamp << " for a " << kBuffer << "-byte receive buffer");
    server.stop();
}

namespace {

/// A MemoryStore whose reads wait, as an object store's index lookup does
/// on the network (Store::read_waits()), until the test opens the gate:
/// only for Blobs whose name starts with "slow.".
class WaitingStore final : public Store {
public:
    explicit WaitingStore(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}
    MemoryStore inner{MemoryStore::Options{16u << 20}};

    std::string_view kind() const noexcept override { return "memory"; }
    BlobInfo stat(std::string_view name) const override { return inner.stat(name); }
    std::vector<BlobInfo> list() const override { return inner.list(); }
    BlobRange read(std::string_view name, std::uint64_t start, std::uint64_t end) const override
    {
        if (name.substr(0, 5) == "slow.") {
            std::unique_lock lock(gate_->mutex);
            ++gate_->entered;
            gate_->changed.notify_all();
            gate_->changed.wait(lock, [this] { return gate_->open; });
        }
        return inner.read(name, start, end);
    }
    std::unique_ptr<Reservation> reserve(std::string_view name, std::uint64_t size, ReserveMode mode,
                                         ChecksumAlgorithm checksum) override
    {
        return inner.reserve(name, size, mode, checksum);
    }
    BlobInfo remove(std::string_view name) override { return inner.remove(name); }
    StoreUsage usage() const override { return inner.usage(); }
    bool read_waits() const noexcept override { return true; }

private:
    std::shared_ptr<Gate> gate_;
};

void put(Store& store, const std::string& name, const std::string& bytes)
{
    auto reservation = store.reserve(name, bytes.size());
    BOOST_REQUIRE(!reservation->write(bytes.data(), bytes.size()));
    reservation->commit();
}

struct WaitingFixture {
    std::shared_ptr<Gate> gate = std::make_shared<Gate>();
    WaitingStore store{gate};
    TicketRegistry tickets{30s};
    ReservationTable reservations{60s};
    DataServer server{store, tickets, reservations, Fixture::config()};
    WaitingFixture() { server.start(); }
    ~WaitingFixture() { gate->let_through(); }
    ProtocolPeer connect() const { return ProtocolPeer::connect("127.0.0.1", server.port(), 10s); }
    void pull(ProtocolPeer& peer, const std::string& name, std::uint64_t length)
    {
        peer.send_request(protocol::FrameType::pull, tickets.issue(pull_binding(name, 0, length)), 0, length);
    }
};

}  // namespace

// A store that waits on the network to open a Blob (RADOS: the index) holds
// that pull only: the reactor answers every other connection meanwhile.
BOOST_FIXTURE_TEST_CASE(a_pull_whose_store_waits_to_open_does_not_stall_the_reactor, WaitingFixture)
{
    put(store, "slow.1", "slow bytes");
    put(store, "fast.1", "fast");
    ProtocolPeer waiting = connect();
    pull(waiting, "slow.1", 10);
    BOOST_REQUIRE(gate->wait_entered(1));

    ProtocolPeer other = connect();
    pull(other, "fast.1", 4);
    BOOST_CHECK(other.receive_response().status == Errc::ok);
    char fast[4] = {};
    other.receive(fast, sizeof fast);
    BOOST_CHECK_EQUAL(std::string(fast, sizeof fast), "fast");
    ProtocolPeer garbage = connect();
    const std::string junk(protocol::kRequestSize, 'x');
    garbage.send(junk.data(), junk.size());
    BOOST_CHECK(garbage.receive_response().status == Errc::protocol_error);
    {
        std::lock_guard lock(gate->mutex);
        BOOST_CHECK_MESSAGE(!gate->open, "answered only once the open ended");
    }

    gate->let_through();
    const protocol::Response head = waiting.receive_response();
    BOOST_CHECK(head.status == Errc::ok);
    BOOST_CHECK_EQUAL(head.length, 10u);
    char slow[10] = {};
    waiting.receive(slow, sizeof slow);
    BOOST_CHECK_EQUAL(std::string(slow, sizeof slow), "slow bytes");
    // The same connection serves its next pull.
    pull(waiting, "fast.1", 4);
    BOOST_CHECK(waiting.receive_response().status == Errc::ok);
}

// Errors found off the reactor reach the client as a refusal; a connection
// closed while its Blob is being opened ends its transfer, nothing leaks.
BOOST_FIXTURE_TEST_CASE(an_open_off_the_reactor_refuses_or_ends_cleanly, WaitingFixture)
{
    gate->let_through();
    ProtocolPeer peer = connect();
    pull(peer, "slow.missing", 3);
    const protocol::Response refused = peer.receive_response();
    BOOST_CHECK(refused.status == Errc::blob_changed || refused.status == Errc::no_such_blob);

    {
        std::lock_guard lock(gate->mutex);
        gate->open = false;
    }
    put(store, "slow.2", "abc");
    const int before = gate->entered;
    {
        ProtocolPeer gone = connect();
        pull(gone, "slow.2", 3);
        BOOST_REQUIRE(gate->wait_entered(before + 1));
    }  // closed while the store opens the Blob
    BOOST_CHECK_EQUAL(server.active_transfers(), 1u);
    gate->let_through();
    BOOST_CHECK(transfers_reach(server, 0));
    ProtocolPeer next = connect();
    pull(next, "slow.2", 3);
    BOOST_CHECK(next.receive_response().status == Errc::ok);
}

namespace {

/// Where GatedReaders (below) hold their read-ahead until the test opens it.
struct AheadGate {
    std::mutex mutex;
    std::condition_variable changed;
    bool open = false;
    int started = 0;     ///< read-aheads on their way
    int letting_go = 0;  ///< readers whose destruction began (waiting for their read)
    int let_go = 0;      ///< readers destroyed
    /// The last waker a reader kept (a read that will complete later), and
    /// how many were kept.
    std::function<void()> waker;
    int wakers = 0;

    /// Waits (at most 10 s) until `count` reaches `n`.
    bool wait_for(const int& count, int n)
    {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, 10s, [&] { return count >= n; });
    }
    void let_through()
    {
        std::lock_guard lock(mutex);
        open = true;
        changed.notify_all();
    }
};

/// A streamed reader shaped like a RadosStore's: the bytes before `ahead`
/// come at once, and handing them out starts the read of the rest, which
/// stays on its way until the gate opens. Destroying the reader meanwhile
/// waits for that read (librados writes into the buffer until it completes).
class GatedReader final : public BlobReader {
public:
    GatedReader(BlobRange bytes, std::shared_ptr<AheadGate> gate, std::uint64_t ahead)
        : bytes_(std::move(bytes)), gate_(std::move(gate)), ahead_(ahead)
    {}
    ~GatedReader() override
    {
        if (!in_flight_) return;
        std::unique_lock lock(gate_->mutex);
        ++gate_->letting_go;
        gate_->changed.notify_all();
        gate_->changed.wait(lock, [this] { return gate_->open; });
        ++gate_->let_go;
        gate_->changed.notify_all();
    }

    std::size_t read(std::uint64_t offset, std::uint8_t* out, std::size_t max, std::error_code& ec) override
    {
        bool pending = false;
        return read_or_wait(offset, out, max, ec, pending, nullptr);
    }
    std::size_t read_or_wait(std::uint64_t offset, std::uint8_t* out, std::size_t max, std::error_code& ec,
                             bool& pending, const std::function<void()>& wake) override
    {
        ec.clear();
        pending = false;
        std::uint64_t end = bytes_.end();
        if (offset >= ahead_) {
            std::unique_lock lock(gate_->mutex);
            if (!gate_->open && wake) {
                pending = true;  // woken by the test, if at all
                gate_->waker = wake;
                ++gate_->wakers;
                gate_->changed.notify_all();
                return 0;
            }
            gate_->changed.wait(lock, [this] { return gate_->open; });
        } else {
            end = ahead_;
            if (!in_flight_) {
                in_flight_ = true;
                std::lock_guard lock(gate_->mutex);
                ++gate_->started;
                gate_->changed.notify_all();
            }
        }
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(max, end - offset));
        std::memcpy(out, bytes_.data() + (offset - bytes_.start()), n);
        return n;
    }
    bool close_waits() const noexcept override
    {
        std::lock_guard lock(gate_->mutex);
        return in_flight_ && !gate_->open;
    }
    const std::string& error_message() const noexcept override { return message_; }

private:
    BlobRange bytes_;  ///< in memory
    std::shared_ptr<AheadGate> gate_;
    std::uint64_t ahead_;
    bool in_flight_ = false;
    std::string message_;
};

/// A MemoryStore whose Blobs named "ahead.*" are read through GatedReaders
/// that read ahead from 1 MiB on, and "waits.*" through GatedReaders that
/// keep a waker for their first byte.
class ReadAheadStore final : public Store {
public:
    explicit ReadAheadStore(std::shared_ptr<AheadGate> gate) : gate_(std::move(gate)) {}
    MemoryStore inner{MemoryStore::Options{32u << 20}};

    std::string_view kind() const noexcept override { return "memory"; }
    BlobInfo stat(std::string_view name) const override { return inner.stat(name); }
    std::vector<BlobInfo> list() const override { return inner.list(); }
    BlobRange read(std::string_view name, std::uint64_t start, std::uint64_t end) const override
    {
        BlobRange bytes = inner.read(name, start, end);
        const BlobInfo info = bytes.blob();
        if (name.substr(0, 6) == "waits.")  // every byte behind the gate, nothing in flight
            return BlobRange(info, start, end, std::make_shared<GatedReader>(std::move(bytes), gate_, 0));
        if (name.substr(0, 6) != "ahead.") return bytes;
        return BlobRange(info, start, end, std::make_shared<GatedReader>(std::move(bytes), gate_, 1u << 20));
    }
    std::unique_ptr<Reservation> reserve(std::string_view name, std::uint64_t size, ReserveMode mode,
                                         ChecksumAlgorithm checksum) override
    {
        return inner.reserve(name, size, mode, checksum);
    }
    BlobInfo remove(std::string_view name) override { return inner.remove(name); }
    StoreUsage usage() const override { return inner.usage(); }

private:
    std::shared_ptr<AheadGate> gate_;
};

struct ReadAheadFixture {
    std::shared_ptr<AheadGate> gate = std::make_shared<AheadGate>();
    ReadAheadStore store{gate};
    TicketRegistry tickets{30s};
    ReservationTable reservations{60s};
    DataServer server{store, tickets, reservations, Fixture::config()};
    ReadAheadFixture() { server.start(); }
    ~ReadAheadFixture() { gate->let_through(); }
    ProtocolPeer connect() const { return ProtocolPeer::connect("127.0.0.1", server.port(), 10s); }
};

}  // namespace

// A pull whose reader still has a read on its way when its connection
// closes (a RadosStore's read-ahead with an OSD stopped): the reader is let
// go off the reactor, which answers every other connection meanwhile; once
// the read completes the reader goes, nothing is left behind.
BOOST_FIXTURE_TEST_CASE(a_pull_closed_with_its_read_ahead_in_flight_does_not_stall_the_reactor, ReadAheadFixture)
{
    const auto held = pattern(4u << 20);
    put(store.inner, "ahead.1", std::string(held.begin(), held.end()));
    {
        ProtocolPeer gone = connect();
        gone.send_request(protocol::FrameType::pull, tickets.issue(pull_binding("ahead.1", 0, held.size())), 0,
                          held.size());
        BOOST_REQUIRE(gone.receive_response().status == Errc::ok);
        BOOST_REQUIRE(gate->wait_for(gate->started, 1));
        const linger reset{1, 0};  // the client goes away
        ::setsockopt(gone.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
    // The server lets the reader go (noticing the reset, or the pull's
    // inactivity timeout while it waits for the rest): bounded.
    BOOST_REQUIRE(gate->wait_for(gate->letting_go, 1));

    const auto data = pattern(2u << 20);
    const Checksum checksum = ChecksumState::of(ChecksumAlgorithm::crc32c, data.data(), data.size());
    ProtocolPeer other = connect();
    TicketBinding push;
    push.direction = protocol::FrameType::push;
    push.blob = "other.1";
    push.reservation = reservations.add(store.inner.reserve(push.blob, data.size()));
    push.length = data.size();
    other.send_request(protocol::FrameType::push, tickets.issue(push), 0, data.size());
    other.send(data.data(), data.size());
    other.send_trailer(checksum);
    BOOST_CHECK(other.receive_response().status == Errc::ok);
    ChecksumState pulled(ChecksumAlgorithm::crc32c);
    BOOST_CHECK(other.pull(tickets.issue(pull_binding("other.1", 0, data.size())), 0, data.size(), &pulled).status ==
                Errc::ok);
    BOOST_CHECK(pulled.finish() == checksum);
    {
        std::lock_guard lock(gate->mutex);
        BOOST_CHECK_MESSAGE(!gate->open && gate->let_go == 0, "answered only once the read-ahead completed");
    }

    gate->let_through();
    BOOST_CHECK(gate->wait_for(gate->let_go, 1));
    BOOST_CHECK(transfers_reach(server, 0));
    BOOST_CHECK_EQUAL(reservations.open(), 0u);
}

// A waker handed to a store's reader (a RadosStore's completion, a fetch's
// bytes landing) can run after the data plane is gone (the daemon stopping
// while a read or a fetch goes on): it then does nothing.
BOOST_AUTO_TEST_CASE(a_waker_run_after_the_data_plane_is_gone_does_nothing)
{
    auto gate = std::make_shared<AheadGate>();
    ReadAheadStore store{gate};
    TicketRegistry tickets{30s};
    ReservationTable reservations{60s};
    auto server = std::make_unique<DataServer>(store, tickets, reservations, Fixture::config());
    server->start();
    const auto held = pattern(1u << 20);
    put(store.inner, "waits.1", std::string(held.begin(), held.end()));
    {
        ProtocolPeer peer = ProtocolPeer::connect("127.0.0.1", server->port(), 10s);
        peer.send_request(protocol::FrameType::pull, tickets.issue(pull_binding("waits.1", 0, held.size())), 0,
                          held.size());
        BOOST_REQUIRE(peer.receive_response().status == Errc::ok);
        BOOST_REQUIRE(gate->wait_for(gate->wakers, 1));
        server.reset();  // stopped and destroyed, its connection with it
    }
    std::function<void()> wake;
    {
        std::lock_guard lock(gate->mutex);
        wake = gate->waker;
    }
    BOOST_REQUIRE(wake);
    wake();  // nothing left to wake: must touch nothing of the server
    gate->let_through();
}
