#include <blobstreaming/transporter/SocketOptions.h>

#include <blobstreaming/transporter/Log.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace blobstreaming {

GrantedSocketOptions apply_socket_options(int fd, const SocketOptions& o, const std::string& peer)
{
    auto set = [&](int level, int name, int value, const char* label) {
        if (::setsockopt(fd, level, name, &value, sizeof value) != 0)
            library_log()->warn("data connection {}: cannot set {}={}: {}", peer, label, value, std::strerror(errno));
    };
    if (o.send_buffer > 0) set(SOL_SOCKET, SO_SNDBUF, o.send_buffer, "SO_SNDBUF");
    if (o.receive_buffer > 0) set(SOL_SOCKET, SO_RCVBUF, o.receive_buffer, "SO_RCVBUF");
    set(IPPROTO_TCP, TCP_NODELAY, o.no_delay ? 1 : 0, "TCP_NODELAY");

    GrantedSocketOptions granted;
    socklen_t len = sizeof granted.send_buffer;
    ::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &granted.send_buffer, &len);
    len = sizeof granted.receive_buffer;
    ::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &granted.receive_buffer, &len);
    if (o.send_buffer > 0 || o.receive_buffer > 0)
        library_log()->info("data connection {}: socket buffers requested send={} receive={}, kernel granted "
                            "send={} receive={}",
                            peer, o.send_buffer, o.receive_buffer, granted.send_buffer, granted.receive_buffer);
    return granted;
}

void ignore_sigpipe()
{
    struct sigaction sa {};
    sa.sa_handler = SIG_IGN;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(SIGPIPE, &sa, nullptr);
}

}  // namespace blobstreaming
