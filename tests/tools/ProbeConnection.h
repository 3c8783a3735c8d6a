#pragma once
/// One blocking TCP connection to a daemon's data port with send/receive
/// timeouts, for the test tools that speak the data protocol by hand
/// (ticket_probe, transporter_probe).

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/Protocol.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace blobstreaming {

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
            if (n == 0) throw Error(Errc::transfer_failed, "receive from " + where_ + ": connection closed by the daemon");
            if (n < 0)
                throw Error(errno == EAGAIN || errno == EWOULDBLOCK ? Errc::timeout : Errc::transfer_failed,
                            "receive from " + where_ + ": " +
                                (errno == EAGAIN || errno == EWOULDBLOCK ? std::string("no answer within ") +
                                                                               std::to_string(io_timeout_seconds_) + " s"
                                                                         : std::string(std::strerror(errno))));
            p += n;
            size -= static_cast<std::size_t>(n);
        }
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
