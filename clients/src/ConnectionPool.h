#pragma once
/// Data connections per data endpoint, reused across transfers: at most
/// `max_connections_per_endpoint` per endpoint, one transfer at a time on
/// each, further transfers queued in order. Loop thread only.

#include "ClientConnection.h"
#include "EventLoop.h"

#include <blobstreaming/client/Options.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace blobstreaming::client {

class ConnectionPool {
public:
    ConnectionPool(EventLoop& loop, const SessionOptions& options);
    ~ConnectionPool();
    ConnectionPool(const ConnectionPool&) = delete;
    ConnectionPool& operator=(const ConnectionPool&) = delete;

    /// Runs `job` on an idle connection to its ticket's endpoint, a new one,
    /// or later when one frees up.
    void submit(std::unique_ptr<TransferJob> job);
    /// Inactivity check of every running transfer.
    void tick();
    /// Fails every running and queued transfer with Errc::cancelled.
    void cancel_all();
    /// Thread-safe.
    std::uint64_t opened() const noexcept { return opened_.load(); }

private:
    struct Endpoint {
        std::vector<std::unique_ptr<ClientConnection>> connections;
        std::deque<std::unique_ptr<TransferJob>> waiting;
    };
    void released(ClientConnection* connection, bool reusable);

    EventLoop& loop_;
    SessionOptions options_;
    SocketOptions socket_options_;
    std::unique_ptr<TlsContext> tls_;  ///< null: plain TCP
    std::map<std::string, Endpoint> endpoints_;
    std::atomic<std::uint64_t> opened_{0};
    std::vector<std::unique_ptr<ClientConnection>> retired_;
};

}  // namespace blobstreaming::client
