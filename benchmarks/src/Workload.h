#pragma once
/// The blobs a benchmark run moves: `count` blobs of `size` bytes whose
/// content is a deterministic function of (index, size), so that client and
/// server can each produce them and check the other's bytes by SHA-256.

#include <blobstreaming/common/Sha256.h>

#include <cstdint>
#include <string>
#include <vector>

namespace blobstreaming::bench {

/// Fills `size` bytes at `out` with the content of blob `index`.
void fill_blob(std::uint32_t index, std::uint8_t* out, std::uint64_t size) noexcept;

/// `count` buffers of `size` bytes, touched once so that no page fault
/// lands in a timed run.
class BlobSet {
public:
    /// `generate`: fill with blob content (a sender); else zeroes (a receiver).
    BlobSet(std::uint32_t count, std::uint64_t size, bool generate);

    std::uint32_t count() const noexcept { return static_cast<std::uint32_t>(blobs_.size()); }
    std::uint64_t size() const noexcept { return size_; }
    std::uint8_t* data(std::uint32_t index) noexcept { return blobs_[index].data(); }
    const std::uint8_t* data(std::uint32_t index) const noexcept { return blobs_[index].data(); }
    /// Zeroes every blob, so that a later run that moves nothing cannot pass
    /// on the bytes of an earlier one.
    void clear() noexcept;
    /// SHA-256 of every blob as it is now, in index order.
    std::vector<Digest> digests() const;

private:
    std::uint64_t size_;
    std::vector<std::vector<std::uint8_t>> blobs_;
};

/// SHA-256 of blob `index` of `size` bytes as fill_blob() makes it.
Digest expected_digest(std::uint32_t index, std::uint64_t size);

/// Compares `got` with the expected digests of blobs 0..count-1; returns ""
/// or a message naming the first wrong blob.
std::string check_digests(const std::vector<Digest>& expected, const std::vector<Digest>& got);

}  // namespace blobstreaming::bench
