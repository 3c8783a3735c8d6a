#pragma once
/// A running blobstored: one store, its data plane and its servants.

#include "DaemonOptions.h"
#include "MetricsEndpoint.h"
#include "SdcStatus.h"
#include "StoreEntry.h"

#include "servants/BlobLocator_i.h"
#include "servants/BlobStore_i.h"
#include "servants/Fetcher.h"
#include "servants/ImageShelf.h"
#include "servants/ServantContext.h"
#include "service/NamedRequests.h"
#include "service/StoreService.h"
#include "server/DataServer.h"
#include "server/ReservationTable.h"
#include "server/StoreEventHub.h"
#include "server/TicketRegistry.h"
#include "server/TransporterRegistry.h"

#include <blobstreaming/blobstore/ReadThroughStore.h>
#include <blobstreaming/blobstore/Store.h>
#include <blobstreaming/transporter/corba/ConnectionGate.h>
#include <blobstreaming/transporter/daemon/NoticeDispatcher.h>

#include <omniORB4/CORBA.h>
#include <omniORB4/Naming.hh>

#include <memory>
#include <mutex>
#include <string>

namespace blobstreaming::daemon {

/// Life cycle, on the main thread: start() (throws Error: the store cannot
/// be opened, the data address cannot be bound, Errc::unreachable when the
/// naming service cannot be contacted, Errc::store_busy — before the store
/// is opened — when its entry names another daemon of the same name that
/// answers) returns the ready line; stop() (also
/// run by the destructor) stops the data plane — in-flight pushes are
/// aborted and leave nothing visible — then the notice thread, removes the
/// naming bindings and destroys the ORB.
class Daemon {
public:
    explicit Daemon(DaemonOptions options);
    ~Daemon();
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    std::string start();
    void stop() noexcept;

    /// Periodic upkeep on the main thread (every --naming-check): reclaims
    /// the transporters idle past --transporter-idle (logging how many, and
    /// how many are still open, when that changes something); publishes
    /// the store's status to the SDC provider (if any); registers the store
    /// again when its Naming Service entry is missing or names a daemon that
    /// is gone (the Naming Service was restarted without its data), never
    /// over another daemon of the same name that answers (StoreEntry); and
    /// rebinds BlobStreaming/Locator to this daemon's locator when that
    /// binding is missing or its daemon is gone. A Naming Service that
    /// cannot be reached is logged once and tried again. Never throws.
    void maintain() noexcept;

    /// Empty while the data plane serves; why it stopped for good otherwise
    /// (the caller exits rather than keep issuing tickets nobody serves).
    std::string data_plane_failure() const;

    /// SIGHUP, on the main thread after start(): `next` is the configuration
    /// read again (`source` says from where, for the log). Logs every
    /// setting that differs — applied at once, or needing a restart
    /// (ConfigReload.h) — and applies the live ones: the log level (of
    /// spdlog's default logger), the reservation and transporter limits,
    /// the access list. Never throws.
    void reload(const DaemonOptions& next, const std::string& source) noexcept;

    /// The settings in force (the live ones as last reloaded).
    const DaemonOptions& options() const noexcept { return options_; }

private:
    std::unique_ptr<ReadThroughStore> open_store() const;
    void naming_unreachable(const std::string& why) noexcept;

    DaemonOptions options_;
    server::LiveAccessList access_;  ///< options_.access, replaced by reload()
    /// The store as served: its decorators, the ReadThroughStore outermost.
    std::unique_ptr<ReadThroughStore> store_;
    std::unique_ptr<server::TicketRegistry> tickets_;
    std::unique_ptr<server::ReservationTable> reservations_;
    std::unique_ptr<server::DataServer> data_;
    std::unique_ptr<NoticeDispatcher> notices_;
    std::shared_ptr<server::StoreEventHub> events_;  ///< shared with the ObservedStore in store_
    std::unique_ptr<server::TransporterRegistry> transporters_;
    /// Publishes the store's status over SDC now (main thread every 2 s, and
    /// the data plane's reactor thread when a transfer ends).
    void publish_sdc_status() noexcept;
    std::mutex sdc_mutex_;  ///< guards sdc_ (main and reactor threads)
    std::unique_ptr<SdcStatus> sdc_;
    std::unique_ptr<MetricsEndpoint> metrics_;
    std::unique_ptr<corba::Fetcher> fetcher_;    ///< BlobStore::fetch and read-through
    std::unique_ptr<corba::ImageShelf> images_;  ///< BlobStore::shareImage (a FileStore offering its files)
    /// The store's upstream with --read-through (through fetcher_).
    std::unique_ptr<corba::FartherStores> upstream_;
    /// The text of a scrape: the data plane's counters, the store's use,
    /// open reservations, the build (the metrics endpoint's thread).
    std::string metrics_text() const;
    std::unique_ptr<service::StoreService> service_;  ///< what the servants ask
    /// What the data plane asks for named requests (stopped with data_).
    std::unique_ptr<service::NamedRequests> named_;
    std::unique_ptr<corba::ServantContext> context_;

    CORBA::ORB_var orb_;
    corba::GateSweeper control_gate_;  ///< ends control connections beyond the caps omniORB did not ask about
    PortableServer::POA_var poa_;
    CosNaming::NamingContext_var naming_;
    CORBA::Object_var store_ref_;
    CORBA::Object_var locator_ref_;
    StoreEntry entry_;
    bool bound_ = false;
    bool stopped_ = false;
    bool naming_lost_ = false;
};

}  // namespace blobstreaming::daemon
