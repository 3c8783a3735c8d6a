// The data plane's client (transporter/client: EventLoop, ConnectionPool,
// DataConnection) with the library's sources and sinks, against an
// in-process fake data port that speaks docs/PROTOCOL.md. No CORBA: tickets are made up and the fake port decides
// per ticket whether to serve, refuse, drop or stall.

#include "DataPlane.h"
#include "Streams.h"

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/Protocol.h>

#define BOOST_TEST_MODULE DataPlaneTest
#include <boost/test/unit_test.hpp>

#include "ProtocolPeer.h"

#include <arpa/inet.h>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <optional>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::client;
using blobstreaming::test::ProtocolPeer;

namespace {

/// corrupt: a pull's bytes arrive with one byte flipped (the digest announced is the Blob's).
/// replaced: a pull is answered as a store that binds tickets to names did
/// when the Blob was replaced by a longer one: status ok, the ticket's length,
/// the new Blob's size and digest, and the new Blob's first bytes.
/// close_after: a push is answered, then the connection closed.
enum class Behaviour { serve, refuse, drop_midway, stall, corrupt, replaced, close_after };

/// A fake store data port on 127.0.0.1:ephemeral, one thread per
/// connection, each a ProtocolPeer in the store's role.
class FakeDataPort {
public:
    FakeDataPort()
    {
        listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        BOOST_REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        BOOST_REQUIRE(::listen(listener_, 16) == 0);
        socklen_t len = sizeof addr;
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    ~FakeDataPort()
    {
        stopping_ = true;
        ::shutdown(listener_, SHUT_RDWR);
        acceptor_.join();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
        }
        for (auto& t : workers_) t.join();
        ::close(listener_);
    }

    std::uint16_t port() const { return port_; }
    int accepted() const { return accepted_.load(); }
    /// Connections this port has closed (their threads ended).
    int closed() const { return closed_.load(); }
    /// A named pull (its Responses advertise them) of any name is answered
    /// with `content` as `behaviour` says (serve, drop_midway, stall: half
    /// of the bytes, then nothing).
    void name_blob(std::vector<std::uint8_t> content, Behaviour behaviour)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        named_ = Entry{protocol::FrameType::pull, behaviour, std::move(content), kDefaultChecksum};
    }

    Ticket ticket(protocol::FrameType type, std::uint64_t length, Behaviour behaviour,
                  std::vector<std::uint8_t> content = {}, ChecksumAlgorithm algorithm = kDefaultChecksum)
    {
        Ticket t;
        t.checksum = algorithm;
        const auto id = protocol::random_ticket();
        std::copy(id.begin(), id.end(), t.id.begin());
        t.length = length;
        t.host = "127.0.0.1";
        t.port = port_;
        std::lock_guard<std::mutex> lock(mutex_);
        tickets_[id] = Entry{type, behaviour, std::move(content), algorithm};
        return t;
    }
    std::vector<std::uint8_t> stored(const Ticket& t)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        protocol::TicketId id;
        std::copy(t.id.begin(), t.id.end(), id.begin());
        return received_[id];
    }

