#include <blobstreaming/transporter/daemon/NoticeDispatcher.h>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace blobstreaming::daemon {
namespace {

double seconds(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

}  // namespace

NoticeDispatcher::NoticeDispatcher(NoticeLimits limits) : limits_(limits)
{
    std::lock_guard<std::mutex> lock(mutex_);
    for (unsigned i = 0; i < std::max(1u, limits_.threads); ++i) start_worker_locked(Lane::any);
    for (unsigned i = 0; i < limits_.prompt_threads; ++i) start_worker_locked(Lane::prompt);
    if (limits_.prompt_threads > 0) supervisor_ = std::thread([this] { supervise(); });
}

void NoticeDispatcher::start_worker_locked(Lane lane)
{
    Worker& worker = workers_.emplace_back();
    worker.lane = lane;
    worker.thread = std::thread([this, &worker] { run(worker); });
}

void NoticeDispatcher::supervise() noexcept
{
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
        const auto now = Clock::now();
        auto due = Clock::time_point::max();
        std::size_t replaced_running = 0;
        for (auto it = workers_.begin(); it != workers_.end();) {
            if (it->done) {  // a replaced thread that ended: it only returns now
                it->thread.join();
                it = workers_.erase(it);
                continue;
            }
            if (it->replaced) ++replaced_running;
            ++it;
        }
        for (Worker& w : workers_) {
            if (!w.delivering || w.replaced) continue;
            const auto overdue = w.started + limits_.prompt_within;
            if (now < overdue) {
                due = std::min(due, overdue);
                continue;
            }
            if (replaced_running >= limits_.max_replaced) continue;  // it waits for its call timeout
            w.replaced = true;
            ++replaced_running;
            ++stats_.replaced;
            prompt_.erase(w.endpoint);  // not prompt any more: its next notices go to the other threads
            spdlog::info("notices: the delivery to {} takes longer than {} ms: another thread takes its place "
                         "meanwhile",
                         w.endpoint, limits_.prompt_within.count());
            try {
                start_worker_locked(w.lane);
            } catch (...) {
                // no thread to be had: the prompt ones wait for this delivery
            }
        }
        if (due == Clock::time_point::max()) supervisor_wake_.wait(lock);
        else supervisor_wake_.wait_until(lock, due);
    }
}

NoticeDispatcher::~NoticeDispatcher() { stop(); }

bool NoticeDispatcher::post(const std::shared_ptr<NoticeSink>& sink, Notice notice) noexcept
{
    if (!sink) return false;
    try {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!post_locked(sink, std::move(notice))) return false;
    } catch (...) {
        return false;  // out of memory: the notice is lost, the data plane goes on
    }
    wake_.notify_all();  // the threads of one lane cannot take the other's turns
    return true;
}

std::size_t NoticeDispatcher::post_all(const std::vector<std::shared_ptr<NoticeSink>>& sinks,
                                       const Notice& notice) noexcept
{
    std::size_t queued = 0;
    bool told = false;  // a drop has to be told to its sink by a thread
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& sink : sinks) {
            if (!sink) continue;
            try {
                if (post_locked(sink, notice)) ++queued;
                else told = true;
            } catch (...) {
                // out of memory: this copy is lost, the others and the data plane go on
            }
        }
    }
    if (queued > 0 || told) wake_.notify_all();
    return queued;
}

bool NoticeDispatcher::post_locked(const std::shared_ptr<NoticeSink>& sink, Notice notice)
{
    const std::string& endpoint = sink->endpoint();
    if (stopping_) {
        ++stats_.dropped_stopped;
        return false;  // the threads are gone: nobody reports any more
    }
    if (suspended_locked(endpoint, Clock::now())) {
        ++stats_.dropped_unreachable;
        const std::string why = "unreachable (" + suspended_.at(endpoint).why + ")";
        drop_locked(*sink, why, 1);
        tell_failed_locked(sink, suspended_.at(endpoint).why);  // not tried again while others wait
        wake_.notify_all();
        return false;
    }
    auto it = channels_.find(sink.get());
    const std::size_t mine = it == channels_.end() ? 0 : it->second.queue.size();
    if (mine >= limits_.per_observer || (stats_.queued >= limits_.total && !make_room_locked(sink.get(), mine))) {
        ++stats_.dropped_full;
        drop_locked(*sink,
                    "its queue is full (" + std::to_string(limits_.per_observer) + " per " + sink->recipient() +
                        ", " + std::to_string(limits_.total) + " in all, are kept)",
                    1);
        return false;
    }
    if (it == channels_.end()) {
        it = channels_.emplace(sink.get(), Channel{sink, {}, false}).first;
        enqueue_turn_locked(sink.get());
    } else if (it->second.queue.empty() && !it->second.in_flight) {
        enqueue_turn_locked(sink.get());  // its queue was given up (make_room_locked)
    }  // else: it has its turn already, or is in flight and takes the next one after it
    it->second.queue.push_back(std::move(notice));
    ++stats_.queued;
    return true;
}

