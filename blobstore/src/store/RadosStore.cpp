/// RadosStore's operations (RadosStore.h): stat, list, read, reserve,
/// remove, usage. The records are in RadosIndex.cpp, the push in
/// RadosReservation.cpp, the pull in RadosReader.cpp, the cleanup thread in
/// RadosKeeper.cpp, librados itself behind Rados.cpp.
#include <blobstreaming/blobstore/RadosStore.h>

#include "RadosReader.h"
#include "RadosReservation.h"
#include "RadosStoreState.h"
#include "StoreIndex.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>

#include <unistd.h>

namespace blobstreaming {

using namespace detail::rados_index;
namespace rados = detail::rados;

namespace {

/// Omap entries per index read of list() and the cleanup.
constexpr unsigned kPage = 1000;

std::string host_name()
{
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
    return name;
}

/// RadosStore::State::open_here(): the instances of this process.
std::mutex& instances_mutex()
{
    static std::mutex m;
    return m;
}

std::set<std::string>& instances()
{
    static std::set<std::string> open;
    return open;
}

}  // namespace

bool RadosStore::State::open_here(const std::string& instance)
{
    std::lock_guard lock(instances_mutex());
    return instances().count(instance) != 0;
}

RadosStore::State::~State()
{
    stop_keeper();
    std::lock_guard lock(instances_mutex());
    instances().erase(instance);
}

std::vector<std::pair<std::string, std::string>> RadosStore::State::scan(const char* prefix, std::size_t max,
                                                                         const std::string& what) const
{
    std::vector<std::pair<std::string, std::string>> out;
    std::string after;
    for (bool more = true; more && out.size() < max;) {
        std::vector<std::pair<std::string, std::string>> page;
        const int rc = rados::omap_scan(io(), kIndexObject, prefix, after, kPage, page, more);
        if (rc < 0) fail(what, rc);
        if (page.empty()) break;
        after = page.back().first;
        for (auto& [key, value] : page) out.emplace_back(key.substr(std::strlen(prefix)), std::move(value));
    }
    return out;
}

RadosStore::State::State(const std::string& pool_name, const Options& o)
    : options(o), pool("rados:" + pool_name, pool_name, rados::ConnectSettings{o.conf_file, o.user, o.timeout}),
      instance(host_name() + ":" + std::to_string(::getpid()) + ":" + new_id().substr(0, 8))
{
    rados::WriteOp op;
    op.create();
    const int rc = op.operate(io(), kIndexObject);
    if (rc == -EPERM || rc == -EACCES)
        throw Error(Errc::refused, store() + ": " + pool.user() + " may not write to pool \"" + pool.name() +
                                       "\" (its OSD caps): " + rados::errno_text(rc));
    if (rc < 0) fail("create the index object " + std::string(kIndexObject), rc);
    std::lock_guard lock(instances_mutex());
    instances().insert(instance);
}

Errc RadosStore::State::errc_of(int rc) noexcept
{
    return rc == -ENOSPC || rc == -EDQUOT ? Errc::out_of_space : Errc::io_error;
}

void RadosStore::State::fail(const std::string& what, int rc) const
{
    const Errc code = errc_of(rc);
    throw Error(code, what + ": " + store() + ": " +
                          (code == Errc::out_of_space ? "the pool is full or over its quota: " : "") +
                          rados::errno_text(rc));
}

std::optional<BlobRecord> RadosStore::State::find(std::string_view name, std::string* raw) const
{
    std::map<std::string, std::string> found;
    const std::string key = blob_key(name);
    const int rc = rados::omap_get(io(), kIndexObject, {key}, found);
    if (rc < 0) fail("look up " + quote_name(name) + " in the index", rc);
    const auto it = found.find(key);
    if (it == found.end()) return std::nullopt;
    std::string why;
    auto record = decode_blob(name, it->second, why);
    if (!record)
        throw Error(Errc::corrupt, store() + ": the index entry of " + quote_name(name) + " is not valid (" + why +
                                       "): \"" + it->second + "\"");
    if (raw) *raw = it->second;
    return record;
}

BlobRecord RadosStore::State::get(std::string_view name, std::string* raw) const
{
    auto record = find(name, raw);
    if (record) return std::move(*record);
    std::string message = "blob " + quote_name(name) + " not found";
    std::lock_guard lock(mutex);
    if (reserving.count(name)) message += " (it is being written; it becomes visible at commit)";
    throw Error(Errc::no_such_blob, message);
}

void RadosStore::State::count_commit(std::uint64_t size, const std::optional<std::uint64_t>& replaced)
{
    std::lock_guard lock(mutex);
    used = used - std::min(used, replaced.value_or(0)) + size;
    if (!replaced) ++blob_count;
    if (pool_room) *pool_room -= std::min(*pool_room, size);
}

void RadosStore::State::count_remove(std::uint64_t size)
{
    std::lock_guard lock(mutex);
    used -= std::min(used, size);
    blob_count -= std::min<std::uint64_t>(blob_count, 1);
}

void RadosStore::State::close_reservation(const std::string& id)
{
    std::lock_guard lock(mutex);
    const auto it = open.find(id);
    if (it == open.end()) return;
    reserving.erase(it->second.name);
    reserved -= std::min(reserved, it->second.size);
    open.erase(it);
}

RadosStore::RadosStore(const std::string& pool, Options options)
{
    if (pool.empty()) throw Error(Errc::invalid_argument, "rados store: the pool name is empty (rados:POOL)");
    if (options.chunk_size == 0 || options.chunk_size > (std::uint32_t{64} << 20))
        throw Error(Errc::invalid_argument, "rados:" + pool + ": chunk size " + std::to_string(options.chunk_size) +
                                                " is outside 1 byte to 64 MiB");
    if (options.user.empty()) options.user = "admin";
    state_ = std::make_shared<State>(pool, options);
    // Before the first round: the pushes kept for a resume by a process of
    // this host that died are this store's now, not the cleanup's.
    kept_ = detail::adopt_kept(state_);
    state_->collect();  // vouches for the kept ones; cleans up after the dead, counts the Blobs
    state_->start_keeper();
    spdlog::info("rados store {} as {}: {} blob(s), {} bytes; instance {}", name(), state_->pool.user(),
                 state_->blob_count, state_->used, state_->instance);
}

RadosStore::~RadosStore() { state_->stop_keeper(); }

const std::string& RadosStore::name() const noexcept { return state_->store(); }

const std::string& RadosStore::instance() const noexcept { return state_->instance; }

RadosStore::Cleanup RadosStore::collect() { return state_->collect(); }

std::vector<Store::Kept> RadosStore::take_kept()
{
    std::lock_guard lock(kept_mutex_);
    return std::move(kept_);
}

BlobInfo RadosStore::stat(std::string_view name) const
{
    validate_blob_name(name);
    return state_->get(name).info;
}

std::optional<BlobInfo> RadosStore::find(std::string_view name) const
{
    validate_blob_name(name);
    auto record = state_->find(name);
    if (!record) return std::nullopt;
    return std::move(record->info);
}

std::vector<BlobInfo> RadosStore::list() const
{
    std::vector<BlobInfo> out;
    std::string after;
    for (bool more = true; more;) {
        std::vector<std::pair<std::string, std::string>> page;
        const int rc = rados::omap_scan(state_->io(), kIndexObject, kBlobPrefix, after, kPage, page, more);
        if (rc < 0) state_->fail("list: read the index", rc);
        for (const auto& [key, value] : page) {
            const std::string_view name = std::string_view(key).substr(std::strlen(kBlobPrefix));
            std::string why;
            auto record = decode_blob(name, value, why);
            if (record) out.push_back(std::move(record->info));
            else
                spdlog::warn("{}: list: the index entry of {} is not valid ({}); not listed", state_->store(),
                             quote_name(name), why);
        }
        if (!page.empty()) after = page.back().first;
        more = more && !page.empty();
    }
    return out;
}

BlobRange RadosStore::read(std::string_view name, std::uint64_t start, std::uint64_t end) const
{
    validate_blob_name(name);
    BlobRecord record = state_->get(name);
    end = detail::checked_end(name, record.info.size, start, end);
    BlobInfo info = record.info;
    return BlobRange(std::move(info), start, end, detail::make_rados_reader(state_, std::move(record), start, end));
}

std::unique_ptr<Reservation> RadosStore::reserve(std::string_view name, std::uint64_t size, ReserveMode mode,
                                                 ChecksumAlgorithm checksum)
{
    validate_blob_name(name);
    const std::string what = "reserve " + quote_name(name);
    const std::string id = new_id();
    {
        std::lock_guard lock(state_->mutex);
        if (state_->reserving.count(name))
            throw Error(Errc::already_exists,
                        "blob " + quote_name(name) + " is already being written by another reservation");
        const std::uint64_t capacity = state_->options.capacity;
        const std::uint64_t taken = state_->used + state_->reserved;
        if (capacity > 0 && (taken > capacity || size > capacity - taken))
            throw Error(Errc::out_of_space, "no room for blob " + quote_name(name) + ": need " + std::to_string(size) +
                                                " bytes, " + std::to_string(taken > capacity ? 0 : capacity - taken) +
                                                " free of capacity " + std::to_string(capacity) + " (" +
                                                std::to_string(state_->used) + " used, " +
                                                std::to_string(state_->reserved) + " reserved)");
        if (capacity == 0 && state_->pool_room &&
            (state_->reserved > *state_->pool_room || size > *state_->pool_room - state_->reserved))
            throw Error(Errc::out_of_space,
                        "no room for blob " + quote_name(name) + " in " + state_->store() + ": need " +
                            std::to_string(size) + " bytes, the pool can take " + std::to_string(*state_->pool_room) +
                            (state_->quota ? " more within its quota" : " more (`ceph df` MAX AVAIL)") + ", " +
                            std::to_string(state_->reserved) + " of them reserved");
        state_->reserving.emplace(name);
        state_->open.emplace(id, State::Open{std::string(name), size});
        state_->reserved += size;
    }
    try {
        if (mode == ReserveMode::create && state_->find(name))
            throw Error(Errc::already_exists,
                        "blob " + quote_name(name) + " already exists (remove it first, or replace it)");
        const ReservationRecord fresh{std::string(name),
                                      size,
                                      state_->options.chunk_size,
                                      state_->instance,
                                      now_ms(),
                                      state_->options.grace.count(),
                                      {}};
        const std::string record = encode(fresh);
        rados::WriteOp op;
        op.set(reservation_key(id), record);
        op.set(touch_key(id), std::to_string(now_ms()));
        const int rc = op.operate(state_->io(), kIndexObject);
        if (rc < 0) state_->fail(what + ": record the reservation in the index", rc);
        return detail::make_rados_reservation(state_, std::string(name), size, mode, checksum, id, record);
    } catch (...) {
        state_->close_reservation(id);
        throw;
    }
}

BlobInfo RadosStore::remove(std::string_view name)
{
    validate_blob_name(name);
    const std::string what = "remove " + quote_name(name);
    for (int attempt = 1;; ++attempt) {
        std::string seen;
        const BlobRecord record = state_->get(name, &seen);  // no_such_blob once gone
        rados::WriteOp op;
        op.expect(blob_key(name), seen);
        op.remove(blob_key(name));
        op.set(trash_key(record.data),
               encode(TrashRecord{std::string(name), chunk_count(record.info.size, record.chunk),
                                  now_ms() + state_->options.grace.count()}));
        const int rc = op.operate(state_->io(), kIndexObject);
        if (rc == 0) {
            state_->count_remove(record.info.size);
            return record.info;
        }
        if (rc != -ECANCELED || attempt == 16) state_->fail(what + ": update the index", rc);
        // Replaced by another daemon meanwhile: remove what is there now.
    }
}

StoreUsage RadosStore::usage() const
{
    std::lock_guard lock(state_->mutex);
    StoreUsage u;
    u.used = state_->used;
    u.reserved = state_->reserved;
    u.blob_count = state_->blob_count;
    u.capacity = state_->options.capacity > 0 ? state_->options.capacity
                 : state_->quota > 0          ? state_->quota
                 : state_->pool_room          ? state_->used + *state_->pool_room
                                              : 0;
    return u;
}

}  // namespace blobstreaming
