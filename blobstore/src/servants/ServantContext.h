#pragma once
/// What the control-plane servants of one daemon share: the store service
/// that decides (service/StoreService.h) and what only CORBA needs. Owned by
/// the daemon; outlives every servant (the ORB is destroyed first).

#include "service/StoreService.h"

#include <blobstreaming/transporter/corba/Exceptions.h>

#include <BlobStreaming.hh>

#include <chrono>
#include <cstdint>
#include <string>

namespace blobstreaming {
namespace daemon {
class NoticeDispatcher;
}  // namespace daemon
namespace server {
class DataServer;
class StoreEventHub;
class TransporterRegistry;
}  // namespace server
}  // namespace blobstreaming

namespace blobstreaming::corba {

class Fetcher;

struct ServantContext {
    explicit ServantContext(service::StoreService& s) : service(s) {}

    /// Permissions, the index, reservations, tickets, files and images.
    service::StoreService& service;
    /// The certificate subject this daemon presents to other stores (its
    /// --tls-cert), "" without TLS (BlobStore::identity).
    std::string identity;
    BlobStreaming::StoreTier tier = BlobStreaming::TIER_WORKSTATION;
    /// The data plane: its active transfers (BlobStore::status; not owned;
    /// null: none).
    const server::DataServer* data = nullptr;
    std::string data_host;  ///< advertised in tickets and dataAddress()
    std::uint16_t data_port = 0;
    PortableServer::POA_ptr poa = nullptr;  ///< where transporters are activated (not owned)
    /// Delivers SEND_NOTIFICATIONS notices off the data plane's thread (not
    /// owned; null: such notices are dropped).
    daemon::NoticeDispatcher* notices = nullptr;
    /// The open transporters: caps per client and in total, reclamation of
    /// idle ones (not owned; null: no caps, nothing reclaimed).
    server::TransporterRegistry* transporters = nullptr;
    /// The store's event subscriptions (BlobStore::subscribe; not owned;
    /// null: subscribe fails with NO_RESOURCES).
    server::StoreEventHub* events = nullptr;
    /// Store-to-store copies (BlobStore::fetch, beginFetch, awaitFetch,
    /// fetchEach; not owned; null: they fail with LimitReached).
    Fetcher* fetcher = nullptr;

    /// The store's name (BlobStore::name, OutOfSpace).
    const std::string& store_name() const noexcept { return service.store_name(); }
};

/// The client of the current request: its certificate subject
/// (caller_subject()) and whom limits count (caller_client()).
service::Caller current_caller();

/// Call from the `catch (...)` of an operation whose IDL `raises` clause is
/// `declared`: the service's PermissionDenied becomes CORBA::NO_PERMISSION
/// with minor code kNoPermissionMinor + 1 + the permission; anything else is
/// rethrown as rethrow_declared() does.
[[noreturn]] void rethrow_idl(const ServantContext& context, unsigned declared, const IdlContext& c = {});

/// Checks that the client of the current request holds `permission`
/// (StoreService::require); CORBA::NO_PERMISSION otherwise.
void require_permission(const ServantContext& context, server::Permission permission, const char* operation);

/// An IDL Reservation.
void to_idl_reservation(const service::StoreService::Opened& r, BlobStreaming::Reservation& out);

/// Converts an IDL relative time to milliseconds, saturating.
std::chrono::milliseconds to_milliseconds(const BlobStreaming::TimeValue& t);
/// Milliseconds to an IDL relative time.
BlobStreaming::TimeValue to_time_value(std::chrono::milliseconds ms);

}  // namespace blobstreaming::corba
