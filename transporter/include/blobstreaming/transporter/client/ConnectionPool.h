#pragma once
/// Data connections per data endpoint, reused across transfers: at most
/// `max_connections_per_endpoint` per endpoint, one transfer at a time on
/// each, further transfers queued in order. Loop thread only.

#include <blobstreaming/transporter/client/DataConnection.h>
#include <blobstreaming/transporter/client/EventLoop.h>
#include <blobstreaming/transporter/SocketOptions.h>
#include <blobstreaming/transporter/Tls.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
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
    /// Whether a named job for `endpoint` would start now.
    bool can_run_named(const std::string& endpoint) const;
    /// Inactivity check of every running transfer.
    void tick();
    /// Fails every running and queued transfer with Errc::cancelled.
    void cancel_all();
    /// Thread-safe.
    std::uint64_t opened() const noexcept { return opened_.load(); }

private:
    struct Endpoint {
        std::vector<std::unique_ptr<DataConnection>> connections;
        std::deque<std::unique_ptr<TransferJob>> waiting;
    };
    void released(DataConnection* connection, bool reusable);

    EventLoop& loop_;
    const PoolOptions options_;
    std::map<std::string, Endpoint> endpoints_;
    std::atomic<std::uint64_t> opened_{0};
    std::vector<std::unique_ptr<DataConnection>> retired_;
};

}  // namespace blobstreaming::dataplane
