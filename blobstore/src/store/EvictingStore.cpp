/// EvictingStore (EvictingStore.h): least recently used Blobs removed from
/// any store to make room for a reservation.
#include <blobstreaming/blobstore/EvictingStore.h>

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace blobstreaming {

EvictingStore::EvictingStore(std::unique_ptr<Store> inner) : inner_(std::move(inner))
{
    if (inner_->usage().capacity == 0)
        throw Error(Errc::invalid_argument,
                    "eviction needs a capacity: this " + std::string(inner_->kind()) +
                        " store is bounded only by what its medium has left; give it one (--capacity)");
}

void EvictingStore::used(std::string_view name) const
{
    const auto now = Clock::now();
    std::lock_guard lock(mutex_);
    auto it = last_use_.find(name);
    if (it == last_use_.end()) last_use_.emplace(std::string(name), now);
    else it->second = now;
}

BlobRange EvictingStore::read(std::string_view name, std::uint64_t start, std::uint64_t end) const
{
    BlobRange range = inner_->read(name, start, end);
    used(name);
    return range;
}

std::optional<Store::LocalFile> EvictingStore::local_file(std::string_view name) const
{
    auto file = inner_->local_file(name);
    used(name);
    return file;
}

BlobInfo EvictingStore::remove(std::string_view name)
{
    BlobInfo removed = inner_->remove(name);
    std::lock_guard lock(mutex_);
    if (auto it = last_use_.find(name); it != last_use_.end()) last_use_.erase(it);
    return removed;
}

std::unique_ptr<Reservation> EvictingStore::reserve(std::string_view name, std::uint64_t size, ReserveMode mode,
                                                    ChecksumAlgorithm checksum)
{
    try {
        return inner_->reserve(name, size, mode, checksum);
    } catch (const Error& e) {
        if (e.code() != Errc::out_of_space) throw;
    }
    // One reservation makes room at a time; the others wait, then find it
    // made or make their own. The order is taken once per reservation: a
    // Blob removed meanwhile is skipped, one committed meanwhile is newer
    // than every candidate anyway.
    std::lock_guard making_room(room_);
    const std::vector<BlobInfo> victims = by_last_use(name);
    for (auto victim = victims.begin();; ++victim) {
        try {
            return inner_->reserve(name, size, mode, checksum);
        } catch (const Error& e) {
            const StoreUsage u = inner_->usage();
            const bool hopeless = u.reserved > u.capacity || size > u.capacity - u.reserved;
            if (e.code() != Errc::out_of_space || hopeless) throw;
            while (victim != victims.end() && !evict_for(*victim, name, size)) ++victim;
            if (victim == victims.end()) throw;
        }
    }
}

std::vector<BlobInfo> EvictingStore::by_last_use(std::string_view keep) const
{
    std::vector<BlobInfo> blobs = inner_->list();
    blobs.erase(std::remove_if(blobs.begin(), blobs.end(), [&](const BlobInfo& b) { return b.name == keep; }),
                blobs.end());
    std::lock_guard lock(mutex_);
    auto last_use = [&](const BlobInfo& b) {
        auto it = last_use_.find(b.name);
        return it == last_use_.end() ? b.committed : std::max(it->second, b.committed);
    };
    std::stable_sort(blobs.begin(), blobs.end(),
                     [&](const BlobInfo& a, const BlobInfo& b) { return last_use(a) < last_use(b); });
    return blobs;
}

bool EvictingStore::evict_for(const BlobInfo& victim, std::string_view for_name, std::uint64_t for_size)
{
    try {
        inner_->evict(victim.name);
    } catch (const Error& e) {
        if (e.code() == Errc::no_such_blob) return false;  // removed meanwhile
        throw;
    }
    {
        std::lock_guard lock(mutex_);
        if (auto it = last_use_.find(victim.name); it != last_use_.end()) last_use_.erase(it);
        ++evictions_;
    }
    spdlog::info("{} store: evicted {} ({} bytes, least recently used) to make room for {} ({} bytes)", inner_->kind(),
                 quote_name(victim.name), victim.size, quote_name(for_name), for_size);
    return true;
}

std::uint64_t EvictingStore::evictions() const
{
    std::lock_guard lock(mutex_);
    return evictions_;
}

}  // namespace blobstreaming
