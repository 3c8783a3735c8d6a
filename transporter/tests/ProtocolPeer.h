#pragma once
/// The one data-protocol peer of the tests and test tools: either end of a
/// plain TCP data connection (docs/PROTOCOL.md), blocking, every wait
/// bounded by its timeout. Its frames go through protocol::encode/decode
/// and its bytes through the data plane's I/O layer (DataIo.h), so a test
/// speaks exactly what the store and the client speak. As a client it
/// sends Requests and reads Responses (DataServerTest, ticket_probe,
/// transporter_probe); as a fake store it reads Requests and answers
/// (DataPlaneTest). Header-only: link libblobtransporter.
///
/// Failures throw Error: Errc::timeout when the other end did nothing
/// within the timeout, Errc::transfer_failed when the connection ended or
/// broke, Errc::protocol_error for a Response that does not decode.

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/DataIo.h>
#include <blobstreaming/transporter/Protocol.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace blobstreaming::test {

class ProtocolPeer {
public:
    /// The client's end: connects to `host`:`port` (a name or an IP
    /// literal) within `timeout`, which then bounds every wait.
    static ProtocolPeer connect(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout)
    {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICSERV;
        addrinfo* found = nullptr;
        const std::string service = std::to_string(port);
        const std::string where = "data port " + host + ":" + service;
        if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
            throw Error(Errc::unreachable, "cannot resolve " + where + ": " + ::gai_strerror(rc));
        std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
        UniqueFd fd(::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!fd) throw Error(Errc::io_error, "cannot create a socket for " + where + ": " + std::strerror(errno));
        timeval tv{};  // bounds connect()
        tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
        tv.tv_usec = static_cast<suseconds_t>(timeout.count() % 1000 * 1000);
        ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (::connect(fd.get(), found->ai_addr, found->ai_addrlen) != 0)
            throw Error(Errc::unreachable, "cannot connect to " + where + ": " + std::strerror(errno));
        return ProtocolPeer(std::move(fd), where, timeout);
    }

    /// Either end over a connected socket, e.g. the fake store's accept()ed
    /// one; `where` names the other end in messages ("client 127.0.0.1:…").
    ProtocolPeer(UniqueFd fd, std::string where, std::chrono::milliseconds timeout)
        : fd_(std::move(fd)), channel_(std::make_unique<Channel>(fd_.get())), where_(std::move(where)),
          timeout_(timeout)
    {}

    int fd() const noexcept { return fd_.get(); }

    /// Bytes as they are: a push body, garbage.
    void send(const void* data, std::size_t size)
    {
        out_.append(data, size);
        finish("send to", [this] { return out_.drain(*channel_); });
    }
    /// Exactly `size` bytes.
    void receive(void* data, std::size_t size)
    {
        auto* p = static_cast<std::uint8_t*>(data);
        std::size_t got = 0;
        finish("receive from", [&] {
            for (;;) {
                if (got == size) return IoResult::moved(got);
                IoResult r = read_some(*channel_, p + got, size - got);
                if (!r.done()) return r;
                got += r.bytes();
            }
        });
    }

    void send_request(protocol::FrameType type, const protocol::TicketId& ticket, std::uint64_t offset,
                      std::uint64_t length)
    {
        std::uint8_t frame[protocol::kRequestSize];
        protocol::encode(protocol::Request{type, ticket, offset, length}, frame);
        send(frame, sizeof frame);
    }
    /// The next Request; false, with `why`, when it does not decode.
    bool receive_request(protocol::Request& request, std::string& why)
    {
        receive_frame(protocol::kRequestSize);
        return !protocol::decode(frame_.first<protocol::kRequestSize>(), request, why);
    }

    void send_trailer(const Checksum& checksum)
    {
        std::uint8_t frame[protocol::kTrailerSize];
        protocol::encode(protocol::Trailer{checksum}, frame);
        send(frame, sizeof frame);
    }
    /// The next trailer's checksum; nullopt, with `why`, when it does not
    /// decode.
    std::optional<Checksum> receive_trailer(std::string& why)
    {
        receive_frame(protocol::kTrailerSize);
        protocol::Trailer trailer;
        if (protocol::decode(frame_.first<protocol::kTrailerSize>(), trailer, why)) return std::nullopt;
        return trailer.checksum;
    }

