#pragma once
/// What the control plane grants the data plane: a ticket for one transfer
/// on a data connection, a push's reservation, a same-host Blob file.

#include <blobstreaming/common/BlobInfo.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace blobstreaming::dataplane {

/// Permission for one data-connection transfer.
struct Ticket {
    std::array<std::uint8_t, 16> id{};
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    std::string host;
    std::uint16_t port = 0;
    /// Pull: the committed version the store delivers (or fails with
    /// Errc::blob_changed); nullopt for a push.
    std::optional<BlobInfo> version;
    /// The checksum the data connection uses: the algorithm the store
    /// computes over a push's bytes and expects in its trailer; a pulled
    /// Blob's.
    ChecksumAlgorithm checksum = kDefaultChecksum;
    std::string endpoint() const { return host + ":" + std::to_string(port); }
};

struct PushGrant {
    std::uint64_t reservation = 0;
    Ticket ticket;
};

/// A same-host Blob file (the local fast path).
struct LocalFile {
    std::string path;
    std::uint64_t data_offset = 0;
    BlobInfo info;
};

}  // namespace blobstreaming::dataplane
