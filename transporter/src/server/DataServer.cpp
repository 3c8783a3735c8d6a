#include "DataServer.h"

#include "DataAcceptor.h"
#include "DataConnection.h"
#include "DataServerImpl.h"
#include "ReservationTable.h"
#include "TicketRegistry.h"

#include <blobstreaming/blobstore/Error.h>

#include <ace/Init_ACE.h>
#include <ace/Dev_Poll_Reactor.h>
#include <ace/INET_Addr.h>

#include <spdlog/spdlog.h>

#include <sys/socket.h>

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace blobstreaming::server {
namespace {

/// Purges expired tickets and abandoned reservations on the reactor thread.
class Housekeeper : public ACE_Event_Handler {
public:
    Housekeeper(TicketRegistry& tickets, ReservationTable& reservations) : tickets_(tickets), reservations_(reservations) {}
    int handle_timeout(const ACE_Time_Value&, const void*) override
    {
        try {
            tickets_.purge();
            reservations_.purge();
        } catch (const std::exception& e) {
            spdlog::warn("data server housekeeping failed: {}", e.what());
        }
        return 0;
    }

private:
    TicketRegistry& tickets_;
    ReservationTable& reservations_;
};

constexpr std::size_t kMaxHandles = 4096;

}  // namespace

DataServer::Impl::Impl(Store& s, TicketRegistry& t, ReservationTable& r, DataServerConfig c)
    : store(s), tickets(t), reservations(r), config(std::move(c))
{
}

DataServer::Impl::~Impl() = default;

DataServer::DataServer(Store& store, TicketRegistry& tickets, ReservationTable& reservations, DataServerConfig config)
    : impl_(std::make_unique<Impl>(store, tickets, reservations, std::move(config)))
{
}

DataServer::~DataServer() { stop(); }

void DataServer::start()
{
    Impl& d = *impl_;
    if (d.running) return;
    ACE::init();
    d.reactor = std::make_unique<ACE_Reactor>(new ACE_Dev_Poll_Reactor(kMaxHandles), true);

    ACE_INET_Addr addr;
    in_addr v4{};
    const bool is_v4 = ::inet_pton(AF_INET, d.config.host.c_str(), &v4) == 1;
    if (addr.set(d.config.port, d.config.host.c_str(), 1, is_v4 ? AF_INET : AF_UNSPEC) == -1)
        throw Error(Errc::unreachable, "data address " + d.config.host + ":" + std::to_string(d.config.port) +
                                           ": cannot resolve host " + d.config.host);
    d.acceptor = std::make_unique<DataAcceptor>(&d);
    if (d.acceptor->open(addr, d.reactor.get(), ACE_NONBLOCK) == -1) {
        const int err = errno;
        d.acceptor.reset();
        throw Error(Errc::unreachable, "cannot listen for data connections on " + d.config.host + ":" +
                                           std::to_string(d.config.port) + ": " + std::strerror(err));
    }
    // ACE listens with a backlog of 5: a burst of concurrent clients would
    // see SYNs dropped and a 1 s retransmission. Linux applies a second
    // listen() to the bound socket.
    ::listen(d.acceptor->acceptor().get_handle(), SOMAXCONN);
    ACE_INET_Addr bound;
    d.acceptor->acceptor().get_local_addr(bound);
    d.bound_host = d.config.host;
    d.bound_port = bound.get_port_number();

    d.housekeeper = std::make_unique<Housekeeper>(d.tickets, d.reservations);
    ACE_Time_Value period;
    period.msec(static_cast<long>(d.config.housekeeping_period.count()));
    d.reactor->schedule_timer(d.housekeeper.get(), nullptr, period, period);

    d.running = true;
    d.thread = std::thread([reactor = d.reactor.get()] {
        reactor->owner(ACE_Thread::self());
        reactor->run_reactor_event_loop();
    });
    spdlog::info("data plane listening on {}:{} ({})", d.bound_host, d.bound_port, "epoll reactor");
}

void DataServer::stop() noexcept
{
    Impl& d = *impl_;
    if (!d.running) return;
    d.running = false;
    d.reactor->end_reactor_event_loop();
    if (d.thread.joinable()) d.thread.join();
    d.reactor->owner(ACE_Thread::self());
    // The reactor thread has ended: the connections are ours now.
    std::vector<DataConnection*> open(d.connections.begin(), d.connections.end());
    if (!open.empty()) spdlog::info("data plane: closing {} connection(s)", open.size());
    for (DataConnection* c : open) c->shutdown_now();
    d.reactor->cancel_timer(d.housekeeper.get());
    d.acceptor->close();
    d.acceptor.reset();
    d.reactor->close();
    d.reactor.reset();
    d.housekeeper.reset();
}

const std::string& DataServer::host() const noexcept { return impl_->bound_host; }
std::uint16_t DataServer::port() const noexcept { return impl_->bound_port; }
std::uint32_t DataServer::active_transfers() const noexcept { return impl_->active.load(); }
double DataServer::last_transfer_mbps() const noexcept { return impl_->last_mbps.load(); }

}  // namespace blobstreaming::server
