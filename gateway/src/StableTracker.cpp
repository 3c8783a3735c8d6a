#include "StableTracker.h"

#include <blobstreaming/common/Text.h>

#include <spdlog/spdlog.h>

#include <vector>

namespace blobstreaming::dicom {
namespace {

std::int64_t ns_now()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

StableTracker::StableTracker(StudyIndex& index, Clock::duration stable_after, Publish publish, bool run)
    : index_(index), stable_after_(stable_after), publish_(std::move(publish)), stability_(stable_after)
{
    // Left pending by the last run: due stable_after after the start, on
    // this process's steady clock. Their last instance is older still, but
    // subscriptions do not outlive a gateway: published at once, they would
    // reach nobody. stable_after gives subscribers the time to subscribe
    // again.
    const Clock::time_point now = Clock::now();
    const std::vector<PendingStudy> pending = index_.pending_studies();
    for (const PendingStudy& p : pending) instance_at(p.study, p.last_instance_ns, now);
    if (!pending.empty())
        spdlog::info("study-stable: {} studies pending from before the start, the first due in {} ms", pending.size(),
                     std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::max(Clock::duration::zero(), *stability_.next_deadline() - now))
                         .count());
    if (run) thread_ = std::thread([this] { this->run(); });
}

StableTracker::~StableTracker() { stop(); }

void StableTracker::instance_at(const std::string& study, std::int64_t time_ns, Clock::time_point now)
{
    {
        std::lock_guard lock(mutex_);
        stability_.instance(study, now);
        last_instance_ns_[study] = time_ns;
    }
    wake_.notify_one();  // its deadline may be the earliest now
}

std::optional<StableTracker::Clock::time_point> StableTracker::due(Clock::time_point now)
{
    std::vector<std::pair<std::string, std::int64_t>> taken;
    {
        std::lock_guard lock(mutex_);
        for (std::string& study : stability_.take_due(now)) {
            const auto it = last_instance_ns_.find(study);
            taken.emplace_back(std::move(study), it->second);
            last_instance_ns_.erase(it);
        }
    }
    for (const auto& [study, last] : taken) publish_one(study, last);
    std::lock_guard lock(mutex_);
    return stability_.next_deadline();
}

void StableTracker::publish_one(const std::string& study, std::int64_t last_instance_ns) noexcept
{
    try {
        StableStudy stable;
        std::optional<StudySummary> summary = index_.study(study);
        if (!summary) {
            index_.mark_stable(study, last_instance_ns, ns_now());
            spdlog::info("study-stable: study {} has no instance left in the index: not published", study);
            return;
        }
        stable.summary = std::move(*summary);
        stable.last_instance_ns = last_instance_ns;
        stable.time = std::chrono::system_clock::now();
        publish_(stable);
        const bool recorded = index_.mark_stable(study, last_instance_ns, ns_now());
        {
            std::lock_guard lock(mutex_);
            ++published_;
        }
        if (recorded)
            spdlog::info("study-stable: study {} published ({} series, {} instances; patient \"{}\", accession \"{}\")",
                         printable(study), stable.summary.series, stable.summary.instances,
                         printable(stable.summary.patient_id), printable(stable.summary.accession_number));
        else
            spdlog::info("study-stable: study {} published; another instance came meanwhile: published again later",
                         study);
    } catch (const std::exception& e) {
        spdlog::error("study-stable: study {}: {}", study, e.what());
    }
}

void StableTracker::run() noexcept
{
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        const std::optional<Clock::time_point> next = stability_.next_deadline();
        if (!next) {
            wake_.wait(lock);
            continue;
        }
        if (Clock::now() < *next) {
            // Woken early: an earlier deadline, or stop().
            wake_.wait_until(lock, *next);
            continue;
        }
        lock.unlock();
        due(Clock::now());
        lock.lock();
    }
}

void StableTracker::stop() noexcept
{
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::size_t StableTracker::waiting() const
{
    std::lock_guard lock(mutex_);
    return stability_.waiting();
}

std::uint64_t StableTracker::published() const
{
    std::lock_guard lock(mutex_);
    return published_;
}

}  // namespace blobstreaming::dicom
