#include "Daemon.h"

#include "ConfigReload.h"

#include "server/StoreRegistry.h"
#include <blobstreaming/cli/CommandLine.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <sys/resource.h>

namespace blobstreaming::daemon {
namespace {

/// omniORB endPoint for HOST:PORT: an empty port is ephemeral, an empty
/// host every interface.
std::string endpoint(const HostPort& hp, bool tls)
{
    const std::string host = hp.host == "0.0.0.0" ? "" : hp.host;
    return std::string(tls ? "giop:ssl:" : "giop:tcp:") + host + ":" +
           (hp.port == 0 ? std::string() : std::to_string(hp.port));
}

/// omniORB endPointPublish for --advertise HOST: the port left empty is
/// the one the endpoint listens on.
std::string published_endpoint(const std::string& host, bool tls)
{
    const bool ipv6 = host.find(':') != std::string::npos;
    return std::string(tls ? "giop:ssl:" : "giop:tcp:") + (ipv6 ? "[" + host + "]" : host) + ":";
}

bool is_wildcard(const std::string& host) { return host == "0.0.0.0" || host == "::" || host.empty(); }

/// Control connections served by a thread each; omniORB's default is 10000.
constexpr int kThreadPerConnectionLimit = 128;
/// omniORB goes back to a thread per connection below this many.
constexpr unsigned kThreadPerConnectionLowerLimit = kThreadPerConnectionLimit * 3 / 4;
/// The control connections take at most this share of the descriptor limit
/// (1/8): the data plane, files and the Naming Service keep the rest.
constexpr unsigned long kControlShare = 8;

/// How long another daemon registered under this store's name has to answer.
constexpr std::chrono::milliseconds kProbeBound{3000};
/// Delivery threads of transfer notices and store events (docs/EVENTS.md, docs/DAEMON.md).
constexpr unsigned kNoticeThreads = 4;
constexpr unsigned kPromptNoticeThreads = 2;

/// Raises the soft descriptor limit to the hard one: every data connection,
/// control-plane connection and open Blob costs a descriptor, and the usual
/// soft default (1024) is far below what a store should serve. The data
/// plane sizes its reactor and its connection caps from the result.
/// Returns the limit in force (1024 when it cannot be read).
rlim_t raise_descriptor_limit()
{
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        spdlog::warn("cannot read the descriptor limit: {}", std::strerror(errno));
        return 1024;
    }
    const auto text = [](rlim_t v) { return v == RLIM_INFINITY ? std::string("unlimited") : std::to_string(v); };
    if (rl.rlim_cur == rl.rlim_max) {
        spdlog::info("descriptor limit {}", text(rl.rlim_cur));
        return rl.rlim_cur;
    }
    const rlim_t before = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        spdlog::warn("cannot raise the descriptor limit from {} to {}: {}", text(before), text(rl.rlim_max),
                     std::strerror(errno));
        return before;
    }
    spdlog::info("descriptor limit raised from {} to {}", text(before), text(rl.rlim_max));
    return rl.rlim_cur;
}

/// The control port's caps (ConnectionGate.h): the options, the total
/// lowered to kControlShare of the descriptor limit (at least 2).
corba::GateLimits control_limits(const DaemonOptions& o, rlim_t descriptors)
{
    const rlim_t share = descriptors == RLIM_INFINITY ? 65536 : std::max<rlim_t>(descriptors / kControlShare, 2);
    corba::GateLimits limits;
    limits.total = static_cast<unsigned>(std::min<rlim_t>(o.max_control_connections, share));
    limits.per_peer = static_cast<unsigned>(std::min<std::size_t>(o.max_control_connections_per_peer, limits.total));
    if (limits.total < o.max_control_connections)
        spdlog::warn("control port: at most {} connections instead of {}: an eighth of the descriptor limit ({})",
                     limits.total, o.max_control_connections, descriptors);
    return limits;
}

}  // namespace

Daemon::Daemon(DaemonOptions options)
    : options_(std::move(options)), access_(options_.access), entry_(options_.name, options_.naming, kProbeBound)
{}

Daemon::~Daemon() { stop(); }

std::unique_ptr<ReadThroughStore> Daemon::open_store() const
{
    StoreSettings settings = options_.store_settings;
    settings.listener = events_;
    return StoreRegistry::builtin().open(options_.store, settings);
}

