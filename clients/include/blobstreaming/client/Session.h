#pragma once
/// A workstation's connection to the Blob Streaming stores: the public face
/// of libblobclient.
///
/// Every operation exists in one form, `op(..., Mode, Completion)`:
///  - exactly one completion per operation, success or failure, carrying a
///    Result (Errc + specific message + the operation's values);
///  - the completion runs on the reactor thread: the Session's own thread
///    (ReactorMode::Thread) or the thread calling run_once()
///    (ReactorMode::Caller); never inside the call that started an Async
///    operation;
///  - Mode::Sync returns after the completion has run, and throws what the
///    completion threw (an Async completion's exception is logged and
///    dropped: its operation has ended). It may not be used from inside a
///    completion callback (Error, Errc::invalid_argument); in Caller mode it
///    drives run_once() itself until the operation is done;
///  - a failed transfer reports how far it got (Result::bytes); a failed push
///    has aborted its reservation, so nothing partial is visible.
/// The throwing wrappers at the end are waits on the same path.
///
/// Completions, progress callbacks, producers and consumers all run on the
/// reactor thread, which also moves every byte: keep them short.
///
/// Transfers: a push is reserve -> ticket -> data connection (bytes and a
/// checksum trailer) -> the store's durable acknowledgement; a pull is ticket
/// -> data connection, or the store's own file when it is on this host
/// (Options::local_fast_path). Data connections are kept per data endpoint
/// and reused (Options::max_connections_per_endpoint at once, the rest wait).
///
/// A series (push_series(), pull_series()) is one operation of many
/// transfers, pipelined: the control calls of the next slices overlap the
/// bytes of the current ones.
///
/// Thread safety: operations may be started from any thread in Thread mode;
/// in Caller mode from the thread that calls run_once(). Destroying the
/// Session completes the operations still running with Errc::cancelled:
/// wait for their completions first. A push cancelled that way may still
/// have been committed (all its bytes had reached the store, whose
/// acknowledgement came too late): its Blob is then whole, otherwise absent,
/// never partial; stat() says which.

#include <blobstreaming/client/Logging.h>
#include <blobstreaming/client/Options.h>
#include <blobstreaming/client/Result.h>
#include <blobstreaming/client/Series.h>
#include <blobstreaming/client/Transfer.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace blobstreaming::client {

class Session {
public:
    using Options = SessionOptions;

    /// Contacts the Naming Service now. Throws Error: Errc::unreachable
    /// "cannot contact the naming service at URL ...", Errc::invalid_argument
    /// for a malformed URL or option.
    explicit Session(Options options);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const Options& options() const noexcept;

    // ---- Event loop (ReactorMode::Caller) ----------------------------------
    /// Runs ready I/O and completions, waiting at most `timeout` for the first
    /// event. Returns the number of events handled (0 on timeout). Caller
    /// mode only (Errc::invalid_argument otherwise).
    std::size_t run_once(std::chrono::milliseconds timeout);
    /// Caller mode: one descriptor through which an application's own event
    /// loop drives the Session (Qt's QSocketNotifier, GLib's g_unix_fd_add,
    /// poll(2)). It is readable, level-triggered, while run_once() has work:
    /// a data connection is ready, or a control thread has handed over a
    /// step or a completion. The contract:
    ///  - when it is readable, call run_once(0ms) until it returns 0 (or
    ///    simply once: it stays readable while work is left);
    ///  - when next_timeout() has passed without it becoming readable, call
    ///    run_once(0ms) all the same (the inactivity checks of transfers);
    ///    ask next_timeout() again after each run_once();
    ///  - only poll it: never read, write or close it. It is the same
    ///    descriptor for the Session's lifetime.
    /// Errc::invalid_argument in ReactorMode::Thread (the Session's own
    /// thread drives it).
    int descriptor() const;
    /// Caller mode: how long the application may wait for descriptor()
    /// before calling run_once(0ms) anyway: 0 when work is queued, else the
    /// time to the Session's next inactivity check (at most
    /// SessionOptions::timeout / 10, clamped to 10 ms .. 1 s).
    /// Errc::invalid_argument in ReactorMode::Thread.
    std::chrono::milliseconds next_timeout() const;
    /// Operations started and not yet completed.
    std::size_t pending() const noexcept;
    /// Data connections this Session has opened so far (for checking reuse).
    std::uint64_t connections_opened() const noexcept;

