#pragma once
/// One pull, from the caller's call to its completion. Each step is a
/// member function named by the thread that runs it; the operation keeps
/// itself alive (shared_from_this) while a step is queued or its transfer
/// runs:
///   caller:  start()                           (named_now(): straight to on_loop_thread_named())
///   caller:  run_here()                        Mode::Sync, named, an idle pooled connection: the
///                                              whole transfer on the caller's thread
///   control: on_control_thread_choose()        validate, choose the store and the path
///   loop:    on_loop_thread_read_local()       the same-host fast path: copy from the store's file
///   loop:    on_loop_thread_named()            name the Blob on a pooled connection (no control call)
///   control: on_control_thread_ticket()        a ticket for the data connection
///   control: on_control_thread_resume()        a ticket for the bytes a file still lacks
///   loop:    on_loop_thread_transfer()         queue the transfer on a data connection
///   loop:    on_loop_thread_finished()         the data connection's outcome

#include "DataPlane.h"
#include "SessionImpl.h"

#include <blobstreaming/client/Transfer.h>
#include <blobstreaming/common/Checksum.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace blobstreaming::client {

class PullOperation : public std::enable_shared_from_this<PullOperation> {
public:
    /// Caller thread: queues the pull on the control thread (or completes
    /// it with Errc::cancelled when the Session is closing).
    /// `caller_waits` (Mode::Sync): a named pull may run on this thread.
    static void start(Session::Impl& session, std::string name, PullSink sink, PullOptions options, Completion done,
                      bool caller_waits = false);

private:
    PullOperation(Session::Impl& session, std::string name, PullSink sink, PullOptions options, Completion done);

    /// Caller thread (start()): a pull from a store known without asking
    /// that has a named route (and no same-host path to ask about) goes to
    /// on_loop_thread_named() at once; false when it does not qualify.
    bool named_now();
    /// Any thread: runs `step` on the control thread; when the Session is
    /// closing, completes with `if_closed` (default: Errc::cancelled).
    void on_control_thread(void (PullOperation::*step)(), std::optional<Result> if_closed = std::nullopt);
    /// Control thread: checks the name, chooses the store (StoreChoice.h)
    /// and the path: a resume, the same-host file, or a data connection.
    void on_control_thread_choose();
    /// Loop thread: copies the range from the store's file on this host.
    /// A file that cannot be used (or holds another version now) sends the
    /// pull to on_control_thread_ticket() before any byte was written.
    void on_loop_thread_read_local(const LocalFile& local);
    /// Control thread: obtains a ticket and posts on_loop_thread_transfer().
    void on_control_thread_ticket();
    /// Control thread: a resume into a file: hashes what it holds, then a
    /// ticket for the rest.
    void on_control_thread_resume();
    /// Loop thread: opens the sink and queues the transfer; a resumed pull
    /// passes the hash of the bytes the file holds (`prefix`).
    /// `retry_if_changed`: a Blob replaced or removed since the ticket
    /// (Errc::blob_changed) is pulled once more, for the version current then.
    /// `named`: the job names its Blob on a pooled connection of that route
    /// (the ticket holds the endpoint and the range asked for).
    void on_loop_thread_transfer(const Ticket& ticket, std::optional<ChecksumState> prefix, bool retry_if_changed,
                                 const NamedRoutes::Route* named = nullptr);
    /// Loop thread: a pull that names its Blob (NamedRoutes) runs on an idle
    /// pooled connection that takes it, else goes back for a ticket.
    void on_loop_thread_named(const NamedRoutes::Route& route);
    /// Caller thread of a Mode::Sync pull (named_now()): the named pull on
    /// an idle pooled connection leased for it, driven and completed here;
    /// false (nothing done) when it does not qualify or no connection is
    /// idle. Not with a consumer or a progress callback, which run on the
    /// reactor thread.
    bool run_here(const NamedRoutes::Route& route);
    /// The job of on_loop_thread_transfer() (its arguments); null when its
    /// sink cannot be opened (the pull has failed).
    std::unique_ptr<TransferJob> make_job(const Ticket& ticket, std::optional<ChecksumState> prefix,
                                          bool retry_if_changed, const NamedRoutes::Route* named);
    /// Completes with `r`: here when the transfer ran on the waiting caller's thread.
    void finish(Result r) { session_.finish(done_, std::move(r), caller_); }
    /// Loop thread: the data connection's outcome (`named`: of a named pull).
    void on_loop_thread_finished(const Ticket& ticket, bool retry_if_changed, const JobOutcome& outcome,
                                 bool named = false);
    /// Any thread: completes with `e`.
    void fail(const Error& e);

    Session::Impl& session_;
    std::string name_;
    PullSink sink_;
    PullOptions options_;
    Completion done_;
    std::string what_;      ///< `pull "N"`
    std::string store_;     ///< once chosen
    bool retried_ = false;  ///< the ticket was obtained once more after Errc::blob_changed
    /// The whole range's ticket ParallelPull::start asked for before it
    /// chose one stream: used by the next on_control_thread_ticket().
    std::optional<Ticket> probe_;
    CallerThread caller_;  ///< of a Mode::Sync call; whether the transfer ran there
};

}  // namespace blobstreaming::client
