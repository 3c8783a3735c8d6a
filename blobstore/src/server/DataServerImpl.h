#pragma once
/// Internals of DataServer shared with its acceptor and connections (reactor
/// thread).

#include "ConnectionLimits.h"
#include "DataServer.h"
#include "LogThrottle.h"
#include "TransferMetrics.h"

#include <ace/Event_Handler.h>
#include <ace/Reactor.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace blobstreaming::server {

class CommitPool;
class NamedAdmission;
class DataAcceptor;
class ServerConnection;

struct DataServer::Impl {
    Impl(Store& s, TicketRegistry& t, ReservationTable& r, DataServerConfig c);
    ~Impl();

    /// The reactor thread: handles events until stop(), whatever interrupts
    /// the wait; gives up (recording failure) only after repeated errors.
    void run_reactor() noexcept;
    void set_failure(const std::string& why);

    Store& store;
    TicketRegistry& tickets;
    ReservationTable& reservations;
    const DataServerConfig config;

    /// Named requests (DataServer::serve_named); null: not served.
    std::atomic<NamedAdmission*> named{nullptr};
    std::atomic<std::uint32_t> active{0};
    /// MB/s of the last completed transfer (0 before the first).
    std::atomic<double> last_mbps{0.0};
    TransferMetrics metrics;
    /// Live connections; touched on the reactor thread only (and by stop()
    /// after the reactor thread has ended).
    std::set<ServerConnection*> connections;
    /// The caps of docs/PROTOCOL.md "Connections", sized by start().
    ConnectionLimits<ServerConnection> limits{ConnectionCaps{}};
    /// Lines an attacker can provoke at will (reactor thread).
    LogThrottle refused_log{"refused or evicted data connections"};
    LogThrottle expired_log{"data connections closed without a valid Request in time"};
    LogThrottle accept_log{"failed accepts on the data port"};

    std::unique_ptr<ACE_Reactor> reactor;
    /// Runs the commits that wait for the disk off the reactor thread.
    /// Shared only so that wakers (ServerConnection::waker()) that run after
    /// the data plane is gone find it gone (they hold a weak_ptr).
    std::shared_ptr<CommitPool> commits;
    std::unique_ptr<DataAcceptor> acceptor;
    std::unique_ptr<ACE_Event_Handler> housekeeper;
    std::thread thread;
    std::string bound_host;
    std::uint16_t bound_port = 0;
    bool running = false;
    std::atomic<bool> stopping{false};
    mutable std::mutex failure_mutex;
    std::string failure;  ///< guarded by failure_mutex
};

}  // namespace blobstreaming::server
