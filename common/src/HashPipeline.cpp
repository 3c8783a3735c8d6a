#include <blobstreaming/common/HashPipeline.h>

#include <algorithm>
#include <system_error>

namespace blobstreaming {

namespace {

/// The helper looks at its stop flag, and reports progress to
/// wait_hashed(), between pieces of this size (~0.5 ms).
constexpr std::size_t kPiece = std::size_t{1} << 20;

}  // namespace

void HashPipeline::reset(ChecksumState initial)
{
    stop();
    state_ = std::move(initial);
    submitted_ = 0;
    hashed_count_ = 0;
}

void HashPipeline::run_in_background() noexcept
{
    if (worker_.joinable() || state_.algorithm() != ChecksumAlgorithm::sha256) return;
    closing_ = false;
    abandon_ = false;
    queue_.clear();
    try {
        worker_ = std::thread([this] { work(); });
    } catch (const std::system_error&) {
        // No thread to be had (a process at its limit): hash inline.
    }
}

void HashPipeline::update(const std::uint8_t* data, std::size_t size)
{
    if (size == 0) return;
    submitted_ += size;
    if (!worker_.joinable()) {
        state_.update(data, size);
        hashed_count_ = submitted_;
        hashed_on_ = std::this_thread::get_id();
        return;
    }
    {
        std::lock_guard lock(mutex_);
        // A buffer filled front to back arrives as adjacent ranges: one entry.
        if (!queue_.empty() && queue_.back().first + queue_.back().second == data) queue_.back().second += size;
        else queue_.emplace_back(data, size);
    }
    wake_.notify_one();
}

void HashPipeline::wait_hashed(std::uint64_t position)
{
    if (!worker_.joinable()) return;
    position = std::min(position, submitted_);
    std::unique_lock lock(mutex_);
    hashed_.wait(lock, [&] { return hashed_count_ >= position; });
}

std::thread::id HashPipeline::hashed_on() const
{
    std::lock_guard lock(mutex_);
    return hashed_on_;
}

void HashPipeline::settle() noexcept { end_worker(true); }

Checksum HashPipeline::finish()
{
    end_worker(true);
    return state_.finish();
}

void HashPipeline::stop() noexcept
{
    end_worker(false);
    queue_.clear();
}

void HashPipeline::end_worker(bool drain) noexcept
{
    if (!worker_.joinable()) return;
    {
        std::lock_guard lock(mutex_);
        (drain ? closing_ : abandon_) = true;
    }
    wake_.notify_one();
    worker_.join();
}

void HashPipeline::work()
{
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return abandon_ || closing_ || !queue_.empty(); });
        if (abandon_ || queue_.empty()) return;  // abandoned, or closing with nothing left
        Range& front = queue_.front();
        const std::size_t n = std::min(front.second, kPiece);
        const std::uint8_t* data = front.first;
        front.first += n;
        front.second -= n;
        if (front.second == 0) queue_.pop_front();
        lock.unlock();
        state_.update(data, n);
        lock.lock();
        hashed_count_ += n;
        hashed_on_ = std::this_thread::get_id();
        hashed_.notify_all();
    }
}

}  // namespace blobstreaming
