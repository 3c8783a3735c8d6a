#pragma once
/// When a study becomes stable (docs/DICOM.md, "study-stable"): no new
/// instance of it indexed for --stable-after, as Orthanc's StableAge. A
/// plain data structure with no clock or thread of its own: the caller gives
/// the times (the gateway its steady clock, the unit tests a fixed one), so
/// a thread can sleep on a condition variable until next_deadline() and ask
/// take_due() what became stable.

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace blobstreaming::dicom {

class StudyStability {
public:
    using Clock = std::chrono::steady_clock;

    explicit StudyStability(Clock::duration stable_after) : stable_after_(stable_after) {}

    /// An instance of `study` indexed at `now`: the study is unstable
    /// again, stable at now + stable_after unless another one comes.
    void instance(const std::string& study, Clock::time_point now)
    {
        forget(study);
        const auto due = now + stable_after_;
        due_.emplace(due, study);
        deadline_of_[study] = due;
    }

    /// The study removed from the index: no event for it.
    void forget(const std::string& study)
    {
        const auto it = deadline_of_.find(study);
        if (it == deadline_of_.end()) return;
        due_.erase({it->second, study});
        deadline_of_.erase(it);
    }

    /// The earliest time a study becomes stable, nullopt when none waits.
    std::optional<Clock::time_point> next_deadline() const
    {
        if (due_.empty()) return std::nullopt;
        return due_.begin()->first;
    }

    /// The studies stable at `now` (no instance for stable_after), oldest
    /// first; each is reported once until a new instance of it.
    std::vector<std::string> take_due(Clock::time_point now)
    {
        std::vector<std::string> out;
        while (!due_.empty() && due_.begin()->first <= now) {
            out.push_back(due_.begin()->second);
            deadline_of_.erase(due_.begin()->second);
            due_.erase(due_.begin());
        }
        return out;
    }

    std::size_t waiting() const { return deadline_of_.size(); }

private:
    Clock::duration stable_after_;
    std::set<std::pair<Clock::time_point, std::string>> due_;
    std::map<std::string, Clock::time_point> deadline_of_;
};

}  // namespace blobstreaming::dicom
