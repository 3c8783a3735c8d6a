#include "blobstreaming/common/DescriptorReserve.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace blobstreaming {

bool out_of_descriptors(int err) noexcept { return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM; }

DescriptorReserve::DescriptorReserve() noexcept { refill(); }

DescriptorReserve::~DescriptorReserve()
{
    for (const int fd : fds_)
        if (fd >= 0) ::close(fd);
}

void DescriptorReserve::refill() noexcept
{
    for (int& fd : fds_)
        if (fd < 0) fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

std::size_t DescriptorReserve::held() const noexcept
{
    std::size_t n = 0;
    for (const int fd : fds_) n += fd >= 0 ? 1 : 0;
    return n;
}

int DescriptorReserve::shed_pending(int listener, int limit) noexcept
{
    refill();  // descriptors may have been freed since the last time
    bool freed = false;
    for (int& fd : fds_) {
        if (fd < 0) continue;
        ::close(fd);
        fd = -1;
        freed = true;
    }
    int closed = 0;
    for (int tries = 0; freed && closed < limit && tries < 2 * limit; ++tries) {
        pollfd p{listener, POLLIN, 0};
        if (::poll(&p, 1, 0) != 1 || (p.revents & POLLIN) == 0) break;  // nothing pending
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            ::close(fd);
            ++closed;
        } else if (errno != ECONNABORTED && errno != EINTR && errno != EPROTO) {
            break;  // still out of descriptors, or the listener failed
        }
    }
    refill();
    return closed;
}

}  // namespace blobstreaming
