#include <blobstreaming/blobstore/MemoryStore.h>

#include "StoreIndex.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/MappedRegion.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <list>
#include <mutex>
#include <new>

#include <unistd.h>

namespace blobstreaming {

namespace {

using Buffer = std::shared_ptr<std::uint8_t[]>;

/// Blobs from this size on get their own mapping backed by transparent huge
/// pages where the kernel allows them (THP "madvise" mode is Debian's
/// default): the bytes arriving from the socket then fault in 2 MiB at a
/// time instead of 4 KiB, which was 15 % of the daemon's time in a 32 MiB
/// MemoryStore push on loopback.
constexpr std::size_t kHugePage = std::size_t{2} << 20;

/// Writes one byte per page of [data, data + size): the kernel maps and
/// zeroes the pages now. reserve() runs on a control-plane thread, so the
/// data plane then receives into memory that takes no page fault (a 0.5 MiB
/// slice: 128 faults fewer on the reactor thread, while a series' earlier
/// slices stream). Larger Blobs are left to fault while they arrive: zeroing
/// 1 GiB up front would delay the push's first byte by the same work.
void prefault(std::uint8_t* data, std::size_t size) noexcept
{
    static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    for (std::size_t at = 0; at < size; at += page) data[at] = 0;
}

/// Blobs from this size on go back to the BlockPool when freed.
constexpr std::size_t kPooledFrom = std::size_t{64} << 10;

/// Memory of freed Blobs (removed, replaced or evicted; from kPooledFrom
/// on) kept for the next reservation of about the same size: its bytes then
/// land in pages that are mapped already, where fresh memory has the kernel
/// map and zero every page while the push streams — 2 MiB per fault from
/// kHugePage on (a 32 MiB MemoryStore push on loopback ran at 0.4-0.9 x raw
/// C; a 1 GiB one took 0.5 s in some runs and 3.7 s in others on a VM whose
/// hypervisor backs new guest pages lazily), 4 KiB per fault below (128
/// faults per 0.5 MiB slice, which also glibc's heap trimming brings back
/// after every freed series). A workstation's cache churns series of equal
/// slices, and a store of large Blobs replaces them by others of the same
/// size, so a block is reused for a Blob of its size or up to an eighth
/// smaller. The pool is sized by the store's capacity: it keeps at most
/// the memory the store's Blobs could hold, and before fresh memory is
/// taken it lets go of its least recently freed blocks until what it keeps
/// and what the store holds and reserves fit the capacity, so that the
/// daemon's resident memory stays near the capacity (rounded up to whole
/// huge pages per Blob) however the sizes change. Pooled blocks count in
/// the daemon's resident memory, not in the store's use. The bytes of a
/// pooled block are a former Blob's until the new push overwrites them
/// all: a reservation is readable only once committed, that is full.
class BlockPool {
public:
    /// Memory that holds a Blob's bytes: `size` bytes at `data`, alive as
    /// long as `owner`.
    struct Block {
        std::shared_ptr<void> owner;
        std::uint8_t* data = nullptr;
        std::size_t size = 0;
    };

    /// Keeps at most `max_bytes` (the store's capacity).
    explicit BlockPool(std::uint64_t max_bytes)
        : max_bytes_(static_cast<std::size_t>(std::min<std::uint64_t>(max_bytes, SIZE_MAX)))
    {}

    /// A freed block of at least `size` bytes and at most an eighth more,
    /// or an empty one.
    Block take(std::size_t size)
    {
        std::lock_guard lock(mutex_);
        for (auto it = free_.begin(); it != free_.end(); ++it) {
            if (it->size < size || it->size - size > size / 8) continue;
            Block block = std::move(*it);
            free_.erase(it);
            bytes_ -= block.size;
            return block;
        }
        return {};
    }

    /// Lets go of the least recently freed blocks until at most `keep`
    /// bytes are kept (fresh memory is about to be taken).
    void shrink_to(std::size_t keep) noexcept
    {
        std::list<Block> dropped;  // freed after the lock
        std::lock_guard lock(mutex_);
        drop_beyond_locked(keep, dropped);
    }

    /// Keeps `block` (the last reference to a Blob's bytes is gone).
    void give_back(Block block) noexcept
    {
        if (!block.owner || block.size > max_bytes_) return;
        std::list<Block> dropped;  // freed after the lock
        std::lock_guard lock(mutex_);
        try {
            free_.push_front(std::move(block));
        } catch (const std::bad_alloc&) {
            return;
        }
        bytes_ += free_.front().size;
        drop_beyond_locked(max_bytes_, dropped);
    }

private:
    void drop_beyond_locked(std::size_t keep, std::list<Block>& dropped) noexcept
    {
        while (bytes_ > keep && !free_.empty()) {
            bytes_ -= free_.back().size;
            dropped.splice(dropped.begin(), free_, std::prev(free_.end()));
        }
    }

