#pragma once
/// What the transfer unit tests (PushTransferTest, PartTransferTest,
/// PullTransferTest) drive a Transfer with, without a
/// reactor: a data server's state over a MemoryStore (no CommitPool: every
/// store call stays on the test's thread), and a TransferLink over one end
/// of a socket pair that records the Responses a transfer queues; the test
/// plays the client on the other end.
#include "server/DataServerImpl.h"
#include "server/ReservationTable.h"
#include "server/TicketRegistry.h"
#include "server/Transfer.h"

#include "ServerTestSupport.h"

#include <blobstreaming/blobstore/MemoryStore.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/DataIo.h>
#include <blobstreaming/transporter/Protocol.h>
#include <blobstreaming/transporter/Tls.h>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace blobstreaming::server::test {

/// The connection as a transfer sees it, over a non-blocking socket.
class RecordingLink final : public TransferLink {
public:
    explicit RecordingLink(int fd) : channel_(fd) {}

    struct Answer {
        protocol::Response response;
        AfterResponse after = AfterResponse::next_request;
        bool refusal = false;  ///< through refuse()
    };
    std::vector<Answer> answers;
    int progressed = 0;  ///< progress() calls
    int wakes = 0;       ///< waker() calls run

    Channel& io() noexcept override { return channel_; }
    const std::string& peer_name() const noexcept override { return peer_; }
    void progress() noexcept override { ++progressed; }
    Step respond(const std::string& frame, AfterResponse after) override
    {
        answers.push_back({decode(frame), after, false});
        return Step::respond;
    }
    Step refuse(Errc status, const std::string& reason) override
    {
        protocol::Response response;
        response.status = status;
        response.message = reason;
        answers.push_back({response, AfterResponse::drain, true});
        return Step::respond;
    }
    bool run_off_reactor(const OffReactor&, Work, Then) override { return false; }
    std::function<void()> waker() override
    {
        return [this] { ++wakes; };
    }
    /// The one Response queued so far.
    const Answer& answer() const
    {
        BOOST_REQUIRE_EQUAL(answers.size(), 1u);
        return answers.front();
    }

private:
    static protocol::Response decode(const std::string& frame)
    {
        protocol::Response response;
        std::size_t message_size = 0;
        std::string why;
        if (frame.size() < protocol::kResponseHeaderSize) throw std::runtime_error("short Response frame");
        const auto& header = *reinterpret_cast<const std::uint8_t(*)[protocol::kResponseHeaderSize]>(frame.data());
        if (protocol::decode(header, response, message_size, why)) throw std::runtime_error(why);
        response.message = frame.substr(protocol::kResponseHeaderSize, message_size);
        return response;
    }

    Channel channel_;
    std::string peer_ = "127.0.0.1:40000";
};

/// A socket pair: the transfer's end (non-blocking, as the daemon's) and the
/// client's (blocking).
struct SocketPair {
    UniqueFd server;
    UniqueFd client;
    SocketPair()
    {
        int fds[2];
        BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
        server = UniqueFd(fds[0]);
        client = UniqueFd(fds[1]);
        BOOST_REQUIRE(::fcntl(server.get(), F_SETFL, ::fcntl(server.get(), F_GETFL) | O_NONBLOCK) == 0);
    }
    void send(const void* data, std::size_t size) const
    {
        const auto* p = static_cast<const std::uint8_t*>(data);
        while (size > 0) {
            const ssize_t n = ::send(client.get(), p, size, MSG_NOSIGNAL);
            BOOST_REQUIRE(n > 0);
            p += n;
            size -= static_cast<std::size_t>(n);
        }
    }
    void send_trailer(const Checksum& checksum) const
    {
        std::uint8_t trailer[protocol::kTrailerSize];
        protocol::encode(protocol::Trailer{checksum}, trailer);
        send(trailer, sizeof trailer);
    }
    /// Exactly `size` bytes from the transfer.
    std::vector<std::uint8_t> receive(std::size_t size) const
    {
        std::vector<std::uint8_t> out(size);
        std::size_t got = 0;
        while (got < size) {
            const ssize_t n = ::recv(client.get(), out.data() + got, size - got, 0);
            BOOST_REQUIRE(n > 0);
            got += static_cast<std::size_t>(n);
        }
        return out;
    }
};

/// A data server's state over a MemoryStore, not started, and a link.
struct TransferFixture {
    MemoryStore store{MemoryStore::Options{16u << 20}};
    TicketRegistry tickets{std::chrono::seconds(30)};
    ReservationTable reservations{std::chrono::seconds(60)};
    DataServer::Impl server{store, tickets, reservations, DataServerConfig{}};
    SocketPair sockets;
    RecordingLink link{sockets.server.get()};

    static protocol::Request request(protocol::FrameType type, std::uint64_t offset, std::uint64_t length)
    {
        protocol::Request r{};
        r.type = type;
        r.ticket.fill(7);
        r.offset = offset;
        r.length = length;
        return r;
    }
    /// Commits `data` as `name` in the store.
    BlobInfo commit(const std::string& name, const std::vector<std::uint8_t>& data)
    {
        auto r = store.reserve(name, data.size());
        BOOST_REQUIRE(!r->write(data.data(), data.size()));
        return r->commit();
    }
};

inline std::vector<std::uint8_t> pattern(std::size_t size)
{
    std::vector<std::uint8_t> v(size);
    for (std::size_t i = 0; i < size; ++i) v[i] = static_cast<std::uint8_t>(i * 7 + i / 251);
    return v;
}

inline Checksum crc_of(const std::vector<std::uint8_t>& data, std::size_t from = 0, std::size_t size = SIZE_MAX)
{
    size = std::min(size, data.size() - from);
    return ChecksumState::of(ChecksumAlgorithm::crc32c, data.data() + from, size);
}

}  // namespace blobstreaming::server::test
