#include "DataAcceptor.h"

#include "ServerConnection.h"

#include <ace/Reactor.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace blobstreaming::server {
namespace {

/// Connections one dispatch may accept before yielding to the others.
constexpr int kAcceptBurst = 64;
/// How long the port is not watched after running out of descriptors.
constexpr std::chrono::milliseconds kOutOfDescriptorsPause{100};
/// ... and after an unexpected accept error.
constexpr std::chrono::milliseconds kErrorPause{250};

std::string ip_of(const sockaddr_storage& a)
{
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, text, sizeof text);
    } else if (a.ss_family == AF_INET6) {
        const auto& a6 = reinterpret_cast<const sockaddr_in6&>(a);
        if (IN6_IS_ADDR_V4MAPPED(&a6.sin6_addr))  // one peer, one key, whichever family it came by
            ::inet_ntop(AF_INET, &a6.sin6_addr.s6_addr[12], text, sizeof text);
        else ::inet_ntop(AF_INET6, &a6.sin6_addr, text, sizeof text);
    }
    return text[0] ? text : "unknown";
}

/// Errors that end only the connection being accepted (accept(2): Linux
/// passes pending network errors of the new socket on): try the next one.
bool connection_gone(int err)
{
    switch (err) {
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETDOWN:
    case ENETUNREACH:
    case EPERM: return true;
    default: return false;
    }
}

int accept_one(int listener, sockaddr_storage* from)
{
    socklen_t len = sizeof *from;
    return ::accept4(listener, reinterpret_cast<sockaddr*>(from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

}  // namespace

DataAcceptor::DataAcceptor(DataServer::Impl& server) : server_(server) {}

DataAcceptor::~DataAcceptor() { close(); }

bool DataAcceptor::open(const ACE_INET_Addr& addr, ACE_Reactor* r)
{
    const auto* sa = static_cast<const sockaddr*>(addr.get_addr());
    listener_.reset(::socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!listener_) return false;
    const int one = 1;
    ::setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // The socket buffers go on the listener, before listen(2) (tcp(7)):
    // an accepted connection takes its receive window's bound from the
    // listener's buffer at the handshake. Set on the accepted socket
    // only, a larger buffer never widened the window past 64 KiB: pushes
    // ran at a third of the link on a 20 ms round trip. ServerConnection
    // sets them again (and logs what the kernel granted).
    const SocketOptions& socket = server_.config.socket;
    if (socket.receive_buffer > 0)
        ::setsockopt(listener_.get(), SOL_SOCKET, SO_RCVBUF, &socket.receive_buffer, sizeof socket.receive_buffer);
    if (socket.send_buffer > 0)
        ::setsockopt(listener_.get(), SOL_SOCKET, SO_SNDBUF, &socket.send_buffer, sizeof socket.send_buffer);
    if (::bind(listener_.get(), sa, static_cast<socklen_t>(addr.get_addr_size())) != 0 ||
        ::listen(listener_.get(), SOMAXCONN) != 0) {
        const int err = errno;
        listener_.reset();
        errno = err;
        return false;
    }
    reserve_.refill();
    reactor(r);
    if (r->register_handler(this, ACE_Event_Handler::ACCEPT_MASK) == -1) {
        const int err = errno;
        listener_.reset();
        errno = err;
        return false;
    }
    registered_ = true;
    return true;
}

void DataAcceptor::close() noexcept
{
    if (pause_timer_ != -1 && reactor()) reactor()->cancel_timer(pause_timer_);
    pause_timer_ = -1;
    if (registered_ && reactor())
        reactor()->remove_handler(this, ACE_Event_Handler::ACCEPT_MASK | ACE_Event_Handler::DONT_CALL);
    registered_ = false;
    listener_.reset();
}

std::uint16_t DataAcceptor::port() const
{
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
    if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
    if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
    return 0;
}

int DataAcceptor::handle_input(ACE_HANDLE)
{
    for (int i = 0; i < kAcceptBurst; ++i) {
        sockaddr_storage from{};
        UniqueFd fd(accept_one(listener_.get(), &from));
        if (fd) {
            admit(std::move(fd), ip_of(from));
            continue;
        }
        const int err = errno;
        if (err == EAGAIN || err == EWOULDBLOCK) break;
        if (connection_gone(err)) continue;
        if (blobstreaming::out_of_descriptors(err)) {
            shed_pending(err);
            return 0;
        }
        if (server_.accept_log.allow())
            spdlog::error("data port: accept failed: {}; accepting again in {} ms", std::strerror(err),
                          kErrorPause.count());
        pause(kErrorPause);
        return 0;
    }
    resume();
    return 0;
}

void DataAcceptor::admit(UniqueFd fd, const std::string& ip)
{
    auto& limits = server_.limits;
    switch (limits.assess(ip)) {
    case ConnectionLimits<ServerConnection>::Verdict::refuse_peer_cap:
        if (server_.refused_log.allow())
            spdlog::warn("data connection from {}: refused: {} connections from this address have not presented "
                         "a ticket yet (cap {})",
                         ip, limits.unauthenticated_from(ip), limits.caps().unauthenticated_per_peer);
        return;  // closes fd
    case ConnectionLimits<ServerConnection>::Verdict::refuse_full:
        if (server_.refused_log.allow())
            spdlog::warn("data connection from {}: refused: all {} data connection slots are taken by transfers", ip,
                         limits.caps().connections);
        return;
    case ConnectionLimits<ServerConnection>::Verdict::admit_after_eviction:
        limits.oldest_unauthenticated()->evict(ip);
        break;
    case ConnectionLimits<ServerConnection>::Verdict::admit: break;
    }
    auto* c = new ServerConnection(&server_, ip);
    c->reactor(reactor());
    c->peer().set_handle(fd.release());
    if (c->open(this) == -1) c->close(CLOSE_DURING_NEW_CONNECTION);  // deletes it
}

void DataAcceptor::shed_pending(int err)
{
    // The pending clients would wait in the backlog until their own timeout
    // and keep the port readable (a busy loop): accept and close them with
    // the descriptor kept in reserve for that.
    const int dropped = reserve_.shed_pending(listener_.get(), kAcceptBurst);
    if (server_.accept_log.allow())
        spdlog::error("data port: out of descriptors ({}) with {} data connection(s) open: closed {} pending "
                      "connection(s){}; accepting again in {} ms",
                      std::strerror(err), server_.connections.size(), dropped,
                      reserve_.held() > 0 ? "" : " (no descriptor in reserve)", kOutOfDescriptorsPause.count());
    pause(kOutOfDescriptorsPause);
}

void DataAcceptor::pause(std::chrono::milliseconds how_long)
{
    if (pause_timer_ != -1) return;
    ACE_Time_Value delay;
    delay.msec(static_cast<long>(how_long.count()));
    pause_timer_ = reactor()->schedule_timer(this, nullptr, delay);
    if (pause_timer_ == -1) resume();  // cannot pause: better busy than deaf
}

int DataAcceptor::handle_timeout(const ACE_Time_Value&, const void*)
{
    pause_timer_ = -1;
    reserve_.refill();
    resume();
    return 0;
}

void DataAcceptor::resume()
{
    if (registered_ && reactor()->resume_handler(this) == -1 && server_.accept_log.allow())
        spdlog::error("data port: cannot watch the listening socket again: {}", std::strerror(errno));
}

}  // namespace blobstreaming::server
