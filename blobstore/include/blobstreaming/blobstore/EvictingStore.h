#pragma once

#include <blobstreaming/blobstore/Store.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace blobstreaming {

/// A cache over any Store (`blobstored --evict`): when the store it wraps
/// refuses a reservation for want of room, committed Blobs are removed
/// least recently used first until the reservation fits. Use is a read
/// (also the same-host path's local_file()) or the commit; the order of
/// Blobs not used since the decorator was made is their commit time.
///
/// Nothing is removed for a Blob that could not fit even in an empty store
/// (more than the capacity less what open reservations hold): the cache is
/// never emptied in vain. Readers of a removed Blob keep their views (the
/// Store contract). The wrapped store must have a capacity (usage()) of its
/// own: a store bounded only by its file system or its pool would be
/// emptied by a Blob larger than what is left there.
///
/// Everything else is forwarded: the kind, stat, list, reads, removal and
/// usage are the wrapped store's, and so are its errors.
class EvictingStore final : public Store {
public:
    /// Errc::invalid_argument when `inner` has no capacity of its own.
    explicit EvictingStore(std::unique_ptr<Store> inner);

    std::string_view kind() const noexcept override { return inner_->kind(); }
    BlobInfo stat(std::string_view name) const override { return inner_->stat(name); }
    std::optional<BlobInfo> find(std::string_view name) const override { return inner_->find(name); }
    std::vector<BlobInfo> list() const override { return inner_->list(); }
    BlobRange read(std::string_view name, std::uint64_t start, std::uint64_t end) const override;
    std::unique_ptr<Reservation> reserve(std::string_view name, std::uint64_t size,
                                         ReserveMode mode = ReserveMode::create,
                                         ChecksumAlgorithm checksum = kDefaultChecksum) override;
    BlobInfo remove(std::string_view name) override;
    StoreUsage usage() const override { return inner_->usage(); }
    std::vector<Kept> take_kept() override { return inner_->take_kept(); }
    std::optional<LocalFile> local_file(std::string_view name) const override;
    bool read_waits() const noexcept override { return inner_->read_waits(); }
    bool keeps_files() const noexcept override { return inner_->keeps_files(); }
    bool adopts_images() const noexcept override { return inner_->adopts_images(); }

    /// How many Blobs have been removed to make room since construction.
    std::uint64_t evictions() const;

private:
    using Clock = std::chrono::system_clock;

    void used(std::string_view name) const;
    /// Committed Blobs but `keep`, least recently used first (room_ held).
    std::vector<BlobInfo> by_last_use(std::string_view keep) const;
    /// Removes `victim` to make room (room_ held); false when it was gone.
    bool evict_for(const BlobInfo& victim, std::string_view for_name, std::uint64_t for_size);

    std::unique_ptr<Store> inner_;
    std::mutex room_;           ///< held by the reservation making room
    mutable std::mutex mutex_;  ///< last_use_, evictions_
    /// Names read since the decorator was made, and when. A name's commit
    /// time (BlobInfo) stands for its use until it is read.
    mutable std::map<std::string, Clock::time_point, std::less<>> last_use_;
    std::uint64_t evictions_ = 0;
};

}  // namespace blobstreaming
