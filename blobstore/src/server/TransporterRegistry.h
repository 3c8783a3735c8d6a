#pragma once
/// The open BlobTransporters of a daemon: caps on how many a client and all
/// clients together may hold, and reclamation of those left idle (a client
/// that never calls close(), or was killed).

#include "TransferControl.h"

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace blobstreaming::server {

/// What the daemon knows of one open transporter: whose it is, when it was
/// last used, and which of its transfers may still run. Shared by the
/// servant, its transfers' completion callbacks and the registry.
/// Thread-safe.
class TransporterActivity {
public:
    using Clock = std::chrono::steady_clock;
    using ClockFn = std::function<Clock::time_point()>;

    TransporterActivity(std::string client, ClockFn clock);

    /// Who opened it: the certificate subject (TLS) or the host address.
    const std::string& client() const noexcept { return client_; }

    /// A call on the transporter: it is in use now.
    void touch() noexcept;

    /// A ticket was issued with `control`: the transporter is busy until the
    /// transfer ended (ended()) or nobody holds the control any more (the
    /// ticket expired or was withdrawn unused and was purged).
    void track(const std::shared_ptr<TransferControl>& control);

    /// The transfer of `control` ended (from its on_finished, reactor
    /// thread): no longer busy with it; counts as a use.
    void ended(const TransferControl* control) noexcept;

    /// Not used for `lifetime` (no call, no transfer ended) and no transfer
    /// of its tickets may still run.
    bool idle(std::chrono::milliseconds lifetime);

    /// When it was last used (a call, a ticket, a transfer ended).
    Clock::time_point last_use();

private:
    const std::string client_;
    const ClockFn clock_;
    std::mutex mutex_;
    Clock::time_point last_use_;
    std::map<const TransferControl*, std::weak_ptr<TransferControl>> running_;
};

struct TransporterLimits {
    std::chrono::milliseconds idle{300000};  ///< --transporter-idle
    std::size_t total = 4096;                ///< --max-transporters
    std::size_t per_client = 256;            ///< --max-client-transporters
    /// At the total cap, a transporter of a client holding more than the
    /// newcomer is reclaimed when it ran no transfer and had no call for
    /// this long (instead of the whole --transporter-idle).
    std::chrono::milliseconds pressure_idle{1000};
};

/// Thread-safe: servants admit and release on omniORB threads, the daemon
/// sweeps on its main thread.
class TransporterRegistry {
public:
    using Reclaim = std::function<void()>;

    /// `clock` is injectable for tests; by default std::chrono::steady_clock.
    explicit TransporterRegistry(TransporterLimits limits, TransporterActivity::ClockFn clock = {});

    TransporterLimits limits() const;
    /// New limits (a SIGHUP reload): admissions and sweeps from now on; open
    /// transporters above them stay until closed or idle.
    void set_limits(TransporterLimits limits);

    /// Counts a new transporter of `client` and returns its activity. At
    /// the total cap, makes room first by reclaiming the least recently used
    /// transporter of the client holding the most, when that client holds
    /// more than `client` and that transporter has been idle for
    /// `pressure_idle` (its reclaim runs on the calling thread, without the
    /// registry's lock): a few peers cannot keep everybody else out.
    /// Throws Error(Errc::limit_reached) saying which cap is reached, for
    /// whom, and how to get below it.
    std::shared_ptr<TransporterActivity> admit(const std::string& client);

    /// How to reclaim an admitted transporter (deactivate its servant); set
    /// once it is activated. Runs at most once, on the sweeping thread,
    /// without the registry's lock.
    void on_reclaim(const std::shared_ptr<TransporterActivity>& activity, Reclaim reclaim);

    /// Its client closed it (or it was never activated): forgotten, no
    /// longer counted. Quiet when it is not (any more) registered.
    void release(const TransporterActivity* activity) noexcept;

    struct Sweep {
        std::size_t reclaimed = 0;  ///< transporters idle past the lifetime, reclaimed now
        std::size_t open = 0;       ///< still open after the sweep
        std::size_t clients = 0;    ///< distinct clients holding them
        std::size_t refused = 0;    ///< admissions refused since the previous sweep
        std::size_t evicted = 0;    ///< reclaimed at the total cap since the previous sweep
    };
    /// Reclaims every transporter idle for longer than the lifetime.
    Sweep sweep() noexcept;

    std::size_t open() const;

private:
    struct Entry {
        std::shared_ptr<TransporterActivity> activity;
        Reclaim reclaim;
    };
    using Entries = std::map<const TransporterActivity*, Entry>;
    void forget_locked(Entries::iterator it);
    /// At the total cap: removes the transporter admit() may reclaim for
    /// `client` (see admit) and returns it; an empty Entry when none may be.
    Entry evict_for_locked(const std::string& client, std::size_t mine);
    static void run_reclaim(Entry& entry) noexcept;

    const TransporterActivity::ClockFn clock_;
    mutable std::mutex mutex_;
    TransporterLimits limits_;  ///< guarded by mutex_
    Entries entries_;
    std::map<std::string, std::size_t> per_client_;
    std::size_t refused_ = 0;
    std::size_t evicted_ = 0;
};

}  // namespace blobstreaming::server
