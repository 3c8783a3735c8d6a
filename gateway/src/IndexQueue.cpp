#include "IndexQueue.h"

#include <exception>

namespace blobstreaming::dicom {

IndexQueue::IndexQueue(StudyIndex& index) : index_(index), writer_([this] { run(); }) {}

IndexQueue::~IndexQueue()
{
    wait_written();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    queued_cv_.notify_all();
    writer_.join();
}

void IndexQueue::push(InstanceRecord record, Written written)
{
    std::unique_lock<std::mutex> lock(mutex_);
    written_cv_.wait(lock, [this] { return entries_.size() < kMaxQueued; });
    entries_.push_back({std::move(record), std::move(written)});
    ++queued_;
    lock.unlock();
    queued_cv_.notify_one();
}

void IndexQueue::wait_written()
{
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t target = queued_;
    written_cv_.wait(lock, [this, target] { return written_ >= target; });
}

bool IndexQueue::drain(std::chrono::milliseconds bound)
{
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t target = queued_;
    return written_cv_.wait_for(lock, bound, [this, target] { return written_ >= target; });
}

void IndexQueue::run() noexcept
{
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        queued_cv_.wait(lock, [this] { return stopping_ || !entries_.empty(); });
        if (entries_.empty()) return;  // stopping, nothing left
        {
            // Destroyed before the count moves: what the callback holds
            // (the Blob's "being stored" mark) goes with it.
            Entry entry = std::move(entries_.front());
            entries_.pop_front();
            lock.unlock();
            std::string conflict, error;
            const auto started = std::chrono::steady_clock::now();
            try {
                conflict = index_.put(entry.record);
            } catch (const std::exception& e) {
                error = e.what();
            }
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            if (entry.written) entry.written(conflict, error, seconds);
        }
        lock.lock();
        ++written_;
        written_cv_.notify_all();
    }
}

}  // namespace blobstreaming::dicom