    const std::size_t max_bytes_;
    mutable std::mutex mutex_;
    std::list<Block> free_;  ///< most recently freed first
    std::size_t bytes_ = 0;
};

/// Fresh memory of `size` > 0 bytes (whole huge pages from kHugePage on):
/// from kHugePage on an anonymous mapping (left to fault while the bytes
/// arrive: zeroing 1 GiB up front would delay the push's first byte by the
/// same work), below it the heap, prefaulted.
BlockPool::Block fresh_block(std::size_t size)
{
    BlockPool::Block block;
    if (size < kHugePage) {
        std::shared_ptr<std::uint8_t[]> heap(new std::uint8_t[size]);
        prefault(heap.get(), size);
        block.data = heap.get();
        block.owner = std::move(heap);
        block.size = size;
        return block;
    }
    std::error_code ec;
    auto region = std::make_shared<MappedRegion>(MappedRegion::anonymous(size, ec));
    if (ec) throw std::bad_alloc();
    block.data = region->data();
    block.size = region->size();
    block.owner = std::move(region);
    return block;
}

/// Bytes for a Blob of `size` > 0 bytes, with their pages mapped below
/// kHugePage. From kPooledFrom on a block from `pool` when it holds one that
/// fits, given back to it once the Blob's last reader is done; otherwise
/// fresh memory, after the pool has let go of what it keeps beyond `room`
/// (the capacity less what the store holds and reserves, this Blob
/// included). Throws std::bad_alloc.
Buffer allocate(std::size_t size, std::uint64_t room, const std::shared_ptr<BlockPool>& pool)
{
    if (size < kPooledFrom) {
        BlockPool::Block small = fresh_block(size);  // the heap, prefaulted
        return Buffer(small.owner, small.data);
    }
    if (size > SIZE_MAX - kHugePage) throw std::bad_alloc();
    // Mappings come in whole huge pages: compare blocks by what is mapped.
    const std::size_t want = size < kHugePage ? size : (size + kHugePage - 1) / kHugePage * kHugePage;
    BlockPool::Block block = pool->take(want);
    if (!block.owner) {
        pool->shrink_to(static_cast<std::size_t>(std::min<std::uint64_t>(room, SIZE_MAX)));
        block = fresh_block(want);
    }
    std::uint8_t* data = block.data;
    return Buffer(data, [block = std::move(block), home = std::weak_ptr<BlockPool>(pool)](std::uint8_t*) mutable {
        if (auto p = home.lock()) p->give_back(std::move(block));
    });
}

struct Extra {
    Buffer bytes;
};

}  // namespace

struct MemoryStore::State {
    mutable std::mutex mutex;
    detail::StoreIndex<Extra> index;
    /// Its own lock: Blobs' last readers give memory back on any thread.
    std::shared_ptr<BlockPool> pool;

    explicit State(const Options& o) : index(o.capacity), pool(std::make_shared<BlockPool>(o.capacity)) {}
};

namespace {

class MemoryReservation final : public Reservation {
public:
    MemoryReservation(std::shared_ptr<MemoryStore::State> state, std::string name, std::uint64_t size, ReserveMode mode,
                      ChecksumAlgorithm checksum, Buffer bytes)
        : Reservation(std::move(name), size, checksum), state_(std::move(state)), mode_(mode), bytes_(std::move(bytes))
    {}
    ~MemoryReservation() override { abort(); }

private:
    bool writes_anywhere() const noexcept override { return true; }

    Window do_window(std::uint64_t offset, std::size_t max, std::error_code&) override
    {
        return {bytes_.get() + offset, max};
    }

    /// Open-ended: the bytes go to address space for the most the store
    /// could ever hold (its capacity), which takes memory only as pages are
    /// written; the capacity is accounted in steps (do_grow()).
    bool can_grow() const noexcept override { return true; }

    bool do_open_ended(std::uint64_t max, std::string& why) override
    {
        const std::uint64_t most = std::min<std::uint64_t>(max, state_->index.capacity());
        std::error_code ec;
        auto region = std::make_shared<MappedRegion>(MappedRegion::address_space(static_cast<std::size_t>(most), ec));
        if (ec) {
            why = "no room for blob " + quote_name(name()) + ": cannot map " + std::to_string(most) +
                  " bytes of address space: " + ec.message();
            return false;
        }
        std::uint8_t* data = region->data();
        bytes_ = Buffer(region, data);
        space_ = std::move(region);
        return true;
    }

    std::uint64_t do_grow(std::uint64_t at_most, std::error_code& ec) override
    {
        std::lock_guard lock(state_->mutex);
        const std::uint64_t got = state_->index.grow_reservation(at_most - size());
        if (got == 0) ec = fail(Errc::out_of_space, state_->index.full_message(name(), written()));
        return size() + got;
    }

