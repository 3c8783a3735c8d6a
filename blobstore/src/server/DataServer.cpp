#include "DataServer.h"

#include "CommitPool.h"
#include "DataAcceptor.h"
#include "DataServerImpl.h"
#include "ReservationTable.h"
#include "ServerConnection.h"
#include "TicketRegistry.h"

#include <blobstreaming/common/Error.h>

#include <ace/Dev_Poll_Reactor.h>
#include <ace/INET_Addr.h>
#include <ace/Init_ACE.h>

#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <sys/socket.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace blobstreaming::server {
namespace {

/// Purges expired tickets and abandoned reservations on the reactor thread,
/// and ends the windows of the data plane's log throttles.
class Housekeeper : public ACE_Event_Handler {
public:
    explicit Housekeeper(DataServer::Impl& server) : server_(server) {}
    int handle_timeout(const ACE_Time_Value&, const void*) override
    {
        try {
            server_.tickets.purge();
            // A RadosStore's abort writes the cluster's index: not here.
            CommitPool* pool = server_.commits.get();
            server_.reservations.purge([pool](std::shared_ptr<Reservation> r) {
                if (!pool) return r->abort();
                pool->submit([r] { r->abort(); }, [] {});
            });
        } catch (const std::exception& e) {
            spdlog::warn("data server housekeeping failed: {}", e.what());
        }
        const auto now = LogThrottle::Clock::now();
        server_.refused_log.flush(now);
        server_.expired_log.flush(now);
        server_.accept_log.flush(now);
        return 0;
    }

private:
    DataServer::Impl& server_;
};

/// Largest reactor handle table: ACE indexes it by descriptor and lowers the
/// process's descriptor limit to its size.
constexpr std::size_t kMaxReactorHandles = 65536;
/// Descriptors kept out of the data plane's reach: the control plane (ORB
/// endpoints and connections), the Naming Service, logging.
constexpr std::size_t kReservedDescriptors = 64;
/// Consecutive reactor failures (other than an interrupted wait) after which
/// the data plane gives up and says so.
constexpr int kMaxReactorFailures = 50;

std::size_t descriptor_limit()
{
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return kMaxReactorHandles;
    return static_cast<std::size_t>(rl.rlim_cur);
}

/// The caps for a reactor of `handles` descriptors: every data connection
/// may hold a second descriptor (the Blob's file), and at most half of them
/// may be unauthenticated, so that a flood leaves room for real transfers.
ConnectionCaps caps_for(std::size_t handles, const DataServerConfig& config)
{
    ConnectionCaps caps;
    caps.connections = handles > 2 * kReservedDescriptors ? (handles - kReservedDescriptors) / 2
                                                          : std::max<std::size_t>(handles / 4, 2);
    caps.unauthenticated = std::min(config.max_unauthenticated, std::max<std::size_t>(caps.connections / 2, 1));
    caps.unauthenticated_per_peer = std::min(config.max_unauthenticated_per_peer, caps.unauthenticated);
    if (caps.unauthenticated < config.max_unauthenticated)
        spdlog::warn("data plane: at most {} connections without a valid ticket instead of {}: the descriptor "
                     "limit ({}) leaves room for {} data connections",
                     caps.unauthenticated, config.max_unauthenticated, handles, caps.connections);
    return caps;
}

}  // namespace

DataServer::Impl::Impl(Store& s, TicketRegistry& t, ReservationTable& r, DataServerConfig c)
    : store(s), tickets(t), reservations(r), config(std::move(c))
{}

DataServer::Impl::~Impl() = default;

void DataServer::Impl::set_failure(const std::string& why)
{
    std::lock_guard<std::mutex> lock(failure_mutex);
    failure = why;
}

