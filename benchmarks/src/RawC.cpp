// raw-c: plain BSD sockets, a read()/write() loop of --chunk bytes per call.
// raw-c-durable: the same client and server, the server also storing every
// pushed blob as a durable file before its Ack (DurableFiles.h).
#include "DurableFiles.h"
#include "WireClient.h"

#include <blobstreaming/common/UniqueFd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace blobstreaming::bench {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

sockaddr_in make_address(const std::string& host, std::uint16_t port)
{
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1)
        throw Error(Errc::invalid_argument, "address \"" + host + "\": not an IPv4 address");
    return a;
}

void set_buffers(int fd, int bytes)
{
    if (bytes <= 0) return;  // auto: leave Linux autotuning on
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

int get_buffer(int fd, int option)
{
    int v = 0;
    socklen_t len = sizeof v;
    getsockopt(fd, SOL_SOCKET, option, &v, &len);
    return v;
}

/// A connected socket, read and written in chunks of at most `chunk` bytes.
class RawStream : public wire::ReceiveCalls<RawStream> {
public:
    RawStream(UniqueFd fd, std::size_t chunk) : fd_(std::move(fd)), chunk_(chunk)
    {
        const int one = 1;
        setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    int fd() const { return fd_.get(); }

    void send_all(const void* data, std::size_t size)
    {
        auto p = static_cast<const char*>(data);
        while (size > 0) {
            const ssize_t n = send(fd_.get(), p, std::min(size, chunk_), MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) throw Error(Errc::transfer_failed, "raw-c: send: " + errno_text(errno));
            p += n;
            size -= static_cast<std::size_t>(n);
        }
    }

private:
    friend class wire::ReceiveCalls<RawStream>;

    bool recv_loop(void* data, std::size_t size, bool eof_ok)
    {
        auto p = static_cast<char*>(data);
        const std::size_t total = size;
        while (size > 0) {
            const ssize_t n = read(fd_.get(), p, std::min(size, chunk_));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw Error(Errc::transfer_failed, "raw-c: read: " + errno_text(errno));
            if (n == 0) {
                if (eof_ok && size == total) return false;
                throw Error(Errc::transfer_failed, "raw-c: read: the peer closed the connection mid-message");
            }
            p += n;
            size -= static_cast<std::size_t>(n);
        }
        return true;
    }

    UniqueFd fd_;
    std::size_t chunk_;
};

class RawCClient : public wire::StreamClient<RawStream> {
public:
    void open(const Config& config) override
    {
        UniqueFd fd(socket(AF_INET, SOCK_STREAM, 0));
        if (!fd) throw Error(Errc::transfer_failed, "raw-c: socket: " + errno_text(errno));
        set_buffers(fd.get(), config.socket_buffer);
        const sockaddr_in a = make_address(config.host, config.port);
        if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
            throw Error(Errc::unreachable, "raw-c: connect to " + config.host + ":" + std::to_string(config.port) +
                                               ": " + errno_text(errno));
        auto stream = std::make_unique<RawStream>(std::move(fd), config.chunk);
        info_.send_buffer = get_buffer(stream->fd(), SO_SNDBUF);
        info_.receive_buffer = get_buffer(stream->fd(), SO_RCVBUF);
        start(std::move(stream), config);
    }
};

}  // namespace

std::unique_ptr<ClientTransport> make_raw_c_client() { return std::make_unique<RawCClient>(); }

namespace {

/// The raw-c server loop; `sink` (may be null) also stores pushed blobs.
void serve_raw(const Config& config, const char* variant, wire::PushSink* sink)
{
    const std::string who = std::string(variant) + " server";
    UniqueFd listener(socket(AF_INET, SOCK_STREAM, 0));
    if (!listener) throw Error(Errc::transfer_failed, who + ": socket: " + errno_text(errno));
    const int one = 1;
    setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    set_buffers(listener.get(), config.socket_buffer);  // inherited by accepted sockets
    sockaddr_in a = make_address(config.host, config.port);
    if (bind(listener.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 || listen(listener.get(), 8) != 0)
        throw Error(Errc::transfer_failed, who + ": bind/listen on " + config.host + ":" + std::to_string(config.port) +
                                               ": " + errno_text(errno));
    socklen_t len = sizeof a;
    getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len);
    announce_ready(variant, config.host, ntohs(a.sin_port));
    do {
        UniqueFd fd(accept(listener.get(), nullptr, nullptr));
        if (!fd) {
            if (errno == EINTR) continue;
            throw Error(Errc::transfer_failed, who + ": accept: " + errno_text(errno));
        }
        RawStream stream(std::move(fd), config.chunk);
        wire::serve_reporting(stream, config.corrupt, variant, sink);
    } while (!config.one_off);
}

}  // namespace

void serve_raw_c(const Config& config) { serve_raw(config, "raw-c", nullptr); }

void serve_raw_c_durable(const Config& config)
{
    DurableFiles files(config.durable_dir);
    serve_raw(config, "raw-c-durable", &files);
}

}  // namespace blobstreaming::bench
