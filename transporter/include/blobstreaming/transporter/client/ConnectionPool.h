#pragma once
/// Data connections per data endpoint, reused across transfers: at most
/// `max_connections_per_endpoint` per endpoint, one transfer at a time on
/// each, further transfers queued in order. Loop thread only, except
/// lease() and give_back(): a caller that waits for its transfer anyway
/// (Mode::Sync) may run it on its own thread on an idle connection
/// (DataConnection::run_here()), with no hand-off to the loop and back.
/// Idle connections are not watched by the loop; each is checked with
/// DataConnection::still_open() before it is used again, and by tick().

#include <blobstreaming/transporter/client/DataConnection.h>
#include <blobstreaming/transporter/client/EventLoop.h>
#include <blobstreaming/transporter/SocketOptions.h>
#include <blobstreaming/transporter/Tls.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace blobstreaming::dataplane {

struct PoolOptions {
    /// Data connections per data endpoint (at least 1).
    unsigned max_connections_per_endpoint = 4;
    /// A running transfer with no byte moving for this long fails
    /// (Errc::timeout; checked by tick()).
    std::chrono::milliseconds timeout{30000};
    /// Socket buffers and TCP_NODELAY, set before connect.
    SocketOptions socket;
    /// Client-role TLS (null: plain TCP): the store's certificate must
    /// verify against its CA and name the endpoint's host.
    std::shared_ptr<const TlsContext> tls;
};

class ConnectionPool {
public:
    ConnectionPool(EventLoop& loop, PoolOptions options);
    ~ConnectionPool();
    ConnectionPool(const ConnectionPool&) = delete;
    ConnectionPool& operator=(const ConnectionPool&) = delete;

    /// Runs `job` on an idle connection to its ticket's endpoint, a new one,
    /// or later when one frees up.
    /// A named job (TransferJob::named) runs only on an idle connection
    /// that advertised named requests (can_run_named()); without one it
    /// fails at once with Errc::unreachable, nothing sent.
    void submit(std::unique_ptr<TransferJob> job);
    /// Runs the named `job` on an idle connection to its endpoint that
    /// advertised named requests; without one (all busy or leased) gives
    /// it back, nothing sent, its done not run.
    std::unique_ptr<TransferJob> submit_named(std::unique_ptr<TransferJob> job);
    /// Whether a named job for `endpoint` would start now.
    bool can_run_named(const std::string& endpoint) const;
    /// Any thread: an idle connection to `endpoint` that advertised named
    /// requests and is still open, held for the caller (the loop neither
    /// watches nor uses it) until give_back(); null when there is none.
    DataConnection* lease(const std::string& endpoint);
    /// Any thread: ends a lease. A connection its transfer left closed is
    /// discarded on the loop thread; a transfer queued meanwhile for the
    /// endpoint gets the connection.
    void give_back(DataConnection* connection);
    /// Any thread, a caller that waits for its transfer anyway: lease() an
    /// idle connection to `endpoint`, run the job `make` returns on it on
    /// this thread (DataConnection::run_here(), `limit` without progress),
    /// give it back. False when there was no idle connection (`make` not
    /// called); true once `make` was called, also when it returned no job
    /// (it completed the operation itself). What `make` throws propagates,
    /// the connection given back.
    bool run_leased(const std::string& endpoint, std::chrono::milliseconds limit,
                    const std::function<std::unique_ptr<TransferJob>()>& make);
    /// Inactivity check of every running transfer.
    void tick();
    /// Fails every running and queued transfer with Errc::cancelled.
    void cancel_all();
    /// Thread-safe.
    std::uint64_t opened() const noexcept { return opened_.load(); }

private:
    struct Endpoint {
        std::vector<std::unique_ptr<DataConnection>> connections;
        /// The connections a thread runs a transfer on (the loop, or a
        /// caller that leased it); the others are idle.
        std::set<const DataConnection*> held;
        /// Of those, the ones a caller leased: the loop leaves them alone.
        std::set<const DataConnection*> leased;
        std::deque<std::unique_ptr<TransferJob>> waiting;
    };
    void released(DataConnection* connection, bool reusable);
    /// Loop thread, under mutex_: takes `c` out of `e` (destroyed later:
    /// it may be on the stack).
    void retire(Endpoint& e, const DataConnection* c);
    /// Loop thread: destroys the retired connections, then starts the
    /// queued transfers that can run now.
    void on_given_back();
    /// Holds an idle connection to `endpoint` that advertised named
    /// requests and is still open (`leased`: for a caller); null when none.
    DataConnection* claim_named(const std::string& endpoint, bool leased);

    EventLoop& loop_;
    const PoolOptions options_;
    /// Guards endpoints_ (the loop changes it under the lock and reads it
    /// without; lease() and give_back() use it under the lock): which
    /// connections exist, which are held, what waits.
    mutable std::mutex mutex_;
    std::map<std::string, Endpoint> endpoints_;
    std::atomic<std::uint64_t> opened_{0};
    std::vector<std::unique_ptr<DataConnection>> retired_;  ///< under mutex_
};

}  // namespace blobstreaming::dataplane
