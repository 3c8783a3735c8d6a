#pragma once
/// What happened to recent work on a Blob, by name, for a while: the
/// outcome of a fetch that beginFetch started, for awaitFetch; the failure
/// of a fetch that pulls followed, for the pull asking why it broke off.
///
/// Bounded in age (`memory`) and in count (`capacity`): past the count the
/// OLDEST entry goes, never the one being recorded, so that a copy of more
/// Blobs than `capacity` within `memory` still finds each outcome its
/// awaitFetch asks for a moment later. Pruning walks only the expired or
/// excess entries, in the order they were recorded (amortised O(log n) per
/// call, where walking the whole map on every call cost a copy of a
/// 200-slice study 3 % of a store's time). Not thread-safe: the caller
/// locks.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>

namespace blobstreaming {

template <typename T>
class RecentOutcomes {
public:
    using Clock = std::chrono::steady_clock;

    RecentOutcomes(std::chrono::steady_clock::duration memory, std::size_t capacity,
                   std::function<Clock::time_point()> clock = {})
        : memory_(memory), capacity_(capacity), clock_(std::move(clock))
    {}

    /// Records `value` for `name`, in place of what was recorded for it.
    void record(const std::string& name, T value)
    {
        const auto now = this->now();
        prune(now);
        auto [it, fresh] = entries_.insert_or_assign(name, Entry{now, ++serial_, std::move(value)});
        (void)fresh;
        order_.push_back({it->second.serial, name});
        while (entries_.size() > capacity_) drop_oldest();
        if (order_.size() > 2 * capacity_ + 16) compact();
    }

    /// What was recorded for `name` within `memory`, or null.
    const T* find(const std::string& name)
    {
        prune(now());
        const auto it = entries_.find(name);
        return it == entries_.end() ? nullptr : &it->second.value;
    }

    std::size_t size() const noexcept { return entries_.size(); }

private:
    struct Entry {
        Clock::time_point at;
        std::uint64_t serial = 0;  ///< which record() made it: order_ may hold older ones of the name
        T value;
    };

    Clock::time_point now() const { return clock_ ? clock_() : Clock::now(); }

    void prune(Clock::time_point now)
    {
        while (!order_.empty()) {
            const auto it = entries_.find(order_.front().second);
            if (it != entries_.end() && it->second.serial == order_.front().first && now - it->second.at < memory_)
                return;  // the oldest live entry is young enough
            if (it != entries_.end() && it->second.serial == order_.front().first) entries_.erase(it);
            order_.pop_front();  // expired, or stale (recorded again, or erased)
        }
    }

    void drop_oldest()
    {
        while (!order_.empty()) {
            const auto it = entries_.find(order_.front().second);
            const bool live = it != entries_.end() && it->second.serial == order_.front().first;
            order_.pop_front();
            if (live) {
                entries_.erase(it);
                return;
            }
        }
    }

    /// order_ without the stale positions (a name recorded again and again
    /// within `memory` leaves one per record()).
    void compact()
    {
        order_.clear();
        for (const auto& [name, entry] : entries_) order_.push_back({entry.serial, name});
        std::sort(order_.begin(), order_.end());
    }

    const Clock::duration memory_;
    const std::size_t capacity_;
    const std::function<Clock::time_point()> clock_;
    std::map<std::string, Entry> entries_;
    std::deque<std::pair<std::uint64_t, std::string>> order_;  ///< (serial, name), oldest first; stale ones skipped
    std::uint64_t serial_ = 0;
};

}  // namespace blobstreaming