std::string Daemon::start()
{
    const rlim_t descriptors = raise_descriptor_limit();
    const bool tls = options_.tls.enabled();
    if (tls) corba::configure_ssl(options_.tls);
    // omniORB serves each control connection on a thread of its own: idle
    // connections (anyone may open them, no credential needed) would each
    // hold a thread. Past kThreadPerConnectionLimit connections it watches
    // them from its bounded thread pool instead. An idle one is closed after
    // --control-idle-timeout (omniORB's scan of incoming connections, every
    // second), and a call begun must arrive whole within it; the connection
    // gate caps them per address and in total (below).
    const std::string idle = std::to_string(options_.control_idle_timeout.count());
    std::vector<std::pair<std::string, std::string>> orb_options = {
        {"endPoint", endpoint(options_.control, tls)},
        {"clientCallTimeOutPeriod", "10000"},
        {"threadPerConnectionUpperLimit", std::to_string(kThreadPerConnectionLimit)},
        {"threadPerConnectionLowerLimit", std::to_string(kThreadPerConnectionLowerLimit)},
        {"inConScanPeriod", idle},
        {"scanGranularity", "1"},
        {"serverCallTimeOutPeriod", idle + "000"}};
    if (!options_.advertise.empty())  // references name that host, with the port the endpoint listens on
        orb_options.push_back({"endPointPublish", published_endpoint(options_.advertise, tls)});
    orb_ = corba::init_orb(orb_options);
    corba::install_caller_identity();  // who is calling: TLS subject or address (access list, limits)
    // Another daemon of this name that answers keeps its name (and its
    // store: two daemons on one directory would destroy each other's
    // reservations), so this is checked before the store is opened.
    naming_ = corba::naming_context(orb_, options_.naming);
    try {
        entry_.check_free(naming_);
    } catch (const CORBA::SystemException& e) {
        throw Error(Errc::unreachable, "cannot look up store \"" + options_.name + "\" in the naming service at " +
                                           options_.naming + " (CORBA " + e._name() + ")");
    }

    // Transfer notices and store events (StoreEventHub.h); each endpoint on one
    // thread at a time, so a stuck subscriber holds one of kNoticeThreads;
    // endpoints that answered promptly have kPromptNoticeThreads of their own.
    NoticeLimits notice_limits;
    notice_limits.threads = kNoticeThreads;
    notice_limits.prompt_threads = kPromptNoticeThreads;
    notices_ = std::make_unique<NoticeDispatcher>(notice_limits);
    events_ = std::make_shared<server::StoreEventHub>(
        options_.name, *notices_, EventLimits{options_.max_subscriptions, options_.max_client_subscriptions});
    store_ = open_store();
    tickets_ = std::make_unique<server::TicketRegistry>(options_.ticket_lifetime);
    reservations_ = std::make_unique<server::ReservationTable>(
        options_.reservation_grace, nullptr,
        server::ReservationLimits{options_.max_reservations, options_.max_reservations_per_client,
                                  options_.reservation_idle_at_limit});
    // Pushes an earlier run kept for a resume wait for their clients again.
    for (Store::Kept& kept : store_->take_kept()) {
        const std::string name = kept.reservation->name();
        const std::uint64_t received = kept.reservation->written();
        const std::uint64_t id = reservations_->restore(std::move(kept.reservation), kept.idle);
        spdlog::info("push {} kept across the restart as reservation {}: resumes at byte {}", quote_name(name), id,
                     received);
    }
    reservations_->purge();  // those whose grace period ran out meanwhile

    server::DataServerConfig data;
    data.host = options_.data.host;
    data.port = options_.data.port;
    data.inactivity_timeout = options_.timeout;
    data.compress = options_.compress;
    data.handshake_timeout = options_.handshake_timeout;
    data.idle_timeout = options_.idle_timeout;
    data.max_unauthenticated = options_.max_unauthenticated;
    data.max_unauthenticated_per_peer = options_.max_unauthenticated_per_peer;
    data.socket.send_buffer = options_.socket_buffer;
    data.socket.receive_buffer = options_.socket_buffer;
    if (tls) data.tls = std::make_shared<TlsContext>(TlsContext::Role::server, options_.tls);
    if (!options_.sdc_address.empty()) data.on_transfer_end = [this] { publish_sdc_status(); };
    data_ = std::make_unique<server::DataServer>(*store_, *tickets_, *reservations_, data);
    data_->start();
    transporters_ = std::make_unique<server::TransporterRegistry>(server::TransporterLimits{
        options_.transporter_idle, options_.max_transporters, options_.max_client_transporters});

    CORBA::Object_var root = orb_->resolve_initial_references("RootPOA");
    poa_ = PortableServer::POA::_narrow(root);

    corba::FetchOptions fetch;
    fetch.idle_timeout = options_.fetch_timeout;
    fetch.socket.send_buffer = options_.socket_buffer;
    fetch.socket.receive_buffer = options_.socket_buffer;
    fetch.local = options_.local_fast_path;
    if (tls) fetch.tls = std::make_shared<TlsContext>(TlsContext::Role::client, options_.tls);
    // Copies fill the store as flights of its ReadThroughStore, which pulls
    // of the Blobs follow while they arrive.
    fetcher_ = std::make_unique<corba::Fetcher>(*store_, store_->flights(), fetch);
    if (options_.local_fast_path && store_->keeps_files()) images_ = std::make_unique<corba::ImageShelf>();
    if (options_.read_through) {
        corba::FartherTiers tiers;
        tiers.naming = CosNaming::NamingContext::_duplicate(naming_);
        tiers.naming_url = options_.naming;
        tiers.own_name = options_.name;
        tiers.own_tier = options_.tier;
        upstream_ = std::make_unique<corba::FartherStores>(*fetcher_, std::move(tiers));
        store_->read_through(upstream_.get());
    }

    service::StoreServiceOptions decisions;
    decisions.store_name = options_.name;
    decisions.default_checksum = options_.checksum;
    decisions.local_fast_path = options_.local_fast_path;
    decisions.access = &access_;
    decisions.images = images_.get();
    decisions.read_through = store_.get();
    service_ = std::make_unique<service::StoreService>(*store_, *reservations_, *tickets_, std::move(decisions));
    named_ = std::make_unique<service::NamedRequests>(*service_);
    data_->serve_named(named_.get());

    context_ = std::make_unique<corba::ServantContext>(*service_);
    context_->tier = options_.tier;
    context_->data = data_.get();
    context_->data_port = data_->port();
    context_->poa = poa_.in();
    context_->notices = notices_.get();
    context_->transporters = transporters_.get();
    context_->events = events_.get();
    context_->fetcher = fetcher_.get();
    if (fetch.tls) context_->identity = fetch.tls->subject();

    PortableServer::Servant_var<corba::BlobStore_i> store_servant = new corba::BlobStore_i(*context_);
    PortableServer::ObjectId_var store_id = poa_->activate_object(store_servant);
    store_ref_ = poa_->id_to_reference(store_id);
    PortableServer::POAManager_var manager = poa_->the_POAManager();
    manager->activate();

    // The control endpoint as published in the reference; a wildcard data
    // address is advertised with the same host.
    const std::string control = corba::endpoint_of(store_ref_);
    // Anyone may connect to it without a credential: capped so that it
    // never takes the descriptors the rest of the daemon needs (omniORB 4.2
    // retries a failing accept() in a busy loop).
    const corba::GateLimits limits = control_limits(options_, descriptors);
    corba::connection_gate::install(
        static_cast<std::uint16_t>(std::strtoul(control.substr(control.rfind(':') + 1).c_str(), nullptr, 10)), limits,
        kThreadPerConnectionLowerLimit);
    control_gate_.start();
    spdlog::info("control port {}: at most {} connections, {} per address; idle ones closed after {} s", control,
                 limits.total, limits.per_peer, options_.control_idle_timeout.count());
    const std::string control_host = control.substr(0, control.rfind(':'));
    context_->data_host = !options_.advertise.empty()       ? options_.advertise
                         : is_wildcard(options_.data.host) ? control_host
                                                           : options_.data.host;

    PortableServer::Servant_var<corba::BlobLocator_i> locator_servant =
        new corba::BlobLocator_i(naming_, options_.naming, *context_, store_ref_, options_.default_store);
    PortableServer::ObjectId_var locator_id = poa_->activate_object(locator_servant);
    locator_ref_ = poa_->id_to_reference(locator_id);
    try {
        entry_.claim(naming_, store_ref_);
        bound_ = true;
        corba::bind_locator(naming_, locator_ref_);
    } catch (const CORBA::SystemException& e) {
        throw Error(Errc::unreachable, "cannot register store \"" + options_.name + "\" in the naming service at " +
                                           options_.naming + " (CORBA " + e._name() + ")");
    }

    std::string sdc_field;
    if (!options_.sdc_address.empty()) {
        auto sdc = std::unique_ptr<SdcStatus>();
        try {
            sdc = std::make_unique<SdcStatus>(options_.sdc_address, options_.name, options_.tls);
        } catch (const std::exception& e) {
            throw Error(Errc::unreachable, std::string("SDC status provider: ") + e.what());
        }
        {
            std::lock_guard<std::mutex> lock(sdc_mutex_);
            sdc_ = std::move(sdc);
        }
        publish_sdc_status();
        sdc_field = " sdc=" + sdc_->device_url();
        spdlog::info("store status served over SDC at {}", sdc_->device_url());
    }

    std::string metrics_field;
    if (options_.metrics_address) {
        metrics_ = std::make_unique<MetricsEndpoint>(*options_.metrics_address, [this] { return metrics_text(); },
                                                     options_.tls);
        metrics_field = " metrics=" + metrics_->address();
        spdlog::info("Prometheus metrics at {}://{}/metrics{}", metrics_->scheme(), metrics_->address(),
                     tls ? " (a client certificate of the CA required)" : "");
    }

    const std::string data_address = context_->data_host + ":" + std::to_string(context_->data_port);
    spdlog::info("store \"{}\" ({} store, tier {}) registered at {}; data {}, control {}", options_.name,
                 store_->kind(), tier_name(options_.tier), options_.naming, data_address, control);
    if (tls)
        spdlog::info("TLS on both planes (certificate {}, CA {}); access list: {}", options_.tls.cert, options_.tls.ca,
                     options_.access.describe());
    return "blobstored ready name=" + options_.name + " store=" + std::string(store_->kind()) +
           " data=" + data_address + " control=" + control + metrics_field + sdc_field;
}

