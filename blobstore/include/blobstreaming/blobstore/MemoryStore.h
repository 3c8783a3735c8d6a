#pragma once

#include <blobstreaming/blobstore/Store.h>

#include <cstdint>
#include <memory>

namespace blobstreaming {

/// Blobs in bounded RAM.
///
/// Same semantics and errors as FileStore: a full store answers
/// Errc::out_of_space. As a cache tier it is wrapped in an EvictingStore
/// (`blobstored --evict`), like any other kind.
class MemoryStore final : public Store {
public:
    struct Options {
        std::uint64_t capacity = 0;  ///< required, > 0
    };

    explicit MemoryStore(Options options);
    ~MemoryStore() override;

    std::string_view kind() const noexcept override { return "memory"; }
    BlobInfo stat(std::string_view name) const override;
    std::optional<BlobInfo> find(std::string_view name) const override;
    std::vector<BlobInfo> list() const override;
    /// The view shares the Blob's buffer, which outlives its removal.
    BlobRange read(std::string_view name, std::uint64_t start, std::uint64_t end) const override;
    /// Errc::out_of_space also when the memory cannot be allocated.
    std::unique_ptr<Reservation> reserve(std::string_view name, std::uint64_t size,
                                         ReserveMode mode = ReserveMode::create,
                                         ChecksumAlgorithm checksum = kDefaultChecksum) override;
    BlobInfo remove(std::string_view name) override;
    StoreUsage usage() const override;
    /// Its Blobs' bytes may be images other stores made (Reservation::adopt).
    bool adopts_images() const noexcept override { return true; }

    struct State;

private:
    std::shared_ptr<State> state_;
};

}  // namespace blobstreaming
