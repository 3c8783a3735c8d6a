#include "NoticeDispatcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace blobstreaming::server {
namespace {

double seconds(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

}  // namespace

NoticeDispatcher::NoticeDispatcher(NoticeLimits limits) : limits_(limits)
{
    thread_ = std::thread([this] { run(); });
}

NoticeDispatcher::~NoticeDispatcher() { stop(); }

bool NoticeDispatcher::post(const std::shared_ptr<NoticeSink>& sink, const TransferOutcome& notice) noexcept
{
    if (!sink) return false;
    try {
        std::lock_guard<std::mutex> lock(mutex_);
        const std::string& endpoint = sink->endpoint();
        if (stopping_) {
            ++stats_.dropped_stopped;
            return false;  // the thread is gone: nobody reports any more
        }
        if (suspended_locked(endpoint, Clock::now())) {
            ++stats_.dropped_unreachable;
            drop_locked(endpoint, "unreachable (" + suspended_.at(endpoint).why + ")", 1);
            return false;
        }
        auto it = channels_.find(sink.get());
        const std::size_t mine = it == channels_.end() ? 0 : it->second.queue.size();
        if (mine >= limits_.per_observer || stats_.queued >= limits_.total) {
            ++stats_.dropped_full;
            drop_locked(endpoint,
                        "its queue is full (" + std::to_string(limits_.per_observer) + " notices per observer, " +
                            std::to_string(limits_.total) + " in all, are kept)",
                        1);
            return false;
        }
        if (it == channels_.end()) {
            it = channels_.emplace(sink.get(), Channel{sink, {}}).first;
            turns_.push_back(sink.get());
        }  // else: it has its turn already, or is in flight and takes the next one after it
        it->second.queue.push_back(notice);
        ++stats_.queued;
    } catch (...) {
        return false;  // out of memory: the notice is lost, the data plane goes on
    }
    wake_.notify_one();
    return true;
}

bool NoticeDispatcher::suspended_locked(const std::string& endpoint, Clock::time_point now) const
{
    auto it = suspended_.find(endpoint);
    return it != suspended_.end() && now < it->second.until;
}

void NoticeDispatcher::fail_locked(const std::shared_ptr<NoticeSink>& sink, const std::string& why,
                                   Clock::time_point now)
{
    const std::string& endpoint = sink->endpoint();
    Suspension& s = suspended_[endpoint];
    s.period = s.period.count() == 0 ? limits_.retry_after : std::min(2 * s.period, limits_.max_retry_after);
    s.until = now + s.period;
    s.why = why;
    spdlog::warn("transfer notices: the observer at {} did not take a notice ({}): notices to it are dropped "
                 "for {} s",
                 endpoint, why, seconds(s.period));
    // What is queued for the same endpoint would fail the same way.
    std::uint64_t dropped = 0;
    for (auto it = channels_.begin(); it != channels_.end();) {
        if (it->second.sink->endpoint() != endpoint) {
            ++it;
            continue;
        }
        dropped += it->second.queue.size();
        stats_.queued -= it->second.queue.size();
        turns_.erase(std::remove(turns_.begin(), turns_.end(), it->first), turns_.end());
        it = channels_.erase(it);
    }
    ++stats_.failed;
    stats_.dropped_unreachable += dropped;
    drop_locked(endpoint, "unreachable (" + why + ")", 1 + dropped);
}

void NoticeDispatcher::drop_locked(const std::string& endpoint, const std::string& reason, std::uint64_t count)
{
    unreported_[{endpoint, reason}].count += count;
}

void NoticeDispatcher::report_locked(Clock::time_point now, bool all)
{
    for (auto it = unreported_.begin(); it != unreported_.end();) {
        auto last = last_report_.find(it->first);
        if (!all && last != last_report_.end() && now < last->second + limits_.report_every) {
            ++it;
            continue;
        }
        spdlog::warn("transfer notices: {} not delivered to the observer at {}: {}", it->second.count, it->first.first,
                     it->first.second);
        last_report_[it->first] = now;
        it = unreported_.erase(it);
    }
    // Forget what no longer limits anything, so that these maps stay small.
    for (auto it = last_report_.begin(); it != last_report_.end();)
        it = now >= it->second + limits_.report_every ? last_report_.erase(it) : std::next(it);
    for (auto it = suspended_.begin(); it != suspended_.end();)
        it = now >= it->second.until + limits_.max_retry_after ? suspended_.erase(it) : std::next(it);
}

void NoticeDispatcher::run() noexcept
{
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        const auto now = Clock::now();
        report_locked(now, false);
        if (stopping_) break;
        if (turns_.empty()) {
            // Sleep until a notice comes or a deferred report is due.
            auto due = Clock::time_point::max();
            for (const auto& [key, unreported] : unreported_) {
                auto last = last_report_.find(key);
                if (last != last_report_.end()) due = std::min(due, last->second + limits_.report_every);
            }
            if (due == Clock::time_point::max()) wake_.wait(lock);
            else wake_.wait_until(lock, due);
            continue;
        }
        const NoticeSink* key = turns_.front();
        turns_.pop_front();
        Channel& channel = channels_.at(key);
        const std::shared_ptr<NoticeSink> sink = channel.sink;
        const TransferOutcome notice = std::move(channel.queue.front());
        channel.queue.pop_front();
        --stats_.queued;
        lock.unlock();
        const std::string why = sink->deliver(notice);
        lock.lock();
        if (why.empty()) {
            ++stats_.delivered;
            suspended_.erase(sink->endpoint());
            // Its next notice waits for the turns of those that came meanwhile.
            auto it = channels_.find(key);
            if (it->second.queue.empty()) channels_.erase(it);
            else turns_.push_back(key);
        } else {
            fail_locked(sink, why, Clock::now());  // drops its channel too
        }
    }
    // Stopping: what is still queued is not delivered any more.
    for (auto& [key, channel] : channels_) {
        stats_.dropped_stopped += channel.queue.size();
        stats_.queued -= channel.queue.size();
        drop_locked(channel.sink->endpoint(), "the daemon is stopping", channel.queue.size());
    }
    channels_.clear();
    turns_.clear();
    report_locked(Clock::now(), true);
}

void NoticeDispatcher::stop() noexcept
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

NoticeStats NoticeDispatcher::stats() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
}

}  // namespace blobstreaming::server
