// ace: ACE_SOCK_Stream send_n()/recv_n() of --chunk bytes per call,
// ACE_SOCK_Connector / ACE_SOCK_Acceptor for the connection.
#include "WireClient.h"

#include <ace/INET_Addr.h>
#include <ace/SOCK_Acceptor.h>
#include <ace/SOCK_Connector.h>
#include <ace/SOCK_Stream.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace blobstreaming::bench {
namespace {

std::string errno_text() { return std::strerror(errno); }

void set_buffers(ACE_SOCK& socket, int bytes)
{
    if (bytes <= 0) return;
    socket.set_option(SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    socket.set_option(SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

int get_buffer(const ACE_SOCK& socket, int option)
{
    int v = 0;
    int len = sizeof v;
    socket.get_option(SOL_SOCKET, option, &v, &len);
    return v;
}

/// Owns an ACE_SOCK_Stream (closed on destruction); moves bytes with
/// send_n/recv_n in calls of at most `chunk` bytes.
class AceStream : public wire::ReceiveCalls<AceStream> {
public:
    explicit AceStream(std::size_t chunk) : chunk_(chunk) {}
    ~AceStream() { stream_.close(); }
    AceStream(const AceStream&) = delete;
    AceStream& operator=(const AceStream&) = delete;

    ACE_SOCK_Stream& peer() { return stream_; }

    void no_delay()
    {
        int one = 1;
        stream_.set_option(IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }

    void send_all(const void* data, std::size_t size)
    {
        auto p = static_cast<const char*>(data);
        while (size > 0) {
            const std::size_t n = std::min(size, chunk_);
            size_t sent = 0;
            if (stream_.send_n(p, n, nullptr, &sent) != static_cast<ssize_t>(n))
                throw Error(Errc::transfer_failed, "ace: send_n: " + errno_text());
            p += n;
            size -= n;
        }
    }

private:
    friend class wire::ReceiveCalls<AceStream>;

    bool recv_loop(void* data, std::size_t size, bool eof_ok)
    {
        auto p = static_cast<char*>(data);
        const std::size_t total = size;
        while (size > 0) {
            const std::size_t n = std::min(size, chunk_);
            size_t got = 0;
            const ssize_t r = stream_.recv_n(p, n, nullptr, &got);
            if (r == 0 && got == 0 && eof_ok && size == total) return false;
            if (r != static_cast<ssize_t>(n))
                throw Error(Errc::transfer_failed,
                            r == 0 ? std::string("ace: recv_n: the peer closed the connection mid-message")
                                   : "ace: recv_n: " + errno_text());
            p += n;
            size -= n;
        }
        return true;
    }

    ACE_SOCK_Stream stream_;
    std::size_t chunk_;
};

class AceClient : public wire::StreamClient<AceStream> {
public:
    void open(const Config& config) override
    {
        auto stream = std::make_unique<AceStream>(config.chunk);
        // open() the socket first so that the buffers are set before the SYN.
        if (stream->peer().open(SOCK_STREAM, AF_INET, 0, 0) == -1)
            throw Error(Errc::transfer_failed, "ace: open socket: " + errno_text());
        set_buffers(stream->peer(), config.socket_buffer);
        ACE_INET_Addr address(config.port, config.host.c_str(), AF_INET);
        ACE_SOCK_Connector connector;
        ACE_Time_Value timeout(10);
        if (connector.connect(stream->peer(), address, &timeout) == -1)
            throw Error(Errc::unreachable,
                        "ace: connect to " + config.host + ":" + std::to_string(config.port) + ": " + errno_text());
        stream->no_delay();
        info_.send_buffer = get_buffer(stream->peer(), SO_SNDBUF);
        info_.receive_buffer = get_buffer(stream->peer(), SO_RCVBUF);
        start(std::move(stream), config);
    }
};

}  // namespace

std::unique_ptr<ClientTransport> make_ace_client() { return std::make_unique<AceClient>(); }

void serve_ace(const Config& config)
{
    ACE_INET_Addr address(config.port, config.host.c_str(), AF_INET);
    ACE_SOCK_Acceptor acceptor;
    if (acceptor.open(address, 1, AF_INET) == -1)
        throw Error(Errc::transfer_failed,
                    "ace server: listen on " + config.host + ":" + std::to_string(config.port) + ": " + errno_text());
    set_buffers(acceptor, config.socket_buffer);  // inherited by accepted sockets
    ACE_INET_Addr bound;
    acceptor.get_local_addr(bound);
    announce_ready("ace", config.host, bound.get_port_number());
    do {
        AceStream stream(config.chunk);
        if (acceptor.accept(stream.peer()) == -1) {
            if (errno == EINTR) continue;
            throw Error(Errc::transfer_failed, "ace server: accept: " + errno_text());
        }
        stream.no_delay();
        wire::serve_reporting(stream, config.corrupt, "ace");
    } while (!config.one_off);
    acceptor.close();
}

}  // namespace blobstreaming::bench