private:
    struct Entry {
        protocol::FrameType type;
        Behaviour behaviour;
        std::vector<std::uint8_t> content;
        ChecksumAlgorithm algorithm;
    };

    static void respond(ProtocolPeer& peer, Errc status, std::uint64_t length, std::optional<Checksum> checksum,
                        const std::string& message, std::optional<std::uint64_t> blob_size = std::nullopt)
    {
        protocol::Response r;
        r.status = status;
        r.length = length;
        r.blob_size = blob_size.value_or(length);
        r.checksum = checksum;
        r.message = message;
        std::string frame = protocol::encode(r);
        protocol::Advertisement named;
        named.named_requests = true;
        named.default_checksum = kDefaultChecksum;
        protocol::advertise(frame, named);
        peer.send(frame.data(), frame.size());
    }

    void accept_loop()
    {
        for (;;) {
            const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0 || stopping_) {
                if (fd >= 0) ::close(fd);
                return;
            }
            ++accepted_;
            std::lock_guard<std::mutex> lock(mutex_);
            open_.push_back(fd);
            workers_.emplace_back([this, fd] { serve(fd); });
        }
    }

    void serve(int fd)
    {
        ProtocolPeer peer(UniqueFd(fd), "the client", std::chrono::seconds(20));
        try {
            serve(peer);
        } catch (const Error&) {
            // The client closed the connection or broke it: done with it.
        }
        std::lock_guard<std::mutex> lock(mutex_);
        ::shutdown(fd, SHUT_RDWR);
        open_.erase(std::remove(open_.begin(), open_.end(), fd), open_.end());
        ++closed_;
    }  // closes fd

    /// A named pull: the Blob set by name_blob().
    void serve_named(ProtocolPeer& peer, const std::uint8_t (&header)[protocol::kRequestSize])
    {
        protocol::NamedRequest request;
        std::size_t name_size = 0;
        std::string why;
        if (protocol::decode_named(header, request, name_size, why)) {
            respond(peer, Errc::protocol_error, 0, {}, why);
            throw Error(Errc::protocol_error, why);
        }
        std::string name(name_size, '\0');
        peer.receive(name.data(), name.size());
        std::optional<Entry> entry;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            entry = named_;
        }
        if (!entry || request.type != protocol::FrameType::pull) {
            respond(peer, Errc::no_such_blob, 0, {}, "no Blob named " + name);
            return;
        }
        const auto& c = entry->content;
        respond(peer, Errc::ok, c.size(), ChecksumState::of(entry->algorithm, c.data(), c.size()),
                protocol::encode_commit_time(1));
        if (entry->behaviour == Behaviour::serve) return peer.send(c.data(), c.size());
        peer.send(c.data(), c.size() / 2);
        if (entry->behaviour == Behaviour::stall) peer.swallow();  // never the rest: the client must give up
        throw Error(Errc::transfer_failed, "stopped midway");
    }

    void serve(ProtocolPeer& peer)
    {
        for (;;) {
            std::uint8_t header[protocol::kRequestSize];
            peer.receive(header, sizeof header);
            if (protocol::is_named(header)) {
                serve_named(peer, header);
                continue;
            }
            protocol::Request request;
            std::string why;
            if (protocol::decode(header, request, why)) {
                respond(peer, Errc::protocol_error, 0, {}, why);
                return;
            }
            std::optional<Entry> entry;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                auto it = tickets_.find(request.ticket);
                if (it != tickets_.end()) {
                    entry = std::move(it->second);
                    tickets_.erase(it);  // single use
                }
            }
            if (!entry || entry->type != request.type || entry->behaviour == Behaviour::refuse) {
                respond(peer, Errc::refused, 0, {}, "unknown ticket " + protocol::ticket_tag(request.ticket));
                return;
            }
            if (entry->behaviour == Behaviour::stall) {
                peer.swallow();  // never answer: the client must give up
                return;
            }
            if (request.type == protocol::FrameType::push) {
                std::vector<std::uint8_t> bytes(request.length);
                if (entry->behaviour == Behaviour::drop_midway) {
                    peer.receive(bytes.data(), bytes.size() / 2);
                    return;
                }
                peer.receive(bytes.data(), bytes.size());
                std::string trailer_why;
                const auto trailer = peer.receive_trailer(trailer_why);
                const Checksum checksum = ChecksumState::of(entry->algorithm, bytes.data(), bytes.size());
                if (!trailer || *trailer != checksum) {
                    respond(peer, Errc::digest_mismatch, 0, {}, "trailer does not match");
                    return;
                }
                {
                    std::lock_guard<std::mutex> lock(mutex_);
                    received_[request.ticket] = bytes;
                }
                respond(peer, Errc::ok, bytes.size(), checksum, "");
                if (entry->behaviour == Behaviour::close_after) return;
                continue;
            }
            const auto& c = entry->content;
            if (entry->behaviour == Behaviour::replaced) {
                std::vector<std::uint8_t> now(c.size() + 1000, 0x5a);
                std::copy(c.begin(), c.end(), now.begin());
                now[0] ^= 0xff;
                respond(peer, Errc::ok, c.size(), ChecksumState::of(entry->algorithm, now.data(), now.size()), "",
                        now.size());
                peer.send(now.data(), c.size());
                continue;
            }
            respond(peer, Errc::ok, c.size(), ChecksumState::of(entry->algorithm, c.data(), c.size()), "");
            if (entry->behaviour == Behaviour::drop_midway) {
                peer.send(c.data(), c.size() / 2);
                return;
            }
            if (entry->behaviour == Behaviour::corrupt) {
                std::vector<std::uint8_t> bad = c;
                bad[bad.size() * 3 / 4] ^= 0x20;
                peer.send(bad.data(), bad.size());
                continue;
            }
            peer.send(c.data(), c.size());
        }
    }

    int listener_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<int> accepted_{0};
    std::atomic<int> closed_{0};
    std::optional<Entry> named_;
    std::thread acceptor_;
    std::mutex mutex_;
    std::vector<std::thread> workers_;
    std::vector<int> open_;
    std::map<protocol::TicketId, Entry> tickets_;
    std::map<protocol::TicketId, std::vector<std::uint8_t>> received_;
};

