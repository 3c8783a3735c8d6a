#include "ListenPort.h"

#include <blobstreaming/common/Error.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace blobstreaming::dicom {

namespace {

unsigned port_of(const sockaddr_storage& address)
{
    if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
    if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
    return 0;
}

/// The port of a listening TCP socket `fd` of this process, or 0.
unsigned listening_port(int fd)
{
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
    int accepting = 0;
    socklen_t length = sizeof accepting;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length) != 0 || !accepting) return 0;
    sockaddr_storage address{};
    length = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
    return port_of(address);
}

/// True when a socket of this process other than `except` listens on `port`.
bool process_listens_on(unsigned port, int except)
{
    DIR* fds = ::opendir("/proc/self/fd");
    if (!fds) return false;
    bool found = false;
    while (const dirent* entry = ::readdir(fds)) {
        char* end = nullptr;
        const long fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || fd == except || fd == ::dirfd(fds)) continue;
        if (listening_port(static_cast<int>(fd)) == port) {
            found = true;
            break;
        }
    }
    ::closedir(fds);
    return found;
}

[[noreturn]] void refuse(unsigned port, const char* what, int err)
{
    throw Error(Errc::unreachable, "cannot listen for associations on port " + std::to_string(port) + ": " + what +
                                       ": " + std::strerror(err));
}

}  // namespace

PortReservation::PortReservation(unsigned port, const std::string& ip)
{
    // A dual-stack socket holds the port for IPv4 and IPv6 alike; IPv4 alone
    // where the host has no IPv6, or for one address.
    int family = ip.empty() ? AF_INET6 : AF_INET;
    fd_ = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0 && errno == EAFNOSUPPORT && family == AF_INET6) {
        family = AF_INET;
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    }
    if (fd_ < 0) refuse(port, "socket", errno);
    const int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage address{};
    socklen_t length = 0;
    if (family == AF_INET6) {
        auto& a = reinterpret_cast<sockaddr_in6&>(address);
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(static_cast<std::uint16_t>(port));
        a.sin6_addr = in6addr_any;
        length = sizeof a;
    } else {
        auto& a = reinterpret_cast<sockaddr_in&>(address);
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        if (!ip.empty()) ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);  // checked by the options
        length = sizeof a;
    }
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
        const int err = errno;
        ::close(fd_);
        refuse(port, "bind", err);
    }
    length = sizeof address;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        const int err = errno;
        ::close(fd_);
        refuse(port, "getsockname", err);
    }
    port_ = port_of(address);
}

PortReservation::~PortReservation()
{
    if (fd_ >= 0) ::close(fd_);
}

bool PortReservation::await_listener(const std::atomic<bool>& listener_ended, std::chrono::milliseconds limit)
{
    // The listener thread offers no callback when it listens: its socket is looked for,
    // which takes well under a millisecond once it is there.
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!process_listens_on(port_, fd_)) {
        if (listener_ended.load() || std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ::close(fd_);
    fd_ = -1;
    return true;
}

}  // namespace blobstreaming::dicom
