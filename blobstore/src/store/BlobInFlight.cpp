/// BlobInFlight (BlobInFlight.h): followers of a Blob being received.
#include <blobstreaming/blobstore/BlobInFlight.h>

#include <algorithm>

namespace blobstreaming {

void BlobInFlight::attach(const Reservation* reservation)
{
    std::unique_lock guard(access_);
    reservation_ = reservation;
}

void BlobInFlight::landed(std::uint64_t total)
{
    std::unique_lock lock(mutex_);
    landed_ = total;
    wake_all(lock);
}

void BlobInFlight::detach()
{
    std::unique_lock guard(access_);
    reservation_ = nullptr;
}

void BlobInFlight::finish(const BlobInfo& info)
{
    std::unique_lock lock(mutex_);
    if (phase_ != Phase::receiving) return;
    phase_ = Phase::committed;
    committed_ = info;
    wake_all(lock);
}

void BlobInFlight::fail(Errc code, std::string reason)
{
    std::unique_lock lock(mutex_);
    if (phase_ != Phase::receiving) return;
    phase_ = Phase::failed;
    code_ = code;
    reason_ = std::move(reason);
    wake_all(lock);
}

void BlobInFlight::wake_all(std::unique_lock<std::mutex>& lock)
{
    std::vector<std::function<void()>> wake;
    wake.swap(waiting_);
    lock.unlock();
    for (auto& w : wake) w();
}

BlobInFlight::Read BlobInFlight::read(std::uint64_t offset, std::uint8_t* out, std::size_t max,
                                      std::function<void()> wake)
{
    std::size_t n = 0;
    {
        std::lock_guard lock(mutex_);
        if (phase_ == Phase::committed) return {State::committed, 0};
        if (phase_ == Phase::failed) return {State::failed, 0};
        if (readable_ && offset < landed_) n = static_cast<std::size_t>(std::min<std::uint64_t>(max, landed_ - offset));
        if (n == 0) {
            waiting_.push_back(std::move(wake));
            return {State::wait, 0};
        }
    }
    std::error_code ec;
    bool detached = false;
    {
        std::shared_lock guard(access_);
        if (reservation_) ec = reservation_->read_back(offset, out, n);
        else detached = true;  // committing, or gone: the phase says what next
    }
    if (!detached && !ec) return {State::bytes, n};
    std::lock_guard lock(mutex_);
    // A store that cannot read its reservation back (or a read that
    // failed): the followers are served from the commit.
    if (!detached) readable_ = false;
    if (phase_ == Phase::committed) return {State::committed, 0};
    if (phase_ == Phase::failed) return {State::failed, 0};
    waiting_.push_back(std::move(wake));
    return {State::wait, 0};
}

bool BlobInFlight::receiving() const
{
    std::lock_guard lock(mutex_);
    return phase_ == Phase::receiving;
}

bool BlobInFlight::failed() const
{
    std::lock_guard lock(mutex_);
    return phase_ == Phase::failed;
}

BlobInfo BlobInFlight::committed() const
{
    std::lock_guard lock(mutex_);
    return committed_;
}

Error BlobInFlight::error() const
{
    std::lock_guard lock(mutex_);
    return Error(code_, reason_);
}

std::uint64_t BlobInFlight::landed() const
{
    std::lock_guard lock(mutex_);
    return landed_;
}

}  // namespace blobstreaming