std::vector<std::uint8_t> pattern(std::size_t size, unsigned seed)
{
    std::vector<std::uint8_t> v(size);
    for (std::size_t i = 0; i < size; ++i) v[i] = static_cast<std::uint8_t>((i * 131 + seed) % 253);
    return v;
}

/// A loop and a pool as a Session has them, driven by the test.
struct Fixture {
    dataplane::PoolOptions options = [] {
        dataplane::PoolOptions o;
        o.timeout = std::chrono::milliseconds(500);
        o.max_connections_per_endpoint = 2;
        return o;
    }();
    EventLoop loop{[this] { pool.tick(); }, std::chrono::milliseconds(20)};
    ConnectionPool pool{loop, options};
    FakeDataPort port;

    /// Runs one job to completion (bounded by the inactivity timeout).
    JobOutcome run(std::unique_ptr<TransferJob> job)
    {
        std::optional<JobOutcome> out;
        job->done = [&out](JobOutcome o) { out = std::move(o); };
        pool.submit(std::move(job));
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!out && std::chrono::steady_clock::now() < deadline) loop.run_once(std::chrono::milliseconds(100));
        BOOST_REQUIRE(out.has_value());
        return *out;
    }
    /// One ticket push, so that the pool holds an idle connection that
    /// advertised named requests; its error message (empty: none).
    std::string lease_after_a_ticket()
    {
        const auto bytes = pattern(1024, 99);
        const auto out = run(push_job(bytes, Behaviour::serve));
        return out.error ? out.message : std::string();
    }
    std::unique_ptr<TransferJob> push_job(const std::vector<std::uint8_t>& bytes, Behaviour b,
                                          ChecksumAlgorithm algorithm = kDefaultChecksum)
    {
        auto job = std::make_unique<TransferJob>();
        job->type = protocol::FrameType::push;
        job->ticket = port.ticket(protocol::FrameType::push, bytes.size(), b, {}, algorithm);
        job->what = "push \"T\": store \"fake\"";
        job->source = open_source(PushSource::memory(bytes.data(), bytes.size()), job->what);
        return job;
    }
    std::unique_ptr<TransferJob> pull_job(const std::vector<std::uint8_t>& content, std::vector<std::uint8_t>* out,
                                          Behaviour b, ChecksumAlgorithm algorithm = kDefaultChecksum)
    {
        auto job = std::make_unique<TransferJob>();
        job->type = protocol::FrameType::pull;
        job->ticket = port.ticket(protocol::FrameType::pull, content.size(), b, content, algorithm);
        job->what = "pull \"T\": store \"fake\"";
        job->sink = make_sink(PullSink::memory(out), job->what);
        job->verify = true;
        return job;
    }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(push_sends_bytes_and_trailer_and_gets_the_ack, Fixture)
{
    const auto bytes = pattern(3 * 1024 * 1024 + 5, 1);
    auto job = push_job(bytes, Behaviour::serve);
    const Ticket t = job->ticket;
    const auto out = run(std::move(job));
    BOOST_TEST(!out.error, out.message);
    BOOST_TEST(out.bytes == bytes.size());
    BOOST_TEST(out.response.checksum.value().text() ==
               ChecksumState::of(ChecksumAlgorithm::crc32c, bytes.data(), bytes.size()).text());
    BOOST_TEST((port.stored(t) == bytes));
}