void Daemon::maintain() noexcept
{
    if (stopped_) return;
    if (transporters_) {
        const auto swept = transporters_->sweep();
        if (swept.reclaimed > 0)
            spdlog::info("transporters: reclaimed {} idle for {} s or more (never closed, or their client is "
                         "gone); {} open by {} client(s)",
                         swept.reclaimed, static_cast<double>(options_.transporter_idle.count()) / 1000.0, swept.open,
                         swept.clients);
        if (swept.evicted > 0)
            spdlog::warn("transporters: at the limit of {} in all, reclaimed {} idle one(s) of the clients holding "
                         "the most, for clients holding fewer; {} open by {} client(s)",
                         options_.max_transporters, swept.evicted, swept.open, swept.clients);
        if (swept.refused > 0)
            spdlog::warn("transporters: refused {} openTransporter call(s) since the previous check (limits: {} per "
                         "client, {} in all); {} open by {} client(s)",
                         swept.refused, options_.max_client_transporters, options_.max_transporters, swept.open,
                         swept.clients);
    }
    publish_sdc_status();
    if (CORBA::is_nil(naming_)) return;
    try {
        if (naming_lost_) naming_ = corba::naming_context(orb_, options_.naming);
        entry_.keep(naming_, store_ref_);
        bound_ = true;
        if (!corba::locator_is_alive(naming_)) {
            corba::bind_locator(naming_, locator_ref_);
            spdlog::info("bound this daemon's locator as BlobStreaming/Locator (the previous one is gone)");
        }
        if (naming_lost_) spdlog::info("naming service at {} reachable again", options_.naming);
        naming_lost_ = false;
    } catch (const CORBA::Exception& e) {
        naming_unreachable(std::string("CORBA ") + e._name());
    } catch (const std::exception& e) {
        naming_unreachable(e.what());
    }
}

