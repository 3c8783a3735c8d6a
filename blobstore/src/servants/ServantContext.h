#pragma once
/// What the control-plane servants of one daemon share. Owned by the daemon;
/// outlives every servant (the ORB is destroyed first).

#include <blobstreaming/common/Checksum.h>

#include <BlobStreaming.hh>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace blobstreaming {
class ReadThroughStore;
class Store;
namespace daemon {
class NoticeDispatcher;
}  // namespace daemon
namespace server {
class LiveAccessList;
class DataServer;
class StoreEventHub;
class ReservationTable;
enum class Permission;
class TicketRegistry;
class TransporterRegistry;
}  // namespace server
}  // namespace blobstreaming

namespace blobstreaming::corba {

class Fetcher;
class ImageShelf;

struct ServantContext {
    std::string store_name;
    /// The certificate subject this daemon presents to other stores (its
    /// --tls-cert), "" without TLS (BlobStore::identity).
    std::string identity;
    BlobStreaming::StoreTier tier = BlobStreaming::TIER_WORKSTATION;
    Store* store = nullptr;
    server::TicketRegistry* tickets = nullptr;
    server::ReservationTable* reservations = nullptr;
    server::DataServer* data = nullptr;
    std::string data_host;  ///< advertised in tickets and dataAddress()
    std::uint16_t data_port = 0;
    bool local_fast_path = true;  ///< findLocalFile answers for a FileStore
    /// The checksum of pushes that ask for the store's default (blobstored
    /// --checksum).
    ChecksumAlgorithm default_checksum = kDefaultChecksum;
    PortableServer::POA_ptr poa = nullptr;           ///< where transporters are activated (not owned)
    const server::LiveAccessList* access = nullptr;  ///< null: everything permitted
    /// Delivers SEND_NOTIFICATIONS notices off the data plane's thread (not
    /// owned; null: such notices are dropped).
    daemon::NoticeDispatcher* notices = nullptr;
    /// The open transporters: caps per client and in total, reclamation of
    /// idle ones (not owned; null: no caps, nothing reclaimed).
    server::TransporterRegistry* transporters = nullptr;
    /// The store's event subscriptions (BlobStore::subscribe; not owned;
    /// null: subscribe fails with NO_RESOURCES).
    server::StoreEventHub* events = nullptr;
    /// Store-to-store copies (BlobStore::fetch, fetchEach, beginFetch; not
    /// owned; null: fetch fails with NO_RESOURCES). Read-through is not
    /// its business here: the store reads through (read_through).
    Fetcher* fetcher = nullptr;
    /// Sealed images of Blobs for the memory stores of this host
    /// (BlobStore::shareImage; not owned; null: it answers false).
    ImageShelf* images = nullptr;
    /// The decorator outermost in `store` (the same object): the fills into
    /// the store, and what a read serves (holding(): a Blob being filled is
    /// the version being received; with --read-through a Blob only a
    /// farther tier holds is filled first). Not owned; null: `store` is
    /// read as it is.
    const ReadThroughStore* read_through = nullptr;
};

/// Checks that the client of the current request (its TLS certificate's
/// subject) holds `permission` in the context's access list. Otherwise logs
/// the refusal and throws CORBA::NO_PERMISSION (corba/Exceptions.h).
void require_permission(const ServantContext& context, server::Permission permission, const char* operation);

/// Checks that the client of the current request is the one that reserved
/// reservation `id` (the same certificate subject; "" == "" without TLS).
/// Otherwise logs both subjects and throws NoSuchReservation saying that
/// another client reserved it; NoSuchReservation too when `id` is not open.
void require_reservation_owner(const ServantContext& context, BlobStreaming::ReservationId id, const char* operation);

/// The checks and work of BlobStore::reserve after its permission check,
/// shared with BlobTransporter::push: purges expired reservations, checks
/// `name`, the caller's and the total reservation limits, aborts a kept
/// reservation of `name` that the caller made or that is abandoned
/// (ReservationTable::abort_parked(): another client's live one is refused
/// with AlreadyExists instead), reserves in the store (checksummed with
/// `checksum`) and records the caller as the reservation's client. Returns
/// its id; throws what the store and the table throw (map them with
/// rethrow_reserve_failure()).
std::uint64_t open_reservation(const ServantContext& context, const char* name, std::uint64_t size, bool overwrite,
                               ChecksumAlgorithm checksum);

/// From the `catch (...)` of a reservation opened as in open_reservation():
/// rethrows as InvalidName, OutOfSpace, AlreadyExists or LimitReached (and
/// TransferFailed when `also_transfer_failed`, for BlobTransporter::push).
[[noreturn]] void rethrow_reserve_failure(const ServantContext& context, const char* name, std::uint64_t size,
                                          bool also_transfer_failed = false);

/// An IDL Reservation.
void to_idl_reservation(std::uint64_t id, const std::string& name, std::uint64_t size, std::uint64_t received,
                        ChecksumAlgorithm checksum, BlobStreaming::Reservation& out);

/// Names (or grants) per batch call: fetchEach, shareImages,
/// shareGrantedImages, grantReads.
constexpr std::size_t kMaxBatch = 1024;
/// Throws Error(limit_reached) "OPERATION: N WHAT; at most 1024 per call"
/// past kMaxBatch.
void check_batch(std::size_t count, const char* operation, const char* what);

/// Converts an IDL relative time to milliseconds, saturating.
std::chrono::milliseconds to_milliseconds(const BlobStreaming::TimeValue& t);
/// Milliseconds to an IDL relative time.
BlobStreaming::TimeValue to_time_value(std::chrono::milliseconds ms);

}  // namespace blobstreaming::corba
