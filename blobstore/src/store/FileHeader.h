#pragma once
/// The on-disk format of a FileStore Blob file: the 4 KiB header (magic,
/// format version, size, commit time, checksum and its algorithm, name, and
/// the header's own SHA-256) in front of the Blob's bytes. Files of format
/// version 1 (SHA-256 only, before CRC32C) are read as well. Writing it, and reading it back
/// with every check (magic, version, checksum, name, file size).

#include <blobstreaming/common/BlobInfo.h>

#include <cstdint>
#include <optional>
#include <string>

namespace blobstreaming::detail {

/// Writes the header of `info` into `h` (FileStore::kHeaderSize bytes).
void encode_header(const BlobInfo& info, std::uint8_t* h);

/// Decodes a header; nullopt with `why` set when it is not a valid one.
std::optional<BlobInfo> decode_header(const std::uint8_t* h, std::string& why);

/// Reads and validates the header of an open blob file against its size.
std::optional<BlobInfo> read_header(int fd, std::string& why);

}  // namespace blobstreaming::detail
