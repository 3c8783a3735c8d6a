#pragma once
/// The on-disk format of a FileStore Blob file: the 4 KiB header (magic,
/// format version, size, commit time, checksum and its algorithm, name, and
/// the header's own SHA-256) in front of the Blob's bytes. Files of format
/// version 1 (SHA-256 only, before CRC32C) are read as well. Writing it, and reading it back
/// with every check (magic, version, checksum, name, file size).

#include <blobstreaming/common/BlobInfo.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <sys/stat.h>

namespace blobstreaming::detail {

/// The header's own SHA-256 (its last 32 bytes).
using HeaderDigest = std::array<std::uint8_t, 32>;

/// A header checked before: its Blob and its digest. A header that is
/// byte for byte the encoding of `info` ending in `digest` is the one
/// whose SHA-256 was checked then, so it decodes to `info` unhashed.
struct KnownHeader {
    const BlobInfo& info;
    const HeaderDigest& digest;
};

/// Writes the header of `info` into `h` (FileStore::kHeaderSize bytes).
void encode_header(const BlobInfo& info, std::uint8_t* h);

/// Decodes a header; nullopt with `why` set when it is not a valid one.
std::optional<BlobInfo> decode_header(const std::uint8_t* h, std::string& why);

/// Reads and validates the header of an open blob file against its size.
/// A header equal to `known`'s (compared byte for byte) is not hashed again;
/// any other is decoded with every check. `digest` receives the header's
/// own SHA-256 of a valid header, `st` the file's fstat (the one that
/// checked its size).
std::optional<BlobInfo> read_header(int fd, std::string& why, const KnownHeader* known = nullptr,
                                    HeaderDigest* digest = nullptr, struct stat* st = nullptr);

}  // namespace blobstreaming::detail
