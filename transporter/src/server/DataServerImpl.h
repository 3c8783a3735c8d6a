#pragma once
/// Internals of DataServer shared with its connections (reactor thread).

#include "DataServer.h"

#include <ace/Event_Handler.h>
#include <ace/Reactor.h>

#include <atomic>
#include <memory>
#include <set>
#include <thread>

namespace blobstreaming::server {

class DataAcceptor;
class DataConnection;

struct DataServer::Impl {
    Impl(Store& s, TicketRegistry& t, ReservationTable& r, DataServerConfig c);
    ~Impl();

    Store& store;
    TicketRegistry& tickets;
    ReservationTable& reservations;
    const DataServerConfig config;

    std::atomic<std::uint32_t> active{0};
    /// MB/s of the last completed transfer (0 before the first).
    std::atomic<double> last_mbps{0.0};
    /// Live connections; touched on the reactor thread only (and by stop()
    /// after the reactor thread has ended).
    std::set<DataConnection*> connections;

    std::unique_ptr<ACE_Reactor> reactor;
    std::unique_ptr<DataAcceptor> acceptor;
    std::unique_ptr<ACE_Event_Handler> housekeeper;
    std::thread thread;
    std::string bound_host;
    std::uint16_t bound_port = 0;
    bool running = false;
};

}  // namespace blobstreaming::server
