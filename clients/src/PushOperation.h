#pragma once
/// One push, from the caller's call to its completion. Each step is a
/// member function named by the thread that runs it; the operation keeps
/// itself alive (shared_from_this) while a step is queued or its transfer
/// runs:
///   caller:  start()                     waits for a slot (admit_push) when 16 pushes are ahead
///   caller:  run_here()                  Mode::Sync, named, an idle pooled connection: the whole
///                                        transfer on the caller's thread (DataConnection::run_here())
///   any:     reserve()                   queues the control step (or, named_now(), skips it)
///   control: on_control_thread_reserve()   validate, open the source, reserve (or name the Blob:
///                                          on_loop_thread_send_named(), on_control_thread_ticket())
///   loop:    on_loop_thread_send()         skip what a resume need not send, queue the transfer
///   loop:    on_loop_thread_finished()     the data connection's outcome
///   control: on_control_thread_abort()     a failed push leaves nothing: abort, then complete

#include "DataPlane.h"
#include "SessionImpl.h"

#include <blobstreaming/client/Transfer.h>

#include <memory>
#include <string>

namespace blobstreaming::client {

class PushOperation : public std::enable_shared_from_this<PushOperation> {
public:
    /// Caller thread: queues the push on the control thread (or completes
    /// it with Errc::cancelled when the Session is closing).
    /// `caller_waits` (Mode::Sync): a named push may run on this thread.
    static void start(Session::Impl& session, PushSource source, std::string name, PushOptions options, Completion done,
                      bool caller_waits = false);

private:
    PushOperation(Session::Impl& session, PushSource source, std::string name, PushOptions options, Completion done);

    /// Any thread, once admitted (Session::Impl::admit_push): queues
    /// on_control_thread_reserve().
    void reserve();

    /// Control thread: checks the name, chooses the store, opens the source
    /// and obtains a reservation and ticket in one round trip (a resumed one
    /// with `resume`: resumable + recv),
    /// then posts on_loop_thread_send(). Failures complete the push.
    void on_control_thread_reserve();
    /// Any thread (reserve()): a push to a store known without asking (its
    /// own or the Session's default) that has a named route, validated and
    /// sent by name at once; false when it does not qualify.
    bool named_now();
    /// Makes `job` (its source open) a named push of `route` and posts
    /// on_loop_thread_send_named().
    void send_named(const std::shared_ptr<TransferJob>& job, const NamedRoutes::Route& route);
    /// Makes `job` a named push of `route` (type, name, endpoint, grant_, what, done).
    void name(TransferJob& job, const NamedRoutes::Route& route);
    /// Caller thread of a Mode::Sync push (named_now()): the named push on
    /// an idle pooled connection leased for it, driven here, completed
    /// here; false (nothing done) when it does not qualify or no connection
    /// is idle. Not with a producer or a progress callback, which run on
    /// the reactor thread.
    bool run_here(const std::shared_ptr<TransferJob>& job, const NamedRoutes::Route& route);
    /// Completes with `r`: here when the transfer ran on the waiting caller's thread.
    void finish(Result r) { session_.finish(done_, std::move(r), caller_); }
    /// Control thread: the ticket of a push that meant to name its Blob but
    /// found no pooled connection for it.
    void on_control_thread_ticket(std::shared_ptr<TransferJob> job);
    /// Loop thread: a named push (NamedRoutes) runs on an idle pooled
    /// connection that takes it, else goes back for a ticket.
    void on_loop_thread_send_named(std::shared_ptr<TransferJob> job);
    /// Any thread: `job` with grant_'s ticket, then on_loop_thread_send().
    void send_with_ticket(const std::shared_ptr<TransferJob>& job);
    /// Sets `job`'s type, what, progress and done.
    void prepare(const std::shared_ptr<TransferJob>& job);
    /// Loop thread: a resumed push hashes the bytes the store already has
    /// (a producer must run on this thread), then the transfer is queued on
    /// a data connection.
    void on_loop_thread_send(std::shared_ptr<TransferJob> job);
    /// Loop thread: the data connection's outcome. Success completes; a
    /// failure aborts the reservation first, unless `resume` keeps it.
    void on_loop_thread_finished(const JobOutcome& outcome);
    /// Control thread (the loop thread while the Session closes): aborts
    /// the reservation, then completes with `r`.
    void on_control_thread_abort(const Result& r);

    Session::Impl& session_;
    PushSource source_;  ///< kept until the completion: an owned buffer lives here
    std::string name_;
    PushOptions options_;
    Completion done_;
    std::string what_;   ///< `push "N"`
    std::string store_;  ///< once chosen
    PushGrant grant_;
    bool named_ = false;  ///< the running job names its Blob: no reservation id here
    CallerThread caller_;  ///< of a Mode::Sync call; whether the transfer ran there
};

}  // namespace blobstreaming::client
