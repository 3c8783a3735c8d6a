#pragma once

#include <blobstreaming/blobstore/Store.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace blobstreaming {

/// Something that happened to a Blob of a store (`blob watch`).
struct StoreEvent {
    enum class Kind { committed, removed };
    enum class Reason {
        created,   ///< committed: no Blob of that name was there when its reservation was made
        replaced,  ///< committed over a Blob of that name (which gets no `removed` of its own)
        removed,   ///< removed: Store::remove
        evicted,   ///< removed: Store::evict (EvictingStore made room)
    };
    Kind kind = Kind::committed;
    Reason reason = Reason::created;
    /// 1 for the store's first event, one more for each event of any kind.
    std::uint64_t sequence = 0;
    std::chrono::system_clock::time_point time;
    /// committed: as committed; removed: as it was just before (only the
    /// name when the store could not say).
    BlobInfo blob;
};

const char* to_string(StoreEvent::Kind kind) noexcept;      ///< "committed", "removed"
const char* to_string(StoreEvent::Reason reason) noexcept;  ///< "created", "replaced", "removed", "evicted"

/// Where an ObservedStore's events go.
class StoreListener {
public:
    virtual ~StoreListener() = default;
    /// Called on the thread that committed or removed, in sequence order
    /// (under the store's event mutex): must not throw, and must not block
    /// (the committing thread may be a daemon's reactor thread): queue.
    virtual void published(const StoreEvent& event) noexcept = 0;
};

/// A decorator that publishes every commit and removal of the store it
/// wraps, whatever path caused it: a commit through any reservation it
/// handed out (Reservation::on_commit(), also one that outlives the
/// store), remove(), and evict() (placed inside an EvictingStore, it sees
/// the evictions as such). Everything else is forwarded unchanged, errors
/// included.
class ObservedStore final : public Store {
public:
    ObservedStore(std::unique_ptr<Store> inner, std::shared_ptr<StoreListener> listener);

    std::string_view kind() const noexcept override { return inner_->kind(); }
    BlobInfo stat(std::string_view name) const override { return inner_->stat(name); }
    std::optional<BlobInfo> find(std::string_view name) const override { return inner_->find(name); }
    std::vector<BlobInfo> list() const override { return inner_->list(); }
    BlobRange read(std::string_view name, std::uint64_t start, std::uint64_t end) const override
    {
        return inner_->read(name, start, end);
    }
    std::unique_ptr<Reservation> reserve(std::string_view name, std::uint64_t size,
                                         ReserveMode mode = ReserveMode::create,
                                         ChecksumAlgorithm checksum = kDefaultChecksum) override;
    BlobInfo remove(std::string_view name) override;
    BlobInfo evict(std::string_view name) override;
    StoreUsage usage() const override { return inner_->usage(); }
    /// The inner store's, each publishing its commit as reserve()'s do.
    std::vector<Kept> take_kept() override;
    std::optional<LocalFile> local_file(std::string_view name) const override { return inner_->local_file(name); }
    bool read_waits() const noexcept override { return inner_->read_waits(); }
    bool keeps_files() const noexcept override { return inner_->keeps_files(); }
    bool adopts_images() const noexcept override { return inner_->adopts_images(); }

    /// The sequence number of the last event published (0: none yet).
    std::uint64_t last_sequence() const;

    /// Numbers and publishes; shared with the reservations' hooks.
    class Publisher;

private:
    BlobInfo removing(std::string_view name, bool evicting);

    std::unique_ptr<Store> inner_;
    std::shared_ptr<Publisher> publisher_;
};

}  // namespace blobstreaming