bool NoticeDispatcher::make_room_locked(const NoticeSink* poster, std::size_t mine)
{
    auto victim = channels_.end();
    for (auto it = channels_.begin(); it != channels_.end(); ++it)
        if (victim == channels_.end() || it->second.queue.size() > victim->second.queue.size()) victim = it;
    if (victim == channels_.end() || victim->first == poster || victim->second.queue.size() <= mine) return false;
    Channel& channel = victim->second;
    const std::size_t backlog = channel.queue.size();
    const std::string why = "it fell behind: " + std::to_string(backlog) +
                            " queued, the longest backlog when the queues of all recipients were full (" +
                            std::to_string(limits_.total) + " in all)";
    spdlog::warn("{}: the {} at {} is given up: {}", channel.sink->noun(), channel.sink->recipient(),
                 channel.sink->endpoint(), why);
    stats_.queued -= backlog;
    stats_.dropped_full += backlog;
    ++stats_.fell_behind;
    drop_locked(*channel.sink, why, backlog);
    tell_failed_locked(channel.sink, why);
    channel.queue.clear();
    const NoticeSink* key = victim->first;
    for (auto* turns : {&turns_, &prompt_turns_}) turns->erase(std::remove(turns->begin(), turns->end(), key), turns->end());
    if (!channel.in_flight) channels_.erase(victim);
    return true;
}

void NoticeDispatcher::tell_failed_locked(const std::shared_ptr<NoticeSink>& sink, const std::string& why)
{
    to_fail_.emplace(sink.get(), std::make_pair(sink, why));
}

bool NoticeDispatcher::prompt_locked(const std::string& endpoint) const
{
    return limits_.prompt_threads > 0 && prompt_.count(endpoint) != 0;
}

void NoticeDispatcher::enqueue_turn_locked(const NoticeSink* key)
{
    (prompt_locked(key->endpoint()) ? prompt_turns_ : turns_).push_back(key);
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
    spdlog::warn("{}: the {} at {} did not take one ({}): those to it are dropped for {} s", sink->noun(),
                 sink->recipient(), endpoint, why, seconds(s.period));
    // What is queued for the same endpoint would fail the same way (no other
    // thread is delivering to it: busy_).
    std::uint64_t dropped = 0;
    for (auto it = channels_.begin(); it != channels_.end();) {
        if (it->second.sink->endpoint() != endpoint) {
            ++it;
            continue;
        }
        dropped += it->second.queue.size();
        stats_.queued -= it->second.queue.size();
        if (it->second.sink != sink) {
            drop_locked(*it->second.sink, "unreachable (" + why + ")", it->second.queue.size());
            tell_failed_locked(it->second.sink, why);  // shares the endpoint's fate
        }
        for (auto* turns : {&turns_, &prompt_turns_})
            turns->erase(std::remove(turns->begin(), turns->end(), it->first), turns->end());
        it = channels_.erase(it);
    }
    ++stats_.failed;
    stats_.dropped_unreachable += dropped;
    drop_locked(*sink, "unreachable (" + why + ")", 1 + dropped);
}

void NoticeDispatcher::drop_locked(const NoticeSink& sink, const std::string& reason, std::uint64_t count)
{
    if (count > 0) unreported_[{sink.endpoint(), sink.noun(), sink.recipient(), reason}].count += count;
}

void NoticeDispatcher::report_locked(Clock::time_point now, bool all)
{
    for (auto it = unreported_.begin(); it != unreported_.end();) {
        auto last = last_report_.find(it->first);
        if (!all && last != last_report_.end() && now < last->second + limits_.report_every) {
            ++it;
            continue;
        }
        const auto& [endpoint, noun, recipient, reason] = it->first;
        spdlog::warn("{}: {} not delivered to the {} at {}: {}", noun, it->second.count, recipient, endpoint, reason);
        last_report_[it->first] = now;
        it = unreported_.erase(it);
    }
    // Forget what no longer limits anything, so that these maps stay small.
    for (auto it = last_report_.begin(); it != last_report_.end();)
        it = now >= it->second + limits_.report_every ? last_report_.erase(it) : std::next(it);
    for (auto it = suspended_.begin(); it != suspended_.end();)
        it = now >= it->second.until + limits_.max_retry_after ? suspended_.erase(it) : std::next(it);
    for (auto it = prompt_.begin(); it != prompt_.end();)
        it = now >= it->second + limits_.max_retry_after ? prompt_.erase(it) : std::next(it);
}