BOOST_FIXTURE_TEST_CASE(pull_lands_in_memory_and_is_verified, Fixture)
{
    const auto content = pattern(2 * 1024 * 1024 + 3, 2);
    std::vector<std::uint8_t> got;
    const auto out = run(pull_job(content, &got, Behaviour::serve));
    BOOST_TEST(!out.error, out.message);
    BOOST_TEST((got == content));
}

// SHA-256 from HashPipeline::kBackgroundFrom on: a helper thread hashes the
// bytes behind the connection (the caller's buffer stays in place).
BOOST_FIXTURE_TEST_CASE(large_sha256_transfers_hash_in_the_background_and_match, Fixture)
{
    for (const std::size_t size : {std::size_t{4} << 20, (std::size_t{9} << 20) + 7}) {
        const auto bytes = pattern(size, 11);
        auto job = push_job(bytes, Behaviour::serve, ChecksumAlgorithm::sha256);
        const Ticket t = job->ticket;
        const auto pushed = run(std::move(job));
        BOOST_TEST(!pushed.error, pushed.message);
        BOOST_TEST((port.stored(t) == bytes));
        std::vector<std::uint8_t> got;
        const auto pulled = run(pull_job(bytes, &got, Behaviour::serve, ChecksumAlgorithm::sha256));
        BOOST_TEST(!pulled.error, pulled.message);
        BOOST_TEST((got == bytes));
        BOOST_TEST((pulled.response.checksum.value() ==
                    ChecksumState::of(ChecksumAlgorithm::sha256, bytes.data(), bytes.size())));
    }
}

BOOST_FIXTURE_TEST_CASE(pulled_bytes_that_differ_from_the_digest_fail_the_pull, Fixture)
{
    // CRC32C (inline), SHA-256 inline and on the helper thread.
    const std::pair<std::size_t, ChecksumAlgorithm> cases[] = {{std::size_t{8} << 20, ChecksumAlgorithm::crc32c},
                                                               {std::size_t{64} << 10, ChecksumAlgorithm::sha256},
                                                               {std::size_t{8} << 20, ChecksumAlgorithm::sha256}};
    for (const auto& [size, algorithm] : cases) {
        const auto content = pattern(size, 12);
        std::vector<std::uint8_t> got;
        const auto out = run(pull_job(content, &got, Behaviour::corrupt, algorithm));
        BOOST_TEST(out.error == make_error_code(Errc::digest_mismatch), size << ": " << out.message);
        auto sent = content;  // as the fake store corrupts it
        sent[sent.size() * 3 / 4] ^= 0x20;
        const std::string both = "have checksum " + ChecksumState::of(algorithm, sent.data(), sent.size()).text() +
                                 ", not the Blob's " +
                                 ChecksumState::of(algorithm, content.data(), content.size()).text();
        BOOST_TEST(out.message.find(both) != std::string::npos, out.message);
    }
}

BOOST_FIXTURE_TEST_CASE(a_whole_pull_answered_with_another_version_fails, Fixture)
{
    const auto content = pattern(std::size_t{1} << 20, 13);
    std::vector<std::uint8_t> got;
    // The ticket names its version: the Response of another one is refused
    // before any byte is taken.
    auto job = pull_job(content, &got, Behaviour::replaced);
    BlobInfo version;
    version.size = content.size();
    version.checksum = ChecksumState::of(ChecksumAlgorithm::crc32c, content.data(), content.size());
    job->ticket.version = version;
    job->whole = true;
    auto out = run(std::move(job));
    BOOST_TEST(out.error == make_error_code(Errc::blob_changed), out.message);
    BOOST_TEST(out.message.find("not the version of the ticket") != std::string::npos, out.message);
    BOOST_TEST(out.bytes == 0u);
    // Without a version (a store that names none), a whole-Blob pull still
    // refuses to be answered with a part of the Blob: no unverified success.
    job = pull_job(content, &got, Behaviour::replaced);
    job->whole = true;
    out = run(std::move(job));
    BOOST_TEST(out.error == make_error_code(Errc::protocol_error), out.message);
    BOOST_TEST(out.message.find("a whole-Blob pull was answered with bytes [0, 1048576) of a Blob of 1049576 bytes") !=
                   std::string::npos,
               out.message);
}

