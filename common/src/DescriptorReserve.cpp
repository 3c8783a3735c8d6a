#include "blobstreaming/common/DescriptorReserve.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>

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
    IdleDescriptors::release_all();  // what is open only to save work goes first
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

namespace {

struct IdleHolders {
    std::mutex mutex;
    std::uint64_t next = 1;
    std::map<std::uint64_t, IdleDescriptors::Release> releases;
};

IdleHolders& idle_holders()
{
    static auto* holders = new IdleHolders;  // never destroyed: registrations may outlive statics
    return *holders;
}

}  // namespace

IdleDescriptors::Registration& IdleDescriptors::Registration::operator=(Registration&& other) noexcept
{
    if (this != &other) {
        Registration gone(id_);
        id_ = other.id_;
        other.id_ = 0;
    }
    return *this;
}

IdleDescriptors::Registration::~Registration()
{
    if (id_ == 0) return;
    auto& holders = idle_holders();
    std::lock_guard lock(holders.mutex);
    holders.releases.erase(id_);
}

IdleDescriptors::Registration IdleDescriptors::add(Release release)
{
    auto& holders = idle_holders();
    std::lock_guard lock(holders.mutex);
    const std::uint64_t id = holders.next++;
    holders.releases.emplace(id, std::move(release));
    return Registration(id);
}

std::size_t IdleDescriptors::release_all() noexcept
{
    auto& holders = idle_holders();
    std::lock_guard lock(holders.mutex);
    std::size_t dropped = 0;
    for (auto& [id, release] : holders.releases) {
        try {
            dropped += release();
        } catch (...) {  // a holder that cannot release keeps its descriptors
        }
    }
    return dropped;
}

}  // namespace blobstreaming
