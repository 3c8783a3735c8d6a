#pragma once
/// One fill per name: the fills receiving Blobs into a store now (its
/// ReadThroughStore owns the table: read-through, and the daemon's copies,
/// BlobStore::fetch), each a flight that later fills of the same name join
/// instead of starting another, that reads follow once its bytes have
/// somewhere to go (BlobInFlight), and whose outcome is kept for a while:
/// for the clients that began it (BlobStore::awaitFetch) and, when it
/// failed with nobody awaiting it, for the readers that followed it and
/// ask why. Also runs the fills that go on on threads of their own
/// (read-through, beginFetch), bounded in number. Thread-safe.

#include <blobstreaming/blobstore/RecentOutcomes.h>

#include <blobstreaming/blobstore/BlobInFlight.h>
#include <blobstreaming/common/BlobInfo.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace blobstreaming {

class FlightTable {
public:
    /// One fetch of one name.
    class Flight {
        friend class FlightTable;
        bool done_ = false;
        std::optional<BlobInfo> info_;
        std::exception_ptr error_;
        /// Set once the bytes have somewhere to go: what pulls follow.
        std::shared_ptr<BlobInFlight> progress_;
        /// The clients whose begin joined it: its outcome is kept for their
        /// await().
        std::set<std::string> keepers_;
    };

    FlightTable();

    /// Joins the flight of `name`, or opens it (`first`: the caller runs
    /// it and lands it). Throws Error(cancelled) once stopping.
    std::shared_ptr<Flight> join(const std::string& name, bool& first);
    /// The flight's bytes have somewhere to go now: pulls follow `progress`.
    void begun(Flight& flight, std::shared_ptr<BlobInFlight> progress);
    /// Records the end of the flight of `name` (`info`, or `error`), wakes
    /// whoever waits for it and keeps its outcome for its keepers.
    void land(const std::string& name, Flight& flight, std::optional<BlobInfo> info, std::exception_ptr error);
    /// Waits for the flight's end: what it committed, or its error thrown.
    BlobInfo landed(Flight& flight);
    /// Waits until the flight has begun (its progress returned) or ended
    /// (nullptr with what it committed in `info`; its error thrown).
    std::shared_ptr<BlobInFlight> wait_begun(Flight& flight, std::optional<BlobInfo>* info = nullptr);

    /// Waits for the end of the flight of `name` running now, if any: what
    /// it committed (its error thrown); nullopt when none runs.
    std::optional<BlobInfo> wait_landed(const std::string& name);

    /// The flight's outcome is kept for `client`'s await().
    void keep_for(Flight& flight, const std::string& client);
    /// The outcome of the flight of `name` that `client` began, waited
    /// for; no_such_blob (naming `store_name`) when it began none lately.
    BlobInfo await(const std::string& name, const std::string& store_name, const std::string& client);

    /// The flight receiving `name` now, once its bytes have somewhere to
    /// go; null when none.
    std::shared_ptr<BlobInFlight> in_flight(const std::string& name) const;
    /// Throws the failure of a flight of `name` that reads may have
    /// followed (its bytes had somewhere to go, no client awaits it) and
    /// that ended within a few seconds (a pull that followed it asks once
    /// why it broke off: its reason, not another fetch).
    void rethrow_recent_failure(const std::string& name);

    /// Runs `work` (the transfer of `flight`, opened by join() for `name`)
    /// on a thread of its own and lands the flight with its outcome; `what`
    /// names it in the log. Throws Error(limit_reached), the flight landed
    /// with it, when too many run or no thread can start.
    void spawn(const std::string& name, std::shared_ptr<Flight> flight, const char* what,
               std::function<BlobInfo()> work);

    /// No new flight from now on; waits for the threads of spawn().
    void stop() noexcept;

private:
    void run(const std::string& name, const std::shared_ptr<Flight>& flight, const char* what,
             const std::function<BlobInfo()>& work) noexcept;

    mutable std::mutex mutex_;
    std::condition_variable landed_;
    std::map<std::string, std::shared_ptr<Flight>> flights_;
    /// Failures of flights that pulls followed (rethrow_recent_failure()).
    RecentOutcomes<std::exception_ptr> failures_;
    struct Outcome {
        std::optional<BlobInfo> info;
        std::exception_ptr error;
    };
    /// Of flights that clients began, for await(): client + '\n' + name.
    RecentOutcomes<Outcome> outcomes_;
    bool stopping_ = false;
    std::size_t threads_ = 0;  ///< spawn()'s threads running
    std::condition_variable threads_ended_;
};

}  // namespace blobstreaming
