#pragma once
/// The data plane of a blobstored: one listening TCP port served by an ACE
/// Reactor in its own thread (docs/PROTOCOL.md). No ACE type in this header.

#include <blobstreaming/transporter/SocketOptions.h>
#include <blobstreaming/transporter/Tls.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace blobstreaming {
class Store;
}

namespace blobstreaming::server {

class TicketRegistry;
class ReservationTable;
class NamedAdmission;

struct DataServerConfig {
    std::string host = "0.0.0.0";  ///< address to listen on (IPv4 literal or host name)
    std::uint16_t port = 0;        ///< 0: ephemeral
    /// Default inactivity timeout of a transfer; a ticket may carry its own.
    std::chrono::milliseconds inactivity_timeout{30000};
    SocketOptions socket;  ///< applied to every accepted connection
    /// How often expired tickets and abandoned reservations are purged.
    std::chrono::milliseconds housekeeping_period{1000};
    /// A new connection must present a valid Request (after its TLS
    /// handshake) within this time of being accepted, however slowly its
    /// bytes trickle in; otherwise it is closed.
    std::chrono::milliseconds handshake_timeout{5000};
    /// A connection idle between transfers (a client's pooled connection) is
    /// closed after this.
    std::chrono::milliseconds idle_timeout{60000};
    /// Caps on connections that have not presented a valid ticket yet, in
    /// all and per peer IP address (docs/PROTOCOL.md, "Connections");
    /// start() lowers them to fit the descriptor limit.
    std::size_t max_unauthenticated = 1024;
    std::size_t max_unauthenticated_per_peer = 64;
    /// Size of the reactor's handle table; 0: the process's RLIMIT_NOFILE
    /// soft limit, at most 65536. The cap on data connections is derived
    /// from it, leaving descriptors for the control plane and the store.
    std::size_t max_handles = 0;
    /// Set: every connection must complete a TLS handshake with a client
    /// certificate that verifies against the CA, and a ticket is honoured
    /// only on a connection from the client it was issued to. Null: plain TCP.
    std::shared_ptr<const TlsContext> tls;
    /// Called on the reactor thread after each transfer ended (a push after
    /// its commit), with the counters already updated; set: the daemon
    /// publishes its status at once (SDC reports). Must be quick and must
    /// not throw.
    std::function<void()> on_transfer_end;
    /// Compression on the wire (blobstored --compress): take pushes whose
    /// body is compressed frames and compress the pulls that ask. False:
    /// such a push is refused, such a pull answered with raw bytes.
    bool compress = true;
};

/// Owns the listening socket, the reactor, its thread and every data
/// connection. The Store, TicketRegistry and ReservationTable must outlive it.
///
/// Life cycle: construct, start() (binds and starts the reactor thread; throws
/// Error(Errc::unreachable) when the address cannot be bound), stop() (stops
/// accepting, aborts in-flight transfers — pushes leave nothing visible — and
/// joins the thread; idempotent, also run by the destructor).
///
/// The reactor thread runs until stop(): an interrupted wait (EINTR: the
/// process was stopped and continued, a debugger attached) is not an end.
/// Should the reactor fail for good, failure() says why, so that the daemon
/// can exit visibly instead of issuing tickets nobody will serve.
class DataServer {
public:
    DataServer(Store& store, TicketRegistry& tickets, ReservationTable& reservations, DataServerConfig config);
    ~DataServer();
    DataServer(const DataServer&) = delete;
    DataServer& operator=(const DataServer&) = delete;

    void start();
    void stop() noexcept;

    /// The bound address, valid after start(): the configured host and the
    /// actual port.
    const std::string& host() const noexcept;
    std::uint16_t port() const noexcept;

    /// Transfers between a consumed ticket and their end (any thread).
    std::uint32_t active_transfers() const noexcept;
    /// Throughput of the last completed push or pull in MB/s (10^6 bytes/s);
    /// 0 before the first.
    double last_transfer_mbps() const noexcept;
    /// The data plane's counters in Prometheus' text format (any thread).
    std::string metrics_text() const;
    /// Empty while the data plane serves; after the reactor thread gave up
    /// (repeated reactor errors), why. Any thread.
    std::string failure() const;
    /// From now on, pooled connections may name Blobs (docs/PROTOCOL.md,
    /// "Named requests"), decided by `admission` (not owned; it must
    /// outlive stop()). Before this, such requests are refused and no
    /// Response advertises them. Any thread, once.
    void serve_named(NamedAdmission* admission) noexcept;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace blobstreaming::server