void DataServer::Impl::run_reactor() noexcept
{
    reactor->owner(ACE_Thread::self());
    int failures = 0;
    while (!stopping.load() && !reactor->reactor_event_loop_done()) {
        int n = 0;
        int err = 0;
        try {
            n = reactor->handle_events();
            err = errno;
        } catch (const std::exception& e) {  // a handler broke its contract
            n = -1;
            err = 0;
            spdlog::error("data plane: an event handler threw: {}", e.what());
        } catch (...) {
            n = -1;
            err = 0;
            spdlog::error("data plane: an event handler threw");
        }
        if (n >= 0) {
            failures = 0;
            continue;
        }
        if (stopping.load() || reactor->reactor_event_loop_done()) break;
        // SIGSTOP/SIGCONT, ptrace: epoll_wait returns EINTR even without a
        // signal handler. Not an end: wait again.
        if (err == EINTR) continue;
        if (++failures >= kMaxReactorFailures) {
            const std::string why = "the reactor failed " + std::to_string(failures) +
                                    " times in a row (last: " + (err ? std::strerror(err) : "an exception") + ")";
            spdlog::critical("data plane stopped: {}", why);
            set_failure(why);
            return;
        }
        spdlog::error("data plane: the reactor failed ({}); serving on", err ? std::strerror(err) : "exception");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

DataServer::DataServer(Store& store, TicketRegistry& tickets, ReservationTable& reservations, DataServerConfig config)
    : impl_(std::make_unique<Impl>(store, tickets, reservations, std::move(config)))
{}

DataServer::~DataServer() { stop(); }

void DataServer::start()
{
    Impl& d = *impl_;
    if (d.running) return;
    ACE::init();
    const std::size_t handles =
        d.config.max_handles ? d.config.max_handles : std::min(descriptor_limit(), kMaxReactorHandles);
    // restart: an interrupted epoll_wait is simply waited on again (run_reactor()
    // copes with EINTR as well).
    d.reactor = std::make_unique<ACE_Reactor>(new ACE_Dev_Poll_Reactor(handles, true), true);
    d.limits = ConnectionLimits<ServerConnection>(caps_for(handles, d.config));
    d.commits = std::make_shared<CommitPool>(*d.reactor);

    ACE_INET_Addr addr;
    in_addr v4{};
    const bool is_v4 = ::inet_pton(AF_INET, d.config.host.c_str(), &v4) == 1;
    if (addr.set(d.config.port, d.config.host.c_str(), 1, is_v4 ? AF_INET : AF_UNSPEC) == -1)
        throw Error(Errc::unreachable, "data address " + d.config.host + ":" + std::to_string(d.config.port) +
                                           ": cannot resolve host " + d.config.host);
    d.acceptor = std::make_unique<DataAcceptor>(d);
    if (!d.acceptor->open(addr, d.reactor.get())) {
        const int err = errno;
        d.acceptor.reset();
        throw Error(Errc::unreachable, "cannot listen for data connections on " + d.config.host + ":" +
                                           std::to_string(d.config.port) + ": " + std::strerror(err));
    }
    d.bound_host = d.config.host;
    d.bound_port = d.acceptor->port();

    d.housekeeper = std::make_unique<Housekeeper>(d);
    ACE_Time_Value period;
    period.msec(static_cast<long>(d.config.housekeeping_period.count()));
    d.reactor->schedule_timer(d.housekeeper.get(), nullptr, period, period);

    d.running = true;
    d.stopping = false;
    d.thread = std::thread([&d] { d.run_reactor(); });
    const ConnectionCaps& caps = d.limits.caps();
    spdlog::info("data plane listening on {}:{} (epoll reactor, {} handles, descriptor limit {}; at most {} data "
                 "connections, {} without a valid ticket, {} per peer address; handshake timeout {:.1f} s, idle "
                 "timeout {:.1f} s)",
                 d.bound_host, d.bound_port, handles, descriptor_limit(), caps.connections, caps.unauthenticated,
                 caps.unauthenticated_per_peer, std::chrono::duration<double>(d.config.handshake_timeout).count(),
                 std::chrono::duration<double>(d.config.idle_timeout).count());
}

void DataServer::stop() noexcept
{
    Impl& d = *impl_;
    if (!d.running) return;
    d.running = false;
    d.stopping = true;
    d.reactor->end_reactor_event_loop();
    if (d.thread.joinable()) d.thread.join();
    d.reactor->owner(ACE_Thread::self());
    // The reactor thread has ended: the connections are ours now. Commits in
    // flight finish first (their clients sent every byte) and are answered.
    d.commits->stop();
    std::vector<ServerConnection*> open(d.connections.begin(), d.connections.end());
    if (!open.empty()) spdlog::info("data plane: closing {} connection(s)", open.size());
    for (ServerConnection* c : open) c->shutdown_now();
    d.reactor->cancel_timer(d.housekeeper.get());
    d.acceptor->close();
    d.acceptor.reset();
    d.commits.reset();
    d.reactor->close();
    d.reactor.reset();
    d.housekeeper.reset();
}

std::string DataServer::failure() const
{
    std::lock_guard<std::mutex> lock(impl_->failure_mutex);
    return impl_->failure;
}

const std::string& DataServer::host() const noexcept { return impl_->bound_host; }
std::uint16_t DataServer::port() const noexcept { return impl_->bound_port; }
std::uint32_t DataServer::active_transfers() const noexcept { return impl_->active.load(); }
double DataServer::last_transfer_mbps() const noexcept { return impl_->last_mbps.load(); }

std::string DataServer::metrics_text() const { return impl_->metrics.render(impl_->active.load()); }

void DataServer::serve_named(NamedAdmission* admission) noexcept { impl_->named.store(admission); }

}  // namespace blobstreaming::server
