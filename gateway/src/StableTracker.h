#pragma once
/// study-stable (docs/DICOM.md): the index's put() marks each instance's
/// study unstable (StudyIndex::on_put -> instance()); a thread of its own
/// sleeps until the earliest deadline (a condition variable, woken when an
/// earlier one comes or on stop()) and publishes each study that had no
/// new instance for --stable-after, once per quiet period: a later
/// instance makes it unstable again and it is published again later.
///
/// The index keeps the state (StudyIndex::pending_studies, mark_stable), so
/// after a restart the studies left pending are published when their time
/// comes (counted from their last instance, not from the restart) and those
/// published already are not. A study is published, then recorded as
/// published: a gateway stopped in between publishes it again after its
/// restart (at least once).

#include "dicom/StudyIndex.h"
#include "StudyStability.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace blobstreaming::dicom {

/// A study found stable.
struct StableStudy {
    StudySummary summary;
    std::int64_t last_instance_ns = 0;           ///< its last instance indexed, ns since the Unix epoch
    std::chrono::system_clock::time_point time;  ///< when found stable
};

class StableTracker {
public:
    using Clock = StudyStability::Clock;
    /// Called on the tracker's thread for each study found stable; must
    /// not block (queue) and not throw.
    using Publish = std::function<void(const StableStudy&)>;

    /// Takes the index's pending studies (their deadlines from their last
    /// instance's time) and, with `run`, starts the thread. Without it
    /// (unit tests) nothing happens but through due().
    StableTracker(StudyIndex& index, Clock::duration stable_after, Publish publish, bool run = true);
    /// stop()
    ~StableTracker();
    StableTracker(const StableTracker&) = delete;
    StableTracker& operator=(const StableTracker&) = delete;

    /// An instance of `study` indexed at `time_ns` (StudyIndex::on_put).
    /// Thread-safe, quick.
    void instance(const std::string& study, std::int64_t time_ns) { instance_at(study, time_ns, Clock::now()); }
    /// As instance(), at `now` of the tracker's clock (unit tests).
    void instance_at(const std::string& study, std::int64_t time_ns, Clock::time_point now);

    /// Publishes the studies due at `now` (what the thread does when it
    /// wakes); returns the next deadline, nullopt when none waits.
    std::optional<Clock::time_point> due(Clock::time_point now);

    /// Ends the thread (a publication in progress finishes). Idempotent.
    void stop() noexcept;

    std::size_t waiting() const;
    std::uint64_t published() const;

private:
    void run() noexcept;
    void publish_one(const std::string& study, std::int64_t last_instance_ns) noexcept;

    StudyIndex& index_;
    const Clock::duration stable_after_;
    const Publish publish_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    StudyStability stability_;
    std::map<std::string, std::int64_t> last_instance_ns_;  ///< of the studies waiting
    std::uint64_t published_ = 0;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace blobstreaming::dicom
