#include "BlobStore_i.h"

#include <blobstreaming/transporter/corba/BlobInfoIdl.h>

#include "BlobTransporter_i.h"
#include "EventSubscription.h"
#include "Fetcher.h"
#include "server/DataServer.h"
#include "server/TransporterRegistry.h"

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

#include <algorithm>
#include <vector>

#include <unistd.h>

static_assert(blobstreaming::service::kMaxBatch == BlobStreaming::BlobStore::MaxBatch,
              "the store's batch limit is the IDL's BlobStore::MaxBatch, which clients read");

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

/// A LocalFile answer of `false`: every field is marshalled, also then (an
/// enum left uninitialised would fail the reply: MARSHAL).
BlobStreaming::LocalFile* no_file()
{
    auto* file = new BlobStreaming::LocalFile;
    to_idl(blobstreaming::BlobInfo{}, file->info);
    return file;
}

/// A SharedImage answer: the image, or none (fd -1, every field still
/// marshalled).
bool to_idl_image(const std::optional<service::StoreService::Image>& made, BlobStreaming::SharedImage& image)
{
    to_idl(made ? made->info : blobstreaming::BlobInfo{}, image.info);
    image.pid = made ? static_cast<CORBA::ULongLong>(::getpid()) : 0;
    image.fd = made ? made->fd : -1;
    image.inode = made ? made->inode : 0;
    if (made) image.host = boot_id().c_str();
    return made.has_value();
}

std::vector<std::string> names_of(const BlobStreaming::NameSeq& names)
{
    std::vector<std::string> out(names.length());
    for (CORBA::ULong i = 0; i < names.length(); ++i) out[i] = names[i].in();
    return out;
}

protocol::TicketId ticket_id_of(const BlobStreaming::TicketId grant)
{
    protocol::TicketId id{};
    std::copy(grant, grant + id.size(), id.begin());
    return id;
}

}  // namespace

BlobStore_i::BlobStore_i(const ServantContext& context) : context_(context) {}

// Permissions (docs/PROTOCOL.md, "Access list"): name, status, dataAddress
// and openTransporter need only a verified certificate (omniORB has refused
// every other client before any upcall); the store service checks the
// permission of each other operation first.
char* BlobStore_i::name() { return CORBA::string_dup(context_.store_name().c_str()); }

char* BlobStore_i::identity() { return CORBA::string_dup(context_.identity.c_str()); }

BlobStreaming::StoreStatus* BlobStore_i::status()
{
    try {
        const service::StoreService::Status status = context_.service.status();
        BlobStreaming::StoreStatus_var s = new BlobStreaming::StoreStatus;  // freed if a step throws
        s->name = context_.store_name().c_str();
        s->kind = status.kind.c_str();
        s->tier = context_.tier;
        s->capacity = status.usage.capacity;
        s->used = status.usage.used;
        s->reserved = status.usage.reserved;
        s->blobCount = static_cast<CORBA::ULong>(status.usage.blob_count);
        s->activeTransfers = context_.data ? context_.data->active_transfers() : 0;
        s->readThrough = status.read_through;
        s->host = boot_id().c_str();
        s->localFiles = status.local_files;
        return s._retn();
    } catch (...) {
        rethrow_idl(context_, kRaisesNothing);
    }
}

CORBA::Boolean BlobStore_i::contains(const char* name)
{
    try {
        return context_.service.contains(current_caller(), name);
    } catch (...) {
        rethrow_idl(context_, kInvalidName, {name});
    }
}

BlobStreaming::BlobInfo* BlobStore_i::stat(const char* name)
{
    try {
        return to_idl(context_.service.stat(current_caller(), name));
    } catch (...) {
        rethrow_idl(context_, kNoSuchBlob | kInvalidName, {name});
    }
}

BlobStreaming::BlobInfoSeq* BlobStore_i::list()
{
    try {
        const auto blobs = context_.service.list(current_caller());
        BlobStreaming::BlobInfoSeq_var out = new BlobStreaming::BlobInfoSeq;
        out->length(static_cast<CORBA::ULong>(blobs.size()));
        for (CORBA::ULong i = 0; i < out->length(); ++i) to_idl(blobs[i], out[i]);
        return out._retn();
    } catch (...) {
        rethrow_idl(context_, kRaisesNothing);
    }
}

BlobStreaming::Reservation* BlobStore_i::reserve(const char* name, BlobStreaming::ByteCount size,
                                                 CORBA::Boolean overwrite)
{
    try {
        BlobStreaming::Reservation_var out = new BlobStreaming::Reservation;  // freed if the call throws
        to_idl_reservation(context_.service.reserve(current_caller(), name, size, overwrite), out.inout());
        return out._retn();
    } catch (...) {
        IdlContext c;
        c.name = name;
        c.requested = size;
        rethrow_idl(context_, kInvalidName | kOutOfSpace | kAlreadyExists | kLimitReached, c);
    }
}

BlobStreaming::BlobInfo* BlobStore_i::commit(BlobStreaming::ReservationId id,
                                             const BlobStreaming::BlobChecksum& expected)
{
    try {
        return to_idl(context_.service.commit(current_caller(), id, [&] {
            return corba::checksum_of(expected, "commit reservation " + std::to_string(id));
        }));
    } catch (...) {
        IdlContext c;
        c.id = id;
        rethrow_idl(context_, kNoSuchReservation | kTransferFailed, c);
    }
}

void BlobStore_i::abort(BlobStreaming::ReservationId id)
{
    try {
        context_.service.abort(current_caller(), id);
    } catch (...) {
        IdlContext c;
        c.id = id;
        rethrow_idl(context_, kNoSuchReservation, c);
    }
}