const NoticeSink* NoticeDispatcher::next_turn_locked(std::deque<const NoticeSink*>& turns, bool prompt_only)
{
    for (auto it = turns.begin(); it != turns.end();) {
        const NoticeSink* key = *it;
        if (busy_.count(key->endpoint()) != 0) {
            ++it;
            continue;
        }
        if (prompt_only && !prompt_locked(key->endpoint())) {
            // Slow since it was queued: to the other lane, keeping its turn's order there.
            it = turns.erase(it);
            turns_.push_back(key);
            continue;
        }
        turns.erase(it);
        return key;
    }
    return nullptr;
}

void NoticeDispatcher::run(Worker& worker) noexcept
{
    const Lane lane = worker.lane;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        const auto now = Clock::now();
        report_locked(now, false);
        if (stopping_) break;
        if (!to_fail_.empty()) {
            auto failing = std::move(to_fail_);
            to_fail_.clear();
            lock.unlock();
            for (auto& [key, entry] : failing) entry.first->failed(entry.second);
            failing.clear();  // releases the sinks without the lock held
            lock.lock();
            continue;
        }
        // The endpoints not proven prompt go first on the threads that may
        // block; the prompt threads never take them.
        const NoticeSink* key = lane == Lane::prompt ? next_turn_locked(prompt_turns_, true)
                                                     : next_turn_locked(turns_, false);
        if (!key && lane == Lane::any) key = next_turn_locked(prompt_turns_, false);
        if (!key) {
            // Sleep until a notice comes, a delivery ends or a deferred report is due.
            auto due = Clock::time_point::max();
            for (const auto& [drop, unreported] : unreported_) {
                auto last = last_report_.find(drop);
                if (last != last_report_.end()) due = std::min(due, last->second + limits_.report_every);
            }
            ++idle_;
            if (due == Clock::time_point::max()) wake_.wait(lock);
            else wake_.wait_until(lock, due);
            --idle_;
            continue;
        }
        Channel& channel = channels_.at(key);
        const std::shared_ptr<NoticeSink> sink = channel.sink;
        const Notice notice = std::move(channel.queue.front());
        channel.queue.pop_front();
        --stats_.queued;
        channel.in_flight = true;
        busy_.insert(sink->endpoint());
        const auto started = Clock::now();
        worker.delivering = true;
        worker.started = started;
        worker.endpoint = sink->endpoint();
        supervisor_wake_.notify_one();
        lock.unlock();
        const std::string why = sink->deliver_notice(notice);
        if (!why.empty()) sink->failed(why);
        lock.lock();
        worker.delivering = false;
        const auto ended = Clock::now();
        busy_.erase(sink->endpoint());
        auto it = channels_.find(key);
        if (it != channels_.end()) it->second.in_flight = false;
        if (why.empty()) {
            ++stats_.delivered;
            suspended_.erase(sink->endpoint());
            if (ended - started <= limits_.prompt_within) prompt_[sink->endpoint()] = ended;
            else prompt_.erase(sink->endpoint());
            // Its next notice waits for the turns of those that came meanwhile.
            if (it != channels_.end()) {
                if (it->second.queue.empty()) channels_.erase(it);
                else enqueue_turn_locked(key);
            }
        } else {
            prompt_.erase(sink->endpoint());
            fail_locked(sink, why, ended);  // drops its channel too
        }
        // A turn skipped for this endpoint, or one of the lane this thread
        // does not serve, may be taken now by a thread that sleeps; this one
        // takes the next turn itself; drops counted meanwhile are reported
        // by a sleeping thread once due (it sleeps until the earliest report
        // it knew of). Threads that are all at work are not woken (a burst
        // of 100 notices would wake each one 100 times).
        if (idle_ > 0 && (!turns_.empty() || !prompt_turns_.empty() || !to_fail_.empty() || !unreported_.empty()))
            wake_.notify_all();
        if (worker.replaced) break;  // another thread took its place
    }
    worker.done = true;
    supervisor_wake_.notify_one();
}

void NoticeDispatcher::stop() noexcept
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    supervisor_wake_.notify_all();
    if (supervisor_.joinable()) supervisor_.join();
    for (auto& worker : workers_)  // no more are started: the supervisor is gone
        if (worker.thread.joinable()) worker.thread.join();
    // What is still queued is not delivered any more.
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [key, channel] : channels_) {
        stats_.dropped_stopped += channel.queue.size();
        stats_.queued -= channel.queue.size();
        drop_locked(*channel.sink, "the daemon is stopping", channel.queue.size());
    }
    channels_.clear();
    turns_.clear();
    prompt_turns_.clear();
    to_fail_.clear();  // the daemon is stopping: nothing is ended any more
    report_locked(Clock::now(), true);
}

NoticeStats NoticeDispatcher::stats() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
}

}  // namespace blobstreaming::daemon
