#pragma once

#include <blobstreaming/blobstore/Store.h>

#include <cstdint>
#include <memory>

namespace blobstreaming {

/// Blobs in bounded RAM.
///
/// Same semantics and errors as FileStore. With `evict` on, the store acts
/// as a cache tier: when a reservation needs room, committed Blobs are
/// dropped least recently used first (read() and commit count as use) until
/// it fits; Blobs being read stay alive for their readers but no longer
/// count. Without it, a full store answers Errc::out_of_space.
class MemoryStore final : public Store {
public:
    struct Options {
        std::uint64_t capacity = 0;  ///< required, > 0
        bool evict = false;
    };

    explicit MemoryStore(Options options);
    ~MemoryStore() override;

    std::string_view kind() const noexcept override { return "memory"; }
    BlobInfo stat(std::string_view name) const override;
    std::vector<BlobInfo> list() const override;
    /// Counts as use (eviction order). The view shares the Blob's buffer,
    /// which outlives its eviction or removal.
    BlobRange read(std::string_view name, std::uint64_t start, std::uint64_t end) const override;
    /// With `evict`, first drops least recently used Blobs until `size`
    /// fits (none when it could not fit even in an empty store);
    /// Errc::out_of_space also when the memory cannot be allocated.
    std::unique_ptr<Reservation> reserve(std::string_view name, std::uint64_t size,
                                         ReserveMode mode = ReserveMode::create,
                                         ChecksumAlgorithm checksum = kDefaultChecksum) override;
    void remove(std::string_view name) override;
    StoreUsage usage() const override;

    /// How many Blobs eviction has dropped since construction.
    std::uint64_t evictions() const;

    struct State;

private:
    std::shared_ptr<State> state_;
};

}  // namespace blobstreaming
