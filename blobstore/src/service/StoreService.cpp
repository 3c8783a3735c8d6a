#include "StoreService.h"

#include <blobstreaming/blobstore/ReadThroughStore.h>

#include <blobstreaming/common/BlobName.h>

#include <spdlog/spdlog.h>

#include <chrono>

namespace blobstreaming::service {

void check_batch(std::size_t count, const char* operation, const char* what)
{
    if (count > kMaxBatch)
        throw Error(Errc::limit_reached, std::string(operation) + ": " + std::to_string(count) + " " + what +
                                             "; at most " + std::to_string(kMaxBatch) + " per call");
}

StoreService::StoreService(Store& store, server::ReservationTable& reservations, server::TicketRegistry& tickets,
                           StoreServiceOptions options)
    : store_(store), reservations_(reservations), tickets_(tickets), options_(std::move(options))
{}

void StoreService::require(const Caller& caller, server::Permission permission, const char* operation) const
{
    if (!options_.access) return;
    const auto access = options_.access->get();
    if (!access->enforced()) return;
    try {
        access->require(caller.subject, permission);
    } catch (const Error& e) {
        spdlog::warn("store \"{}\": {} refused: {}", options_.store_name, operation, e.what());
        throw PermissionDenied(permission, e.what());
    }
}

bool StoreService::access_enforced() const { return options_.access && options_.access->get()->enforced(); }

void StoreService::require_owner(const Caller& caller, std::uint64_t id, const char* operation) const
{
    const std::string owner = reservations_.client_of(id);  // no_such_reservation
    if (owner == caller.client) return;
    // The log names both; the caller learns nothing about the other client.
    spdlog::warn("store \"{}\": {} reservation {} refused: reserved by client \"{}\", asked by \"{}\"",
                 options_.store_name, operation, id, owner, caller.client);
    throw Error(Errc::no_such_reservation,
                std::string(operation) + " reservation " + std::to_string(id) +
                    ": it was reserved by another client; only the client that reserved it may commit, "
                    "abort, fill or resume it");
}

StoreService::Status StoreService::status() const
{
    Status s;
    s.usage = store_.usage();
    s.kind = std::string(store_.kind());
    s.read_through = options_.read_through && options_.read_through->reads_through();
    s.local_files = options_.local_fast_path && store_.keeps_files();
    return s;
}

bool StoreService::contains(const Caller& caller, const std::string& name) const
{
    require(caller, server::Permission::read, "contains");
    validate_blob_name(name);
    return store_.contains(name);
}

BlobInfo StoreService::stat(const Caller& caller, const std::string& name) const
{
    require(caller, server::Permission::read, "stat");
    return store_.stat(name);
}

std::vector<BlobInfo> StoreService::list(const Caller& caller) const
{
    require(caller, server::Permission::read, "list");
    return store_.list();
}

// Rereading is disk and CPU work on the calling thread (an ORB thread),
// never on the reactor: transfers keep moving while a Blob is verified.
BlobInfo StoreService::verify(const Caller& caller, const std::string& name) const
{
    require(caller, server::Permission::read, "verify");
    try {
        const auto t0 = std::chrono::steady_clock::now();
        const BlobInfo info = store_.verify(name);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        spdlog::info("verified {}: {} bytes in {:.3f} s, {} matches", quote_name(name), info.size, seconds,
                     info.checksum.text());
        return info;
    } catch (const Error& e) {
        if (e.code() == Errc::corrupt) spdlog::error("{}", e.what());
        throw;
    }
}

void StoreService::remove(const Caller& caller, const std::string& name)
{
    require(caller, server::Permission::remove, "remove");
    store_.remove(name);
    spdlog::info("removed {}", quote_name(name));
}

StoreService::Opened StoreService::open_reservation(const Caller& caller, const std::string& name, std::uint64_t size,
                                                    bool overwrite, ChecksumAlgorithm checksum,
                                                    std::uint64_t open_ended)
{
    reservations_.purge();
    validate_blob_name(name);
    // Bounded per client and in total: checked before the store does any
    // work, and again when the reservation is added.
    reservations_.check_limits(caller.client, "reserve " + quote_name(name));
    // Supersedes the caller's own kept push of `name`, or an abandoned one;
    // refuses (AlreadyExists) while another client's may still go on.
    reservations_.abort_parked(name, caller.client);
    auto reservation = store_.reserve(name, size, overwrite ? ReserveMode::replace : ReserveMode::create, checksum);
    if (std::string why; open_ended > 0 && !reservation->make_open_ended(open_ended, why)) {
        reservation->abort();
        throw Error(Errc::refused, "push " + quote_name(name) + " of unknown length: store \"" + options_.store_name +
                                       "\" (" + std::string(store_.kind()) + "): " + why);
    }
    // Journaled where the store can (a FileStore, a RadosStore), so that a push to resume
    // outlives a restart of the daemon; for its client only, as in memory.
    reservation->keep_for_resume(caller.client);
    Opened opened;
    opened.id = reservations_.add(std::move(reservation), caller.client);
    opened.name = name;
    opened.size = size;
    opened.client = caller.client;
    opened.checksum = checksum;
    spdlog::debug("reservation {} of {} ({} bytes) opened", opened.id, quote_name(name), size);
    return opened;
}

StoreService::Opened StoreService::reserve(const Caller& caller, const std::string& name, std::uint64_t size,
                                           bool overwrite)
{
    require(caller, server::Permission::write, "reserve");
    return open_reservation(caller, name, size, overwrite, options_.default_checksum);
}

BlobInfo StoreService::commit(const Caller& caller, std::uint64_t id, const std::function<Checksum()>& expected)
{
    require(caller, server::Permission::write, "commit");
    require_owner(caller, id, "commit");
    const Checksum checksum = expected();
    const server::ReservationTable::Taken taken = reservations_.take(id);
    Reservation& reservation = taken.get();
    // Filled in parts (push --streams): the checksum combined from theirs,
    // compared with the client's for the whole Blob.
    return taken.assembled ? reservation.commit_assembled(*taken.assembled, &checksum) : reservation.commit(&checksum);
}

void StoreService::abort(const Caller& caller, std::uint64_t id)
{
    require(caller, server::Permission::write, "abort");
    require_owner(caller, id, "abort");
    reservations_.abort(id);
    spdlog::debug("reservation {} aborted on request", id);
}

StoreService::Opened StoreService::resumable(const Caller& caller, const std::string& name)
{
    require(caller, server::Permission::write, "resumable");
    validate_blob_name(name);
    reservations_.purge();
    const Opened r = reservations_.resumable(name, caller.client);
    spdlog::info("push {} resumes reservation {} at byte {} of {}", quote_name(name), r.id, r.received, r.size);
    return r;
}

}  // namespace blobstreaming::service