void Daemon::reload(const DaemonOptions& next, const std::string& source) noexcept
{
    try {
        const auto changes = changed_settings(options_, next);
        std::size_t applied = 0;
        for (const auto& c : changes) {
            if (c.live) {
                ++applied;
                spdlog::info("SIGHUP: {}: {} -> {} (applied)", c.option, c.before, c.after);
            } else {
                spdlog::warn("SIGHUP: {}: {} -> {} needs a restart (still {} until then)", c.option, c.before, c.after,
                             c.before);
            }
        }
        options_ = with_live_settings(options_, next);
        reservations_->set_limits(
            {options_.max_reservations, options_.max_reservations_per_client, options_.reservation_idle_at_limit});
        transporters_->set_limits(
            {options_.transporter_idle, options_.max_transporters, options_.max_client_transporters});
        access_.replace(options_.access);
        spdlog::default_logger()->set_level(options_.log_level);
        if (changes.empty()) spdlog::info("SIGHUP: configuration reread from {}: no setting changed", source);
        else
            spdlog::info("SIGHUP: configuration reread from {}: {} setting(s) applied, {} need(s) a restart", source,
                         applied, changes.size() - applied);
    } catch (const std::exception& e) {
        spdlog::error("SIGHUP: configuration not reloaded ({}); the running settings stay", e.what());
    }
}