    void send_response(const protocol::Response& response)
    {
        const std::string frame = protocol::encode(response);
        send(frame.data(), frame.size());
    }
    protocol::Response receive_response()
    {
        receive_frame(protocol::kResponseHeaderSize);
        protocol::Response response;
        std::size_t message_size = 0;
        std::string why;
        if (protocol::decode(frame_.first<protocol::kResponseHeaderSize>(), response, message_size, why))
            throw Error(Errc::protocol_error, "response from " + where_ + ": " + why);
        frame_.extend(message_size);
        finish("receive from", [this] { return frame_.fill(*channel_); });
        response.message.assign(reinterpret_cast<const char*>(frame_.data()) + protocol::kResponseHeaderSize,
                                message_size);
        return response;
    }

    /// A pull's `length` bytes, fed to `hash` when given.
    void receive_body(std::uint64_t length, ChecksumState* hash = nullptr)
    {
        std::vector<std::uint8_t> buffer(1 << 16);
        for (std::uint64_t left = length; left > 0;) {
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, buffer.size()));
            receive(buffer.data(), n);
            if (hash) hash->update(buffer.data(), n);
            left -= n;
        }
    }
    /// A pull on this connection: the Request, the Response and, when it is
    /// ok, all its bytes (fed to `hash` when given).
    protocol::Response pull(const protocol::TicketId& ticket, std::uint64_t offset, std::uint64_t length,
                            ChecksumState* hash = nullptr)
    {
        send_request(protocol::FrameType::pull, ticket, offset, length);
        protocol::Response response = receive_response();
        if (response.status == Errc::ok) receive_body(response.length, hash);
        return response;
    }

    /// Reads and drops whatever comes until the other end closes.
    void swallow()
    {
        finish("receive from", [this] {
            IoResult r = discard(*channel_, std::numeric_limits<std::uint64_t>::max());
            return r.eof() ? IoResult::moved(r.bytes()) : r;
        });
    }
    /// True when the other end closes the connection (EOF or reset) within
    /// the timeout without sending anything more.
    bool closed_by_peer()
    {
        pollfd p{fd_.get(), POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(timeout_.count())) <= 0) return false;
        std::uint8_t byte = 0;
        const IoResult r = read_some(*channel_, &byte, 1);
        return r.eof() || (r.failed() && r.error_number() == ECONNRESET);
    }

private:
    void receive_frame(std::size_t size)
    {
        frame_.expect(size);
        finish("receive from", [this] { return frame_.fill(*channel_); });
    }

    /// Calls `step` until it is done, waiting (bounded) for the socket in
    /// between; throws when the connection ends or breaks first.
    template <class Step>
    void finish(const char* doing, Step step)
    {
        for (;;) {
            const IoResult r = step();
            if (r.done()) return;
            const std::string what = std::string(doing) + " " + where_;
            if (r.eof()) throw Error(Errc::transfer_failed, what + ": the connection was closed");
            if (r.failed()) throw Error(Errc::transfer_failed, what + ": " + r.text());
            pollfd p{fd_.get(), static_cast<short>(r.status() == IoResult::Status::want_write ? POLLOUT : POLLIN), 0};
            int rc;
            while ((rc = ::poll(&p, 1, static_cast<int>(timeout_.count()))) < 0 && errno == EINTR) {}
            if (rc == 0) {
                char seconds[32];
                std::snprintf(seconds, sizeof seconds, "%.1f", static_cast<double>(timeout_.count()) / 1000.0);
                throw Error(Errc::timeout, what + ": nothing within " + std::string(seconds) + " s");
            }
        }
    }

    UniqueFd fd_;
    std::unique_ptr<Channel> channel_;  ///< plain TCP over fd_
    std::string where_;
    std::chrono::milliseconds timeout_;
    FrameReader frame_{std::max(
        {protocol::kRequestSize, protocol::kTrailerSize, protocol::kResponseHeaderSize + protocol::kMaxMessageSize})};
    OutputBuffer out_;
};

}  // namespace blobstreaming::test
