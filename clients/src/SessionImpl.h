#pragma once
/// What a Session is made of, shared by the operations it runs: the event
/// loop and its data connections (the loop thread), the control plane and
/// its workers (the control threads), and the rules for handing work between
/// them and to the caller. Three threads take part in an operation:
/// - the caller's, which starts it (Session.cpp) and, in Mode::Sync, waits;
/// - a control thread (one of ControlPlane's few workers, CallExecutor), which
///   makes the blocking CORBA calls; the calls of different operations run
///   concurrently, those of operations on one Blob name in the order the
///   operations were started;
/// - the loop thread (the Session's own thread, or the caller inside
///   run_once()), which moves the bytes and runs every completion.
/// The member functions are defined in Session.cpp.

#include "DataPlane.h"
#include "ControlPlane.h"
#include "InPlaceMappings.h"
#include "NamedRoutes.h"

#include <blobstreaming/client/Session.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace blobstreaming::client {

/// The thread of a Mode::Sync call that waits for its operation (none for
/// Mode::Async), and whether the operation's transfer ran there
/// (ConnectionPool::run_leased()): then it completes there too
/// (Session::Impl::finish()).
class CallerThread {
public:
    /// On the waiting caller's thread, before the operation starts.
    void waits_here() noexcept { waiter_ = std::this_thread::get_id(); }
    /// Whether this thread is the waiting caller's.
    bool is_this_thread() const noexcept { return waiter_ == std::this_thread::get_id(); }
    /// The transfer runs on the waiting caller's thread.
    void ran_here() noexcept { here_ = true; }
    /// Whether the completion may run now, on this thread.
    bool completes_here() const noexcept { return here_ && is_this_thread(); }

private:
    std::thread::id waiter_;
    bool here_ = false;
};

class Session::Impl {
public:
    explicit Impl(Options o);
    /// Cancels what is in flight; every pending completion runs once.
    ~Impl();

    /// Any thread: delivers `r` to `done` on the loop thread, later. What
    /// `done` throws is logged and dropped.
    void complete(const Completion& done, Result r);
    /// The caller's thread of a Mode::Sync operation whose transfer ran
    /// there (DataConnection::run_here()): delivers `r` to `done` now,
    /// before the call returns, with no trip through the loop.
    void complete_here(const Completion& done, Result r);
    /// complete_here() when `caller` completes here, else complete().
    void finish(const Completion& done, Result r, const CallerThread& caller);
    /// Any thread: runs `call` on a control thread, after the calls queued
    /// before with the same non-empty `blob` (a Blob name); `if_closed` on
    /// the loop thread instead when the Session is closing.
    void control_call(std::function<void()> call, std::function<void()> if_closed, std::string blob = {});
    /// Any thread: runs `start` now when fewer than kPushesAhead pushes hold
    /// a reservation, else once one ends (release()). The control calls run
    /// concurrently, so without this bound a long series of async pushes
    /// would reserve far ahead of its data connections, into the store's
    /// per-client reservation limit and past its tickets' lifetime.
    void admit_push(std::function<void()> start);
    /// Any thread: a push admitted by admit_push() has ended.
    void release_push();
    /// Pushes that may hold a reservation at once: twice the data
    /// connections per endpoint by default, enough to keep them all busy.
    static constexpr std::size_t kPushesAhead = 16;
    /// Slices of one series in flight at once: two per data connection (one
    /// streaming, one with its ticket ready), at most kPushesAhead.
    std::size_t series_window() const noexcept;
    /// Any thread: whether the Session is being destroyed (operations
    /// started now complete with Errc::cancelled).
    bool closing();

    /// Caller thread: starts an operation in `mode`; `start` receives the
    /// completion to use. Mode::Sync returns once it has run.
    void run(Mode mode, Completion done, const std::function<void(Completion)>& start);

    Options options;
    EventLoop loop;
    ConnectionPool pool;
    /// The stores whose pooled connections take named requests.
    NamedRoutes named;
    /// The store files of whole-Blob pulls in place, kept mapped (Options::kept_mappings).
    InPlaceMappings mappings{options.kept_mappings, options.kept_mapping_bytes};
    std::unique_ptr<ControlPlane> control;
    std::atomic<std::size_t> pending{0};

private:
    static std::chrono::milliseconds tick_period(std::chrono::milliseconds timeout);
    /// The data connections' settings of `options`.
    static dataplane::PoolOptions pool_options(const SessionOptions& options);

    std::mutex control_mutex_;
    bool closing_ = false;
    std::mutex pushes_mutex_;
    std::size_t pushes_ahead_ = 0;
    std::deque<std::function<void()>> pushes_waiting_;
    std::thread thread_;
    std::atomic<bool> stop_thread_{false};
};

}  // namespace blobstreaming::client