    void do_shrink(std::uint64_t size) noexcept override
    {
        {
            std::lock_guard lock(state_->mutex);
            state_->index.shrink_reservation(this->size() - size);
        }
        // The pages beyond were never written: give back their addresses.
        if (space_) space_->trim(static_cast<std::size_t>(size));
        space_.reset();
    }

    bool do_adopt(const std::shared_ptr<const std::uint8_t>& bytes) override
    {
        // The bytes are read-only (a sealed image): nothing writes to a
        // committed Blob, and the block reserved goes back to the pool.
        bytes_ = Buffer(bytes, const_cast<std::uint8_t*>(bytes.get()));
        return true;
    }

    std::error_code do_read_back(std::uint64_t offset, std::uint8_t* out, std::size_t n) const override
    {
        if (n > 0) std::memcpy(out, bytes_.get() + offset, n);
        return {};
    }

    BlobInfo do_commit(const Checksum& checksum) override
    {
        std::lock_guard lock(state_->mutex);
        auto& index = state_->index;
        index.close_reservation(name(), size());
        closed_ = true;
        if (mode_ == ReserveMode::create && index.find(name()))
            throw Error(Errc::already_exists,
                        "commit " + quote_name(name()) + ": a blob of that name was committed meanwhile");
        BlobInfo info{name(), size(), checksum, std::chrono::system_clock::now()};
        index.publish({info, {std::move(bytes_)}});
        return info;
    }

    void do_abort() noexcept override
    {
        if (closed_) return;
        std::lock_guard lock(state_->mutex);
        state_->index.close_reservation(name(), size());
        bytes_.reset();
        closed_ = true;
    }

    std::shared_ptr<MemoryStore::State> state_;
    ReserveMode mode_;
    Buffer bytes_;
    std::shared_ptr<MappedRegion> space_;  ///< open-ended: what bytes_ points into (do_open_ended())
    bool closed_ = false;
};

}  // namespace

MemoryStore::MemoryStore(Options options)
{
    if (options.capacity == 0)
        throw Error(Errc::invalid_argument, "memory store: capacity must be greater than 0 bytes");
    state_ = std::make_shared<State>(options);
}

MemoryStore::~MemoryStore() = default;

BlobInfo MemoryStore::stat(std::string_view name) const
{
    validate_blob_name(name);
    std::lock_guard lock(state_->mutex);
    return state_->index.get(name).info;
}

std::optional<BlobInfo> MemoryStore::find(std::string_view name) const
{
    validate_blob_name(name);
    std::lock_guard lock(state_->mutex);
    const auto* entry = state_->index.find(name);
    if (!entry) return std::nullopt;
    return entry->info;
}

std::vector<BlobInfo> MemoryStore::list() const
{
    std::lock_guard lock(state_->mutex);
    return state_->index.list();
}

BlobRange MemoryStore::read(std::string_view name, std::uint64_t start, std::uint64_t end) const
{
    validate_blob_name(name);
    std::lock_guard lock(state_->mutex);
    const auto& entry = state_->index.get(name);
    end = detail::checked_end(name, entry.info.size, start, end);
    const std::uint8_t* data = end > start ? entry.extra.bytes.get() + start : nullptr;
    return BlobRange(entry.info, start, end, entry.extra.bytes, data, -1, 0);
}

std::unique_ptr<Reservation> MemoryStore::reserve(std::string_view name, std::uint64_t size, ReserveMode mode,
                                                  ChecksumAlgorithm checksum)
{
    validate_blob_name(name);
    Buffer bytes;
    std::uint64_t room = 0;  // what the pool may keep beside the Blobs held and reserved
    {
        std::lock_guard lock(state_->mutex);
        state_->index.check_reservable(name, mode);
        if (!state_->index.fits(size)) state_->index.throw_out_of_space(name, size);
        state_->index.open_reservation(name, size);
        const StoreUsage use = state_->index.usage();
        room = use.capacity - std::min(use.capacity, use.used + use.reserved);
    }
    try {
        if (size > 0) bytes = allocate(static_cast<std::size_t>(size), room, state_->pool);
    } catch (const std::bad_alloc&) {
        std::lock_guard lock(state_->mutex);
        state_->index.close_reservation(std::string(name), size);
        throw Error(Errc::out_of_space, "no room for blob " + quote_name(name) + ": cannot allocate " +
                                            std::to_string(size) + " bytes of memory");
    }
    return std::make_unique<MemoryReservation>(state_, std::string(name), size, mode, checksum, std::move(bytes));
}

BlobInfo MemoryStore::remove(std::string_view name)
{
    validate_blob_name(name);
    std::lock_guard lock(state_->mutex);
    return state_->index.erase(name).info;
}

StoreUsage MemoryStore::usage() const
{
    std::lock_guard lock(state_->mutex);
    return state_->index.usage();
}

}  // namespace blobstreaming
