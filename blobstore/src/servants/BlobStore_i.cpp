#include "BlobStore_i.h"

#include <blobstreaming/transporter/corba/BlobInfoIdl.h>

#include "BlobTransporter_i.h"
#include "EventSubscription.h"
#include "Fetcher.h"
#include "ImageShelf.h"
#include "server/AccessList.h"
#include "server/DataServer.h"
#include "server/ReservationTable.h"
#include "server/TransporterRegistry.h"

#include <blobstreaming/blobstore/ReadThroughStore.h>
#include <blobstreaming/blobstore/Store.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Host.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/NameSeqIdl.h>
#include <blobstreaming/transporter/corba/References.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <omniORB4/omniORB.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>

#include <unistd.h>

namespace blobstreaming::corba {

namespace {
/// What fetch, beginFetch and awaitFetch raise.
constexpr unsigned kFetchErrors =
    kNoSuchBlob | kInvalidName | kOutOfSpace | kAlreadyExists | kLimitReached | kTransferFailed;
/// A committed file of this store as findLocalFile and findGrantedFile
/// answer it.
void to_idl_file(const Store::LocalFile& local, BlobStreaming::LocalFile& file)
{
    file.host = boot_id().c_str();
    file.path = local.path.c_str();
    file.dataOffset = local.data_offset;
    to_idl(local.info, file.info);
}
}  // namespace

void check_batch(std::size_t count, const char* operation, const char* what)
{
    if (count > kMaxBatch)
        throw Error(Errc::limit_reached, std::string(operation) + ": " + std::to_string(count) + " " + what +
                                             "; at most " + std::to_string(kMaxBatch) + " per call");
}

void require_permission(const ServantContext& context, server::Permission permission, const char* operation)
{
    if (!context.access) return;
    const auto access = context.access->get();
    if (!access->enforced()) return;
    const std::string subject = caller_subject();
    try {
        access->require(subject, permission);
    } catch (const Error& e) {
        spdlog::warn("store \"{}\": {} refused: {}", context.store_name, operation, e.what());
        throw CORBA::NO_PERMISSION(
            static_cast<CORBA::ULong>(kNoPermissionMinor + 1 + static_cast<unsigned>(permission)), CORBA::COMPLETED_NO);
    }
}

void require_reservation_owner(const ServantContext& context, BlobStreaming::ReservationId id, const char* operation)
{
    std::string owner;
    try {
        owner = context.reservations->client_of(id);
    } catch (const Error& e) {
        throw BlobStreaming::NoSuchReservation(e.what(), id);
    }
    const std::string client = caller_client();
    if (owner == client) return;
    // The log names both; the caller learns nothing about the other client.
    spdlog::warn("store \"{}\": {} reservation {} refused: reserved by client \"{}\", asked by \"{}\"",
                 context.store_name, operation, id, owner, client);
    const std::string msg = std::string(operation) + " reservation " + std::to_string(id) +
                            ": it was reserved by another client; only the client that reserved it may commit, "
                            "abort, fill or resume it";
    throw BlobStreaming::NoSuchReservation(msg.c_str(), id);
}

std::uint64_t open_reservation(const ServantContext& context, const char* name, std::uint64_t size, bool overwrite,
                               ChecksumAlgorithm checksum)
{
    context.reservations->purge();
    validate_blob_name(name);
    // Bounded per client and in total: checked before the store does any
    // work, and again when the reservation is added.
    const std::string client = caller_client();
    context.reservations->check_limits(client, "reserve " + quote_name(name));
    // Supersedes the caller's own kept push of `name`, or an abandoned one;
    // refuses (AlreadyExists) while another client's may still go on.
    context.reservations->abort_parked(name, client);
    auto reservation =
        context.store->reserve(name, size, overwrite ? ReserveMode::replace : ReserveMode::create, checksum);
    const std::uint64_t id = context.reservations->add(std::move(reservation), client);
    spdlog::debug("reservation {} of {} ({} bytes) opened", id, quote_name(name), size);
    return id;
}

void rethrow_reserve_failure(const ServantContext& context, const char* name, std::uint64_t size,
                             bool also_transfer_failed)
{
    IdlContext c;
    c.name = name;
    c.requested = size;
    rethrow_declared(kInvalidName | kOutOfSpace | kAlreadyExists | kLimitReached |
                         (also_transfer_failed ? kTransferFailed : kRaisesNothing),
                     context.store_name, c);
}

void to_idl_reservation(std::uint64_t id, const std::string& name, std::uint64_t size, std::uint64_t received,
                        ChecksumAlgorithm checksum, BlobStreaming::Reservation& out)
{
    out.checksum = corba::to_idl(checksum);
    out.id = id;
    out.name = name.c_str();
    out.size = size;
    out.received = received;
}

BlobStore_i::BlobStore_i(const ServantContext& context) : context_(context) {}

// Permissions (docs/PROTOCOL.md, "Access list"): name, status, dataAddress
// and openTransporter need only a verified certificate (omniORB has refused
// every other client before any upcall); each other operation names its
// permission on its first line.
char* BlobStore_i::name() { return CORBA::string_dup(context_.store_name.c_str()); }

char* BlobStore_i::identity() { return CORBA::string_dup(context_.identity.c_str()); }

BlobStreaming::StoreStatus* BlobStore_i::status()
{
    try {
        const StoreUsage usage = context_.store->usage();
        auto* s = new BlobStreaming::StoreStatus;
        s->name = context_.store_name.c_str();
        s->kind = std::string(context_.store->kind()).c_str();
        s->tier = context_.tier;
        s->capacity = usage.capacity;
        s->used = usage.used;
        s->reserved = usage.reserved;
        s->blobCount = static_cast<CORBA::ULong>(usage.blob_count);
        s->activeTransfers = context_.data->active_transfers();
        s->readThrough = context_.read_through && context_.read_through->reads_through();
        s->host = boot_id().c_str();
        s->localFiles = context_.local_fast_path && context_.store->keeps_files();
        return s;
    } catch (...) {
        rethrow_declared(kRaisesNothing, context_.store_name);
    }
}

CORBA::Boolean BlobStore_i::contains(const char* name)
{
    require_permission(context_, server::Permission::read, "contains");
    try {
        validate_blob_name(name);
        return context_.store->contains(name);
    } catch (...) {
        rethrow_declared(kInvalidName, context_.store_name, {name});
    }
}

BlobStreaming::BlobInfo* BlobStore_i::stat(const char* name)
{
    require_permission(context_, server::Permission::read, "stat");
    try {
        return to_idl(context_.store->stat(name));
    } catch (...) {
        rethrow_declared(kNoSuchBlob | kInvalidName, context_.store_name, {name});
    }
}

BlobStreaming::BlobInfoSeq* BlobStore_i::list()
{
    require_permission(context_, server::Permission::read, "list");
    try {
        const auto blobs = context_.store->list();
        auto* out = new BlobStreaming::BlobInfoSeq;
        out->length(static_cast<CORBA::ULong>(blobs.size()));
        for (CORBA::ULong i = 0; i < out->length(); ++i) to_idl(blobs[i], (*out)[i]);
        return out;
    } catch (...) {
        rethrow_declared(kRaisesNothing, context_.store_name);
    }
}

BlobStreaming::Reservation* BlobStore_i::reserve(const char* name, BlobStreaming::ByteCount size,
                                                 CORBA::Boolean overwrite)
{
    require_permission(context_, server::Permission::write, "reserve");
    try {
        const std::uint64_t id = open_reservation(context_, name, size, overwrite, context_.default_checksum);
        auto* out = new BlobStreaming::Reservation;
        to_idl_reservation(id, name, size, 0, context_.default_checksum, *out);
        return out;
    } catch (...) {
        rethrow_reserve_failure(context_, name, size);
    }
}

BlobStreaming::BlobInfo* BlobStore_i::commit(BlobStreaming::ReservationId id,
                                             const BlobStreaming::BlobChecksum& expected)
{
    require_permission(context_, server::Permission::write, "commit");
    require_reservation_owner(context_, id, "commit");
    IdlContext c;
    c.id = id;
    try {
        const Checksum checksum = corba::checksum_of(expected, "commit reservation " + std::to_string(id));
        const server::ReservationTable::Taken taken = context_.reservations->take(id);
        Reservation& reservation = taken.get();
        c.name = reservation.name();
        // Filled in parts (push --streams): the checksum combined from
        // theirs, compared with the client's for the whole Blob.
        return to_idl(taken.assembled ? reservation.commit_assembled(*taken.assembled, &checksum)
                                      : reservation.commit(&checksum));
    } catch (...) {
        rethrow_declared(kNoSuchReservation | kTransferFailed, context_.store_name, c);
    }
}

void BlobStore_i::abort(BlobStreaming::ReservationId id)
{
    require_permission(context_, server::Permission::write, "abort");
    require_reservation_owner(context_, id, "abort");
    try {
        context_.reservations->abort(id);
        spdlog::debug("reservation {} aborted on request", id);
    } catch (...) {
        IdlContext c;
        c.id = id;
        rethrow_declared(kNoSuchReservation, context_.store_name, c);
    }
}

BlobStreaming::Reservation* BlobStore_i::resumable(const char* name)
{
    require_permission(context_, server::Permission::write, "resumable");
    try {
        validate_blob_name(name);
        context_.reservations->purge();
        const auto r = context_.reservations->resumable(name, caller_client());
        spdlog::info("push {} resumes reservation {} at byte {} of {}", quote_name(name), r.id, r.received, r.size);
        auto* out = new BlobStreaming::Reservation;
        to_idl_reservation(r.id, name, r.size, r.received, r.checksum, *out);
        return out;
    } catch (...) {
        rethrow_declared(kInvalidName | kNoSuchReservation, context_.store_name, {name});
    }
}

// Rereading is disk and CPU work on this upcall thread, never on the reactor:
// transfers keep moving while a Blob is verified.
BlobStreaming::BlobInfo* BlobStore_i::verify(const char* name)
{
    require_permission(context_, server::Permission::read, "verify");
    try {
        const auto t0 = std::chrono::steady_clock::now();
        const blobstreaming::BlobInfo info = context_.store->verify(name);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        spdlog::info("verified {}: {} bytes in {:.3f} s, {} matches", quote_name(name), info.size, seconds,
                     info.checksum.text());
        return to_idl(info);
    } catch (const Error& e) {
        if (e.code() == Errc::corrupt) spdlog::error("{}", e.what());
        rethrow_declared(kNoSuchBlob | kInvalidName | kCorrupt, context_.store_name, {name});
    } catch (...) {
        rethrow_declared(kNoSuchBlob | kInvalidName | kCorrupt, context_.store_name, {name});
    }
}

void BlobStore_i::remove(const char* name)
{
    require_permission(context_, server::Permission::remove, "remove");
    try {
        context_.store->remove(name);
        spdlog::info("removed {}", quote_name(name));
    } catch (...) {
        rethrow_declared(kNoSuchBlob | kInvalidName, context_.store_name, {name});
    }
}

Grant BlobStore_i::fetch_grant(const BlobStreaming::ReadGrant& grant) const
{
    const std::string name = grant.ticket.blob.in();
    const std::string what = "fetch " + quote_name(name);
    validate_blob_name(name);
    if (!context_.fetcher) throw Error(Errc::limit_reached, what + ": this store does not fetch");
    Grant out = context_.fetcher->grant_of(grant, what);
    if (out.name() != name)
        throw Error(Errc::invalid_argument, what + ": the grant's version names " + quote_name(out.name()));
    if (out.source_name == context_.store_name)
        throw Error(Errc::invalid_argument, what + ": the source is this store, \"" + out.source_name +
                                                "\" (copy between two different stores)");
    return out;
}

BlobStreaming::BlobInfo* BlobStore_i::fetch(const BlobStreaming::ReadGrant& grant, CORBA::Boolean overwrite)
{
    require_permission(context_, server::Permission::write, "fetch");
    const std::string name = grant.ticket.blob.in();
    try {
        const BlobInfo info =
            context_.fetcher->fetch(fetch_grant(grant), overwrite ? ReserveMode::replace : ReserveMode::create);
        return to_idl(info);
    } catch (...) {
        rethrow_declared(kFetchErrors, context_.store_name, {name});
    }
}

BlobStreaming::FetchOutcomeSeq* BlobStore_i::fetchEach(const BlobStreaming::ReadGrantSeq& grants,
                                                       CORBA::Boolean overwrite)
{
    require_permission(context_, server::Permission::write, "fetchEach");
    if (grants.length() == 0) return new BlobStreaming::FetchOutcomeSeq;
    const std::string first = grants[0].ticket.blob.in();
    std::vector<std::optional<Grant>> parsed(grants.length());
    std::vector<std::string> errors(grants.length());
    std::vector<Errc> codes(grants.length(), Errc::ok);
    try {
        check_batch(grants.length(), "fetchEach", "grants");
        if (!context_.fetcher) throw Error(Errc::limit_reached, "fetchEach: this store does not fetch");
        for (CORBA::ULong i = 0; i < grants.length(); ++i) {
            if (CORBA::is_nil(grants[i].source.in()) || CORBA::is_nil(grants[0].source.in()) ||
                !grants[i].source->_is_equivalent(grants[0].source.in()))
                throw Error(Errc::invalid_argument, "fetchEach: the grants name more than one source store (" +
                                                        quote_name(grants[i].ticket.blob.in()) + "'s differs from " +
                                                        quote_name(first) + "'s)");
        }
        // Every grant's own problems (a bad name, a ticket of another kind)
        // are its outcome; the source itself is the call's.
        fetch_grant(grants[0]);
    } catch (...) {
        rethrow_declared(kFetchErrors, context_.store_name, {first});
    }
    std::vector<Grant> usable;
    for (CORBA::ULong i = 0; i < grants.length(); ++i) {
        try {
            parsed[i] = fetch_grant(grants[i]);
            usable.push_back(*parsed[i]);
        } catch (const Error& e) {
            codes[i] = e.code();
            errors[i] = e.what();
        }
    }
    const ReserveMode mode = overwrite ? ReserveMode::replace : ReserveMode::create;
    context_.fetcher->prepare_images(usable);
    BlobStreaming::FetchOutcomeSeq_var out = new BlobStreaming::FetchOutcomeSeq;
    out->length(grants.length());
    for (CORBA::ULong i = 0; i < grants.length(); ++i) {
        BlobStreaming::FetchOutcome& o = out[i];
        const std::string name = grants[i].ticket.blob.in();
        blobstreaming::BlobInfo info;
        o.code = static_cast<CORBA::UShort>(codes[i]);
        o.message = errors[i].c_str();
        if (parsed[i]) {
            try {
                info = context_.fetcher->fetch(*parsed[i], mode);
            } catch (const Error& e) {
                o.code = static_cast<CORBA::UShort>(e.code());
                o.message = e.what();
            } catch (const std::exception& e) {
                o.code = static_cast<CORBA::UShort>(Errc::transfer_failed);
                o.message = ("fetch " + quote_name(name) + ": internal error: " + e.what()).c_str();
            }
        }
        to_idl(info, o.info);  // marshalled also for a failure: an enum left uninitialised fails the reply
    }
    return out._retn();
}

void BlobStore_i::beginFetch(const BlobStreaming::ReadGrant& grant, CORBA::Boolean overwrite)
{
    require_permission(context_, server::Permission::write, "beginFetch");
    const std::string name = grant.ticket.blob.in();
    try {
        context_.fetcher->begin(fetch_grant(grant), overwrite ? ReserveMode::replace : ReserveMode::create,
                                caller_subject());
    } catch (...) {
        rethrow_declared(kFetchErrors, context_.store_name, {name});
    }
}

BlobStreaming::BlobInfo* BlobStore_i::awaitFetch(const char* name)
{
    require_permission(context_, server::Permission::write, "awaitFetch");
    try {
        validate_blob_name(name);
        if (!context_.fetcher)
            throw Error(Errc::limit_reached, "fetch " + quote_name(name) + ": this store does not fetch");
        return to_idl(context_.fetcher->await(name, context_.store_name, caller_subject()));
    } catch (...) {
        rethrow_declared(kFetchErrors, context_.store_name, {name});
    }
}

server::TicketBinding BlobStore_i::granted(const BlobStreaming::TicketId grant, const char* operation) const
{
    protocol::TicketId id{};
    std::copy(grant, grant + id.size(), id.begin());
    const std::string tag = protocol::ticket_tag(id);
    server::TicketBinding binding;
    try {
        binding = context_.tickets->inspect(id);
    } catch (const Error& e) {
        throw Error(Errc::refused, std::string(operation) + ": " + e.what());
    }
    if (binding.direction != protocol::FrameType::pull || binding.offset != 0 || !binding.version ||
        binding.length != binding.version->size)
        throw Error(Errc::refused, std::string(operation) + ": ticket " + tag + " is not a read grant of a whole Blob");
    const std::string caller = caller_subject();
    if (binding.client != caller) {
        spdlog::warn("store \"{}\": {} refused: ticket {} was issued to \"{}\", not to \"{}\"", context_.store_name,
                     operation, tag, binding.client, caller);
        throw Error(Errc::refused, std::string(operation) + ": ticket " + tag + " was issued to another client");
    }
    return binding;
}

CORBA::Boolean BlobStore_i::findGrantedFile(const BlobStreaming::TicketId grant, BlobStreaming::LocalFile_out file)
{
    file = new BlobStreaming::LocalFile;
    // Every field is marshalled, also in a `false` answer: an enum left
    // uninitialised would fail the reply (MARSHAL).
    to_idl(blobstreaming::BlobInfo{}, file->info);
    std::string name;
    try {
        const server::TicketBinding binding = granted(grant, "findGrantedFile");
        name = binding.blob;
        // A grant of a Blob still arriving names the version being
        // received (no commit time): the data port follows it.
        const auto local = offered_file(name, context_.local_fast_path);
        if (!local || !same_version(local->info, *binding.version)) return false;
        to_idl_file(*local, *file);
        return true;
    } catch (...) {
        rethrow_declared(kNoSuchBlob | kTransferFailed, context_.store_name, {name});
    }
}

BlobStreaming::SharedImageSeq* BlobStore_i::shareGrantedImages(const BlobStreaming::TicketIdSeq& grants)
{
    try {
        check_batch(grants.length(), "shareGrantedImages", "grants");
    } catch (...) {
        rethrow_declared(kLimitReached, context_.store_name, {});
    }
    BlobStreaming::SharedImageSeq_var out = new BlobStreaming::SharedImageSeq;
    out->length(grants.length());
    for (CORBA::ULong i = 0; i < grants.length(); ++i) {
        try {
            const server::TicketBinding binding = granted(grants[i], "shareGrantedImages");
            if (!share_image(binding.blob, out[i]) ||
                !same_version(from_idl(out[i].info, "shareGrantedImages"), *binding.version)) {
                out[i].fd = -1;
                to_idl(blobstreaming::BlobInfo{}, out[i].info);
            }
        } catch (const std::exception& e) {
            spdlog::debug("shareGrantedImages: {}", e.what());
            out[i].fd = -1;
            to_idl(blobstreaming::BlobInfo{}, out[i].info);
        }
    }
    return out._retn();
}

std::optional<Store::LocalFile> BlobStore_i::offered_file(const std::string& name, bool offering) const
{
    if (!offering) {
        context_.store->stat(name);  // NoSuchBlob still applies
        return std::nullopt;
    }
    // A Blob a fill is bringing here: none (ReadThroughStore::local_file),
    // its committed file (if any) being the version replaced; a pull
    // follows the new bytes.
    auto local = context_.store->local_file(name);
    // Nothing to map (mmap of 0 bytes fails): use the socket.
    if (!local || local->info.size == 0) return std::nullopt;
    return local;
}

CORBA::Boolean BlobStore_i::findLocalFile(const char* name, BlobStreaming::LocalFile_out file)
{
    require_permission(context_, server::Permission::read, "findLocalFile");
    file = new BlobStreaming::LocalFile;
    // Every field is marshalled, also in a `false` answer: an enum left
    // uninitialised would fail the reply (MARSHAL).
    to_idl(blobstreaming::BlobInfo{}, file->info);
    try {
        validate_blob_name(name);
        // Read-through: a Blob only a farther tier holds is filled first,
        // and its file offered once committed.
        if (context_.read_through) context_.read_through->fill_and_wait(name);
        const auto local = offered_file(name, context_.local_fast_path);
        if (!local) return false;
        to_idl_file(*local, *file);
        return true;
    } catch (...) {
        rethrow_declared(kNoSuchBlob | kInvalidName, context_.store_name, {name});
    }
}

bool BlobStore_i::share_image(const std::string& name, BlobStreaming::SharedImage& image)
{
    to_idl(blobstreaming::BlobInfo{}, image.info);  // marshalled in a `false` answer too
    image.pid = 0;
    image.fd = -1;
    image.inode = 0;
    validate_blob_name(name);
    const auto local = offered_file(name, context_.images != nullptr);
    if (!local) return false;
    std::optional<ImageShelf::Image> made;
    try {
        made = context_.images->image_of(*local);
    } catch (const Error& e) {
        // An image is a shortcut: without one the caller reads the file or
        // the data port, which say what is wrong (a rotted file: exit 24).
        if (e.code() == Errc::digest_mismatch) spdlog::error("shareImage: {}", e.what());
        else spdlog::info("shareImage: {}", e.what());
        return false;
    }
    if (!made) return false;
    image.host = boot_id().c_str();
    image.pid = static_cast<CORBA::ULongLong>(::getpid());
    image.fd = made->fd;
    image.inode = made->inode;
    to_idl(made->info, image.info);
    return true;
}

CORBA::Boolean BlobStore_i::shareImage(const char* name, BlobStreaming::SharedImage_out image)
{
    require_permission(context_, server::Permission::read, "shareImage");
    image = new BlobStreaming::SharedImage;
    try {
        return share_image(name, *image.ptr());
    } catch (...) {
        rethrow_declared(kNoSuchBlob | kInvalidName, context_.store_name, {name});
    }
}

BlobStreaming::SharedImageSeq* BlobStore_i::shareImages(const BlobStreaming::NameSeq& names)
{
    require_permission(context_, server::Permission::read, "shareImages");
    try {
        check_batch(names.length(), "shareImages", "names");
    } catch (...) {
        rethrow_declared(kLimitReached, context_.store_name, {});
    }
    BlobStreaming::SharedImageSeq_var out = new BlobStreaming::SharedImageSeq;
    out->length(names.length());
    for (CORBA::ULong i = 0; i < names.length(); ++i) {
        try {
            share_image(names[i].in(), out[i]);
        } catch (...) {
            // shareImage() of that name says why.
            out[i].fd = -1;
        }
    }
    return out._retn();
}

BlobStreaming::DataEndpoint* BlobStore_i::dataAddress()
{
    auto* out = new BlobStreaming::DataEndpoint;
    out->host = context_.data_host.c_str();
    out->port = context_.data_port;
    return out;
}

// Every transporter counts against the caps of the context's registry until
// its client closes it or the daemon reclaims it idle (Daemon::maintain).
BlobStreaming::BlobTransporter_ptr BlobStore_i::openTransporter()
{
    try {
        std::shared_ptr<server::TransporterActivity> activity;
        if (context_.transporters) activity = context_.transporters->admit(caller_client());
        PortableServer::Servant_var<BlobTransporter_i> servant = new BlobTransporter_i(context_, activity);
        PortableServer::ObjectId_var oid = context_.poa->activate_object(servant);
        if (activity) {
            context_.transporters->on_reclaim(activity, [poa = context_.poa, id = PortableServer::ObjectId(oid.in())] {
                try {
                    poa->deactivate_object(id);  // its destructor withdraws its unused tickets
                } catch (const PortableServer::POA::ObjectNotActive&) {
                    // closed by its client meanwhile
                } catch (const CORBA::Exception& e) {
                    spdlog::warn("cannot reclaim an idle transporter: CORBA {}", e._name());
                }
            });
        }
        CORBA::Object_var obj = context_.poa->id_to_reference(oid);
        return BlobStreaming::BlobTransporter::_narrow(obj);
    } catch (...) {
        rethrow_declared(kLimitReached, context_.store_name);  // admit(): Errc::limit_reached
    }
}

CORBA::ULongLong BlobStore_i::subscribe(BlobStreaming::EventSubscriber_ptr subscriber,
                                        const BlobStreaming::StoreEventKindSeq& kinds)
{
    return corba::subscribe(context_, subscriber, kinds);
}

void BlobStore_i::unsubscribe(CORBA::ULongLong id)
{
    require_permission(context_, server::Permission::read, "unsubscribe");
    corba::unsubscribe(context_, id);
}

}  // namespace blobstreaming::corba