BlobStreaming::Reservation* BlobStore_i::resumable(const char* name)
{
    try {
        BlobStreaming::Reservation_var out = new BlobStreaming::Reservation;  // freed if the call throws
        to_idl_reservation(context_.service.resumable(current_caller(), name), out.inout());
        return out._retn();
    } catch (...) {
        rethrow_idl(context_, kInvalidName | kNoSuchReservation, {name});
    }
}

BlobStreaming::BlobInfo* BlobStore_i::verify(const char* name)
{
    try {
        return to_idl(context_.service.verify(current_caller(), name));
    } catch (...) {
        rethrow_idl(context_, kNoSuchBlob | kInvalidName | kCorrupt, {name});
    }
}

void BlobStore_i::remove(const char* name)
{
    try {
        context_.service.remove(current_caller(), name);
    } catch (...) {
        rethrow_idl(context_, kNoSuchBlob | kInvalidName, {name});
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
    if (out.source_name == context_.store_name())
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
        rethrow_idl(context_, kFetchErrors, {name});
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
        service::check_batch(grants.length(), "fetchEach", "grants");
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
        rethrow_idl(context_, kFetchErrors, {first});
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
        rethrow_idl(context_, kFetchErrors, {name});
    }
}

BlobStreaming::BlobInfo* BlobStore_i::awaitFetch(const char* name)
{
    require_permission(context_, server::Permission::write, "awaitFetch");
    try {
        validate_blob_name(name);
        if (!context_.fetcher)
            throw Error(Errc::limit_reached, "fetch " + quote_name(name) + ": this store does not fetch");
        return to_idl(context_.fetcher->await(name, context_.store_name(), caller_subject()));
    } catch (...) {
        rethrow_idl(context_, kFetchErrors, {name});
    }
}

CORBA::Boolean BlobStore_i::findGrantedFile(const BlobStreaming::TicketId grant, BlobStreaming::LocalFile_out file)
{
    file = no_file();
    std::string name;
    try {
        const auto local = context_.service.granted_file(current_caller(), ticket_id_of(grant), name);
        if (!local) return false;
        to_idl_file(*local, *file);
        return true;
    } catch (...) {
        rethrow_idl(context_, kNoSuchBlob | kTransferFailed, {name});
    }
}

BlobStreaming::SharedImageSeq* BlobStore_i::shareGrantedImages(const BlobStreaming::TicketIdSeq& grants)
{
    try {
        std::vector<protocol::TicketId> ids(grants.length());
        for (CORBA::ULong i = 0; i < grants.length(); ++i) ids[i] = ticket_id_of(grants[i]);
        const auto images = context_.service.granted_images(current_caller(), ids);
        BlobStreaming::SharedImageSeq_var out = new BlobStreaming::SharedImageSeq;
        out->length(grants.length());
        for (CORBA::ULong i = 0; i < grants.length(); ++i) to_idl_image(images[i], out[i]);
        return out._retn();
    } catch (...) {
        rethrow_idl(context_, kLimitReached);
    }
}

CORBA::Boolean BlobStore_i::findLocalFile(const char* name, BlobStreaming::LocalFile_out file)
{
    file = no_file();
    try {
        const auto local = context_.service.local_file(current_caller(), name);
        spdlog::debug("findLocalFile: {}: {}", quote_name(name), local ? "file offered" : "no file");
        if (!local) return false;
        to_idl_file(*local, *file);
        return true;
    } catch (...) {
        rethrow_idl(context_, kNoSuchBlob | kInvalidName, {name});
    }
}

BlobStreaming::LocalFileSeq* BlobStore_i::findLocalFiles(const BlobStreaming::NameSeq& names)
{
    try {
        const auto files = context_.service.local_files(current_caller(), names_of(names));
        BlobStreaming::LocalFileSeq_var out = new BlobStreaming::LocalFileSeq;
        out->length(names.length());
        CORBA::ULong offered = 0;
        for (CORBA::ULong i = 0; i < names.length(); ++i) {
            // Every field marshalled, also for a name without a file (path "").
            if (files[i]) {
                to_idl_file(*files[i], out[i]);
                ++offered;
            } else {
                to_idl(blobstreaming::BlobInfo{}, out[i].info);
            }
        }
        spdlog::debug("findLocalFiles: {} names, {} files offered", names.length(), offered);
        return out._retn();
    } catch (...) {
        rethrow_idl(context_, kLimitReached);
    }
}

CORBA::Boolean BlobStore_i::shareImage(const char* name, BlobStreaming::SharedImage_out image)
{
    image = new BlobStreaming::SharedImage;
    to_idl_image(std::nullopt, *image.ptr());  // marshalled in a `false` answer too
    try {
        return to_idl_image(context_.service.image(current_caller(), name), *image.ptr());
    } catch (...) {
        rethrow_idl(context_, kNoSuchBlob | kInvalidName, {name});
    }
}

BlobStreaming::SharedImageSeq* BlobStore_i::shareImages(const BlobStreaming::NameSeq& names)
{
    try {
        const auto images = context_.service.images(current_caller(), names_of(names));
        BlobStreaming::SharedImageSeq_var out = new BlobStreaming::SharedImageSeq;
        out->length(names.length());
        for (CORBA::ULong i = 0; i < names.length(); ++i) to_idl_image(images[i], out[i]);
        return out._retn();
    } catch (...) {
        rethrow_idl(context_, kLimitReached);
    }
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
        rethrow_idl(context_, kLimitReached);  // admit(): Errc::limit_reached
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
