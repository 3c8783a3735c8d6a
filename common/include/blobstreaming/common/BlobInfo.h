#pragma once

#include <blobstreaming/common/Checksum.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace blobstreaming {

/// What a store knows of a committed Blob.
struct BlobInfo {
    std::string name;
    std::uint64_t size = 0;
    Checksum checksum;                                ///< of all bytes, with its algorithm
    std::chrono::system_clock::time_point committed;  ///< when it became visible
};

/// Whether `a` and `b` are the same committed version of a Blob: same size,
/// checksum and commit time (a replacement with equal bytes is another
/// version, but serving either delivers the same bytes).
bool same_version(const BlobInfo& a, const BlobInfo& b) noexcept;

/// "1048576 bytes, crc32c:e3069283, committed 2026-11-23T10:15:02.123456789Z"
std::string describe_version(const BlobInfo& info);

/// A store's space accounting.
struct StoreUsage {
    std::uint64_t capacity = 0;  ///< 0: no limit of its own
    std::uint64_t used = 0;      ///< committed bytes
    std::uint64_t reserved = 0;  ///< bytes held by open reservations
    std::uint64_t blob_count = 0;
};

}  // namespace blobstreaming
