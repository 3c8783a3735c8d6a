#pragma once

#include <blobstreaming/common/Sha256.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace blobstreaming {

/// What a store knows of a committed Blob.
struct BlobInfo {
    std::string name;
    std::uint64_t size = 0;
    Digest digest{};                                  ///< SHA-256 of all bytes
    std::chrono::system_clock::time_point committed;  ///< when it became visible
};

/// Whether `a` and `b` are the same committed version of a Blob: same size,
/// digest and commit time (a replacement with equal bytes is another
/// version, but serving either delivers the same bytes).
bool same_version(const BlobInfo& a, const BlobInfo& b) noexcept;

/// "1048576 bytes, SHA-256 9f86d081884c7d65…, committed 2026-11-23T10:15:02.123456789Z"
std::string describe_version(const BlobInfo& info);

/// A store's space accounting.
struct StoreUsage {
    std::uint64_t capacity = 0;  ///< 0: no limit of its own
    std::uint64_t used = 0;      ///< committed bytes
    std::uint64_t reserved = 0;  ///< bytes held by open reservations
    std::uint64_t blob_count = 0;
};

}  // namespace blobstreaming
