#pragma once
/// What a Session is made of, shared by the operations it runs: the event
/// loop and its data connections (the loop thread), the control plane and
/// its worker (the control thread), and the rules for handing work between
/// them and to the caller. Three threads take part in an operation:
/// - the caller's, which starts it (Session.cpp) and, in Mode::Sync, waits;
/// - the control thread (ControlPlane's worker), which makes the blocking
///   CORBA calls;
/// - the loop thread (the Session's own thread, or the caller inside
///   run_once()), which moves the bytes and runs every completion.
/// The member functions are defined in Session.cpp.

#include "ConnectionPool.h"
#include "ControlPlane.h"
#include "EventLoop.h"

#include <blobstreaming/client/Session.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace blobstreaming::client {

class Session::Impl {
public:
    explicit Impl(Options o);
    /// Cancels what is in flight; every pending completion runs once.
    ~Impl();

    /// Any thread: delivers `r` to `done` on the loop thread, later. What
    /// `done` throws is logged and dropped.
    void complete(const Completion& done, Result r);
    /// Any thread: runs `call` on the control thread; `if_closed` on the loop
    /// thread instead when the Session is closing.
    void control_call(std::function<void()> call, std::function<void()> if_closed);
    /// Caller thread: starts an operation in `mode`; `start` receives the
    /// completion to use. Mode::Sync returns once it has run.
    void run(Mode mode, Completion done, const std::function<void(Completion)>& start);

    Options options;
    EventLoop loop;
    ConnectionPool pool;
    std::unique_ptr<ControlPlane> control;
    std::atomic<std::size_t> pending{0};

private:
    static std::chrono::milliseconds tick_period(std::chrono::milliseconds timeout);

    std::mutex control_mutex_;
    bool closing_ = false;
    std::thread thread_;
    std::atomic<bool> stop_thread_{false};
};

}  // namespace blobstreaming::client