    // ---- Operations ---------------------------------------------------------
    /// Stores `source` as `name`. Result: info (as committed by the store),
    /// length/bytes, seconds. Success means durable and verified by the store.
    void push(PushSource source, std::string name, PushOptions options, Mode mode, Completion done);
    /// Retrieves `name` or a range of it into `sink`. Result: info (whole
    /// Blob), offset, length, bytes, seconds, local.
    void pull(std::string name, PullSink sink, PullOptions options, Mode mode, Completion done);
    /// Result: store, info. `store` "" : default store, else nearest holder.
    void stat(std::string name, std::string store, Mode mode, Completion done);
    /// The store rereads the Blob and compares it with the checksum recorded
    /// at commit. Result: store, info; Errc::corrupt naming both checksums.
    /// `store` as for stat().
    void verify(std::string name, std::string store, Mode mode, Completion done);
    /// Result: blobs of `store` ("" : of every registered store). Across
    /// every store, one that does not answer (connection refused, timeout)
    /// is left out and named in Result::unreachable: the list succeeds with
    /// the others' Blobs (a partial result); any other failure fails it.
    void list(std::string store, Mode mode, Completion done);
    /// Removes `name` from `store` ("" : default store, else nearest holder).
    void remove(std::string name, std::string store, Mode mode, Completion done);
    /// Result: locations of `name`, nearest tier first (empty: nowhere),
    /// among the stores that answered; the others in Result::unreachable.
    /// stat, verify, remove and pull without a store use the nearest of the
    /// stores that answer.
    void locate(std::string name, Mode mode, Completion done);
    /// Result: stores registered in the Naming Service, with their status
    /// (StoreStatus::reachable false and why for those that do not answer).
    void stores(Mode mode, Completion done);
    /// Removes the Naming Service entries of registered stores whose daemon
    /// is gone (its address refuses the connection, or its server no longer
    /// has the object; each asked for at most min(timeout, 3 s)), and only
    /// those: a daemon that answers, is silent (stopped) or cannot be asked
    /// keeps its entry. Result: `pruned` (the entries removed, with the
    /// daemon's address and why), `stores` (the entries left, as stores()).
    void prune_stores(Mode mode, Completion done);

    /// The notices that `store` kept for this Session's NoticeMode::queue
    /// transfers (Notice.h), oldest first; each is returned once. `store`
    /// "" : every store this Session has made a transfer with, one after
    /// another (Result::notices in that order); one that does not answer is
    /// named in Result::unreachable and keeps its notices for the next poll.
    /// A store keeps them with this Session's transporter: a store that
    /// reclaimed it (idle longer than blobstored --transporter-idle) or
    /// restarted has lost them (Errc::transfer_failed saying so). A store
    /// this Session has made no transfer with has none (an empty Result).
    void poll_notices(std::string store, Mode mode, Completion done);

    // ---- Series (Series.h) --------------------------------------------------
    /// Pushes every slice as push() would, with the shared `options` (its
    /// `progress` is called per slice, with that slice's counts). `done`
    /// runs once, after every slice has ended, with one Result per slice in
    /// series order; `slice_done`, when given, as each slice ends.
    ///
    /// Pipelined and bounded: slices start in series order, up to
    /// 2 x Options::max_connections_per_endpoint of them (16 at most) in
    /// flight, so the reservations and tickets of the next slices are
    /// obtained while the current ones stream; each further slice starts as
    /// one ends. Their bytes share the Session's data connections (at most
    /// max_connections_per_endpoint per store).
    ///
    /// A slice that fails does not stop the others: every slice is tried
    /// and reports its own Result (a failed push stores nothing of that
    /// slice; the series' Result says how many failed). Destroying the
    /// Session ends the slices in flight as it ends any operation
    /// (Errc::cancelled, nothing partial stored) and reports the slices not
    /// started yet as Errc::cancelled without starting them. Mode, threads
    /// and Mode::Sync rules as for every operation; pending() counts the
    /// series once and each slice in flight. Sources and sinks must stay
    /// valid until `done` has run. An empty series completes with no slices.
    void push_series(std::vector<PushSlice> slices, PushOptions options, Mode mode, SeriesCompletion done,
                     SliceCompletion slice_done = {});
    /// Pulls every slice as pull() would, with the shared `options` (a
    /// range applies to each slice: e.g. the headers of a study). Pipelining,
    /// failures and completions as for push_series(): a missing or
    /// unreadable slice fails alone while the rest of the study loads.
    void pull_series(std::vector<PullSlice> slices, PullOptions options, Mode mode, SeriesCompletion done,
                     SliceCompletion slice_done = {});

    /// Copies every Blob of `names` to each store of `options.to`
    /// (CopyOptions): each destination fetches it from its source, verifies
    /// it against the source's checksum and commits it atomically; nothing
    /// partial is ever visible at a destination. One slice per (Blob,
    /// destination), the Blob's destinations next to each other: slice
    /// `i * to.size() + k` is Blob i at destination k, its Result naming
    /// that store, the Blob as committed there, its bytes and seconds.
    /// Completions as for push_series().
    void copy(std::vector<std::string> names, CopyOptions options, Mode mode, SeriesCompletion done,
              SliceCompletion slice_done = {});

    // ---- Throwing wrappers (wait on the operations above) -------------------
    BlobInfo push_file(const std::string& path, const std::string& name, const PushOptions& options = {});
    BlobInfo push_memory(const void* data, std::size_t size, const std::string& name, const PushOptions& options = {});
    Result pull_file(const std::string& name, const std::string& path, const PullOptions& options = {});
    std::vector<std::uint8_t> pull_memory(const std::string& name, const PullOptions& options = {});
    BlobInfo stat(const std::string& name, const std::string& store = {});
    BlobInfo verify(const std::string& name, const std::string& store = {});
    /// The Blobs of the stores that answered (Result::unreachable is not
    /// returned: use the form above to know whether the list is complete).
    std::vector<StoredBlob> list(const std::string& store = {});
    void remove(const std::string& name, const std::string& store = {});
    std::vector<Location> locate(const std::string& name);
    std::vector<StoreStatus> stores();
    /// With "" : the notices of the stores that answered (the others keep
    /// theirs; use the form above to know which did not).
    std::vector<TransferNotice> poll_notices(const std::string& store = {});
    /// Waits for copy(); failures are in the SeriesResult (throw_if_error()).
    SeriesResult copy(const std::vector<std::string>& names, const CopyOptions& options);

    class Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace blobstreaming::client