BOOST_FIXTURE_TEST_CASE(sequential_transfers_reuse_one_connection, Fixture)
{
    for (unsigned i = 0; i < 20; ++i) {
        const auto bytes = pattern(1000 + i, i);
        BOOST_TEST(!run(push_job(bytes, Behaviour::serve)).error);
        std::vector<std::uint8_t> got;
        BOOST_TEST(!run(pull_job(bytes, &got, Behaviour::serve)).error);
        BOOST_TEST((got == bytes));
    }
    BOOST_TEST(pool.opened() == 1u);
    BOOST_TEST(port.accepted() == 1);
}

BOOST_FIXTURE_TEST_CASE(concurrent_transfers_are_capped_and_queued, Fixture)
{
    std::vector<std::vector<std::uint8_t>> blobs;
    for (unsigned i = 0; i < 6; ++i) blobs.push_back(pattern(512 * 1024, i));
    int done = 0, failed = 0;
    for (const auto& b : blobs) {
        auto job = push_job(b, Behaviour::serve);
        job->done = [&](JobOutcome o) {
            ++done;
            if (o.error) ++failed;
        };
        pool.submit(std::move(job));
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (done < 6 && std::chrono::steady_clock::now() < deadline) loop.run_once(std::chrono::milliseconds(100));
    BOOST_TEST(done == 6);
    BOOST_TEST(failed == 0);
    BOOST_TEST(pool.opened() == 2u);  // the cap, not one per transfer
}

BOOST_FIXTURE_TEST_CASE(refused_ticket_reports_the_store_reason, Fixture)
{
    const auto bytes = pattern(4096, 3);
    const auto out = run(push_job(bytes, Behaviour::refuse));
    BOOST_TEST(out.error == make_error_code(Errc::refused));
    BOOST_TEST(out.message.find("push \"T\": store \"fake\": unknown ticket") == 0u, out.message);
}

BOOST_FIXTURE_TEST_CASE(connection_lost_mid_push_says_how_far_it_got, Fixture)
{
    const auto bytes = pattern(8 * 1024 * 1024, 4);
    const auto out = run(push_job(bytes, Behaviour::drop_midway));
    BOOST_TEST(out.error == make_error_code(Errc::transfer_failed));
    const std::string expected =
        "push \"T\": store \"fake\": data connection to 127.0.0.1:" + std::to_string(port.port()) + " closed after ";
    BOOST_TEST(out.message.find(expected) == 0u, out.message);
    BOOST_TEST(out.message.find("of 8388608 bytes") != std::string::npos, out.message);
}

BOOST_FIXTURE_TEST_CASE(connection_lost_mid_pull_fails, Fixture)
{
    const auto content = pattern(4 * 1024 * 1024, 5);
    std::vector<std::uint8_t> got;
    const auto out = run(pull_job(content, &got, Behaviour::drop_midway));
    BOOST_TEST(out.error == make_error_code(Errc::transfer_failed));
    BOOST_TEST(out.message.find("closed after 2097152 of 4194304 bytes") != std::string::npos, out.message);
}

BOOST_FIXTURE_TEST_CASE(no_progress_times_out, Fixture)
{
    const auto bytes = pattern(1024, 6);
    const auto t0 = std::chrono::steady_clock::now();
    const auto out = run(push_job(bytes, Behaviour::stall));
    const auto waited_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    BOOST_TEST(out.error == make_error_code(Errc::timeout));
    BOOST_TEST(out.message.find("no progress for") != std::string::npos, out.message);
    BOOST_TEST(waited_ms >= 500);
    BOOST_TEST(waited_ms < 5000);
}

BOOST_FIXTURE_TEST_CASE(a_broken_connection_is_replaced, Fixture)
{
    const auto bytes = pattern(4096, 7);
    BOOST_TEST(run(push_job(bytes, Behaviour::refuse)).error == make_error_code(Errc::refused));
    BOOST_TEST(!run(push_job(bytes, Behaviour::serve)).error);
    BOOST_TEST(pool.opened() == 2u);
}

namespace {

/// A named pull of "T" on the fake port's endpoint, into `out`.
std::unique_ptr<TransferJob> named_pull_job(std::uint16_t port, std::vector<std::uint8_t>* out,
                                            std::optional<JobOutcome>& outcome)
{
    auto job = std::make_unique<TransferJob>();
    job->type = protocol::FrameType::pull;
    job->ticket.host = "127.0.0.1";
    job->ticket.port = port;
    protocol::NamedRequest request;
    request.type = protocol::FrameType::pull;
    request.name = "T";
    job->named = request;
    job->what = "pull \"T\": store \"fake\"";
    job->sink = make_sink(PullSink::memory(out), job->what);
    job->verify = true;
    job->whole = true;
    job->done = [&outcome](JobOutcome o) { outcome = std::move(o); };
    return job;
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(a_named_pull_runs_on_the_callers_thread_on_a_leased_connection, Fixture)
{
    BOOST_TEST(lease_after_a_ticket().empty());
    const auto content = pattern(700 * 1024, 11);
    port.name_blob(content, Behaviour::serve);
    DataConnection* c = pool.lease("127.0.0.1:" + std::to_string(port.port()));
    BOOST_REQUIRE(c != nullptr);
    BOOST_TEST(pool.lease("127.0.0.1:" + std::to_string(port.port())) == nullptr);  // one connection, leased
    std::vector<std::uint8_t> got;
    std::optional<JobOutcome> out;
    std::thread::id done_on;
    auto job = named_pull_job(port.port(), &got, out);
    job->done = [&out, &done_on](JobOutcome o) {
        done_on = std::this_thread::get_id();
        out = std::move(o);
    };
    c->run_here(std::move(job), options.timeout);
    pool.give_back(c);
    BOOST_REQUIRE(out.has_value());
    BOOST_TEST(!out->error, out->message);
    BOOST_TEST((done_on == std::this_thread::get_id()));
    BOOST_TEST((got == content));
    // Given back: the loop's next transfer reuses it.
    const auto bytes = pattern(4096, 10);
    BOOST_TEST(!run(push_job(bytes, Behaviour::serve)).error);
    BOOST_TEST(pool.opened() == 1u);
}

BOOST_FIXTURE_TEST_CASE(run_leased_runs_on_this_thread_and_always_gives_the_connection_back, Fixture)
{
    const std::string endpoint = "127.0.0.1:" + std::to_string(port.port());
    bool made = false;
    // No connection to the endpoint yet: nothing leased, the job not made.
    BOOST_TEST(!pool.run_leased(endpoint, options.timeout, [&] {
        made = true;
        return std::unique_ptr<TransferJob>();
    }));
    BOOST_TEST(!made);
    BOOST_TEST(lease_after_a_ticket().empty());
    // No job made (the operation failed before its transfer): given back.
    BOOST_TEST(pool.run_leased(endpoint, options.timeout, [&] {
        made = true;
        return std::unique_ptr<TransferJob>();
    }));
    BOOST_TEST(made);
    // The maker throws: the error reaches the caller, the connection is given back.
    BOOST_CHECK_EXCEPTION(pool.run_leased(endpoint, options.timeout,
                                          []() -> std::unique_ptr<TransferJob> {
                                              throw Error(Errc::io_error, "the sink cannot be opened");
                                          }),
                          Error, [](const Error& e) { return e.code() == Errc::io_error; });
    const auto content = pattern(300 * 1024, 14);
    port.name_blob(content, Behaviour::serve);
    std::vector<std::uint8_t> got;
    std::optional<JobOutcome> out;
    std::thread::id done_on;
    BOOST_TEST(pool.run_leased(endpoint, options.timeout, [&] {
        auto job = named_pull_job(port.port(), &got, out);
        job->done = [&out, &done_on](JobOutcome o) {
            done_on = std::this_thread::get_id();
            out = std::move(o);
        };
        return job;
    }));
    BOOST_REQUIRE(out.has_value());
    BOOST_TEST(!out->error, out->message);
    BOOST_TEST((done_on == std::this_thread::get_id()));
    BOOST_TEST((got == content));
    // Every lease above ended: the one connection is idle again.
    DataConnection* c = pool.lease(endpoint);
    BOOST_TEST(c != nullptr);
    if (c) pool.give_back(c);
    BOOST_TEST(pool.opened() == 1u);
}

BOOST_FIXTURE_TEST_CASE(a_named_pull_on_the_callers_thread_times_out_when_the_store_stalls_midway, Fixture)
{
    BOOST_TEST(lease_after_a_ticket().empty());
    const auto content = pattern(4 * 1024 * 1024, 12);
    port.name_blob(content, Behaviour::stall);
    DataConnection* c = pool.lease("127.0.0.1:" + std::to_string(port.port()));
    BOOST_REQUIRE(c != nullptr);
    std::vector<std::uint8_t> got;
    std::optional<JobOutcome> out;
    const auto t0 = std::chrono::steady_clock::now();
    c->run_here(named_pull_job(port.port(), &got, out), options.timeout);
    const auto waited_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    BOOST_REQUIRE(out.has_value());
    BOOST_TEST(out->error == make_error_code(Errc::timeout));
    BOOST_TEST(out->message == "pull \"T\": store \"fake\": no progress for 0.500 s on data connection to 127.0.0.1:" +
                                   std::to_string(port.port()) + " (2097152 of 4194304 bytes)",
               out->message);
    BOOST_TEST(waited_ms >= 500);
    BOOST_TEST(waited_ms < 5000);
    BOOST_TEST(c->closed());
    pool.give_back(c);  // discarded on the loop thread: the next transfer opens another
    const auto bytes = pattern(4096, 13);
    BOOST_TEST(!run(push_job(bytes, Behaviour::serve)).error);
    BOOST_TEST(pool.opened() == 2u);
}

BOOST_FIXTURE_TEST_CASE(an_idle_connection_the_store_closed_is_not_reused, Fixture)
{
    // The store answers a push, then closes the connection while it is idle
    // (not watched by the loop): the next transfer sees that before it
    // sends anything, and opens another.
    const auto bytes = pattern(4096, 14);
    BOOST_TEST(!run(push_job(bytes, Behaviour::close_after)).error);
    for (int i = 0; i < 200 && port.closed() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    BOOST_REQUIRE(port.closed() == 1);
    // Until its end reaches this side, the connection still looks open.
    const std::string endpoint = "127.0.0.1:" + std::to_string(port.port());
    bool dropped = false;
    for (int i = 0; i < 2000 && !dropped; ++i) {
        DataConnection* c = pool.lease(endpoint);
        dropped = c == nullptr;  // seen closed: discarded, not leased
        if (c) {
            pool.give_back(c);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    BOOST_REQUIRE(dropped);
    BOOST_TEST(!run(push_job(bytes, Behaviour::serve)).error);
    BOOST_TEST(pool.opened() == 2u);
}

BOOST_FIXTURE_TEST_CASE(connect_refused_is_unreachable, Fixture)
{
    const auto bytes = pattern(10, 8);
    auto job = push_job(bytes, Behaviour::serve);
    job->ticket.port = 1;  // nothing listens there
    const auto out = run(std::move(job));
    BOOST_TEST(out.error == make_error_code(Errc::unreachable));
    BOOST_TEST(out.message.find("cannot connect to data endpoint 127.0.0.1:1") != std::string::npos, out.message);
}
