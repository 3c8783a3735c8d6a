#pragma once
/// One blocking TCP connection to a daemon's data port with send/receive
/// timeouts, for the test tools that speak the data protocol by hand
/// (ticket_probe, transporter_probe): Requests, Responses and pull bodies,
/// and the ticket conversions those tools share.

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Sha256.h>
#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/Protocol.h>

#include <BlobStreaming.hh>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace blobstreaming {

/// The data protocol's id of a ticket issued on the control plane.
inline protocol::TicketId ticket_of(const BlobStreaming::TicketId id)
{
    protocol::TicketId out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = id[i];
    return out;
}

/// A ticket id in full, as lower-case hex (32 characters).
inline std::string hex_of(const protocol::TicketId& id)
{
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (const std::uint8_t b : id) {
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
    }
    return out;
}

/// One blocking TCP connection to a data port with send/receive timeouts.
class ProbeConnection {
public:
    /// Connects at once; `io_timeout_seconds` bounds every send and receive.
    ProbeConnection(const std::string& host, unsigned short port, int io_timeout_seconds)
        : io_timeout_seconds_(io_timeout_seconds)
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
        fd_.reset(::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!fd_) throw Error(Errc::io_error, "cannot create a socket for " + where + ": " + std::strerror(errno));
        timeval tv{};
        tv.tv_sec = io_timeout_seconds_;
        ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (::connect(fd_.get(), found->ai_addr, found->ai_addrlen) != 0)
            throw Error(Errc::unreachable, "cannot connect to " + where + ": " + std::strerror(errno));
        where_ = where;
    }

    void send_all(const void* data, std::size_t size)
    {
        const auto* p = static_cast<const std::uint8_t*>(data);
        while (size > 0) {
            const ssize_t n = ::send(fd_.get(), p, size, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) throw Error(Errc::transfer_failed, "send to " + where_ + ": " + std::strerror(errno));
            p += n;
            size -= static_cast<std::size_t>(n);
        }
    }

    /// Reads exactly `size` bytes; Errc::transfer_failed on EOF, error or timeout.
    void recv_exact(void* data, std::size_t size)
    {
        auto* p = static_cast<std::uint8_t*>(data);
        while (size > 0) {
            const ssize_t n = ::recv(fd_.get(), p, size, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n == 0)
                throw Error(Errc::transfer_failed, "receive from " + where_ + ": connection closed by the daemon");
            if (n < 0)
                throw Error(errno == EAGAIN || errno == EWOULDBLOCK ? Errc::timeout : Errc::transfer_failed,
                            "receive from " + where_ + ": " +
                                (errno == EAGAIN || errno == EWOULDBLOCK
                                     ? std::string("no answer within ") + std::to_string(io_timeout_seconds_) + " s"
                                     : std::string(std::strerror(errno))));
            p += n;
            size -= static_cast<std::size_t>(n);
        }
    }

    /// Sends one Request frame (nothing else: a push body follows separately).
    void send_request(protocol::FrameType type, const protocol::TicketId& ticket, std::uint64_t offset,
                      std::uint64_t length)
    {
        std::uint8_t frame[protocol::kRequestSize];
        protocol::encode(protocol::Request{type, ticket, offset, length}, frame);
        send_all(frame, sizeof frame);
    }

    /// Reads a pull body of `length` bytes, feeding them to `hash` if given.
    void receive_body(std::uint64_t length, Sha256* hash = nullptr)
    {
        std::vector<std::uint8_t> buffer(1 << 16);
        for (std::uint64_t left = length; left > 0;) {
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, buffer.size()));
            recv_exact(buffer.data(), n);
            if (hash) hash->update(buffer.data(), n);
            left -= n;
        }
    }

    /// Presents `ticket` for a pull and reads the whole body; returns its
    /// size. A refusal is Error(its status) with the daemon's message.
    std::uint64_t pull(const BlobStreaming::TransferTicket& ticket)
    {
        send_request(protocol::FrameType::pull, ticket_of(ticket.id), ticket.offset, ticket.length);
        const protocol::Response response = read_response();
        if (response.status != Errc::ok)
            throw Error(response.status, "pull refused by the data port: " + response.message);
        receive_body(response.length);
        return response.length;
    }

    protocol::Response read_response()
    {
        std::uint8_t header[protocol::kResponseHeaderSize];
        recv_exact(header, sizeof header);
        protocol::Response response;
        std::size_t message_size = 0;
        std::string why;
        if (auto ec = protocol::decode(header, response, message_size, why))
            throw Error(Errc::protocol_error, "response from " + where_ + ": " + why);
        response.message.resize(message_size);
        if (message_size > 0) recv_exact(response.message.data(), message_size);
        return response;
    }

    /// True when the daemon closes the connection (EOF or reset) within the
    /// I/O timeout without sending anything more.
    bool closed_by_peer()
    {
        pollfd p{fd_.get(), POLLIN, 0};
        const int rc = ::poll(&p, 1, io_timeout_seconds_ * 1000);
        if (rc <= 0) return false;
        std::uint8_t byte = 0;
        const ssize_t n = ::recv(fd_.get(), &byte, 1, 0);
        return n == 0 || (n < 0 && errno == ECONNRESET);
    }

private:
    int io_timeout_seconds_;
    UniqueFd fd_;
    std::string where_;
};

}  // namespace blobstreaming