std::string Daemon::data_plane_failure() const { return data_ ? data_->failure() : std::string(); }

void Daemon::naming_unreachable(const std::string& why) noexcept
{
    if (!naming_lost_)
        spdlog::warn("naming service at {} unreachable ({}); store \"{}\" keeps serving and registers again "
                     "when it is back",
                     options_.naming, why, options_.name);
    naming_lost_ = true;
}

std::string Daemon::metrics_text() const
{
    std::string out = data_->metrics_text();
    const StoreUsage u = store_->usage();
    const auto gauge = [&out](const char* name, const char* help, std::uint64_t value) {
        out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, value);
    };
    gauge("blobstreaming_store_capacity_bytes", "The store's capacity (0: no limit of its own).", u.capacity);
    gauge("blobstreaming_store_used_bytes", "Bytes of committed Blobs.", u.used);
    gauge("blobstreaming_store_reserved_bytes", "Bytes held by open reservations.", u.reserved);
    gauge("blobstreaming_store_blobs", "Committed Blobs.", u.blob_count);
    gauge("blobstreaming_reservations", "Open reservations (being pushed or kept for a resume).",
          reservations_->open());
    out += fmt::format("# HELP blobstreaming_build_info The build and the store it serves.\n"
                       "# TYPE blobstreaming_build_info gauge\n"
                       "blobstreaming_build_info{{version=\"{}\",store=\"{}\",kind=\"{}\",tier=\"{}\"}} 1\n",
                       cli::package_version(), options_.name, store_->kind(), tier_name(options_.tier));
    return out;
}

void Daemon::publish_sdc_status() noexcept
{
    std::lock_guard<std::mutex> lock(sdc_mutex_);
    if (!sdc_) return;
    try {
        sdc_->update(store_->usage(), data_->active_transfers(), data_->last_transfer_mbps());
    } catch (const std::exception& e) {
        spdlog::debug("SDC status update: {}", e.what());
    }
}

void Daemon::stop() noexcept
{
    if (stopped_) return;
    stopped_ = true;
    metrics_.reset();
    control_gate_.stop();
    std::unique_ptr<SdcStatus> sdc;
    {
        std::lock_guard<std::mutex> lock(sdc_mutex_);
        sdc = std::move(sdc_);
    }
    sdc.reset();  // SubscriptionEnd to subscribers, WS-Discovery Bye (outside the lock: the reactor may publish)
    if (data_) data_->stop();
    if (fetcher_) fetcher_->stop();  // its threads call the ORB and use the store
    if (store_) store_->read_through(nullptr);  // the upstream's flights have ended
    if (events_) events_->close();   // later commits and removals go nowhere
    if (notices_) notices_->stop();  // no transfer ends any more; before the ORB goes
    if (reservations_) reservations_->abort_all();
    if (!CORBA::is_nil(naming_)) {
        if (bound_) entry_.release(naming_, store_ref_);
        if (!CORBA::is_nil(locator_ref_)) corba::unbind_locator(naming_, locator_ref_);
    }
    naming_ = CosNaming::NamingContext::_nil();
    store_ref_ = CORBA::Object::_nil();
    locator_ref_ = CORBA::Object::_nil();
    poa_ = PortableServer::POA::_nil();
    if (!CORBA::is_nil(orb_)) {
        try {
            orb_->destroy();
        } catch (const CORBA::Exception& e) {
            spdlog::warn("ORB shutdown: CORBA {}", e._name());
        }
        orb_ = CORBA::ORB::_nil();
    }
}

}  // namespace blobstreaming::daemon
