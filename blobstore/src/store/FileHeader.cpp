/// The FileStore Blob file header (FileHeader.h): layout and version check.
#include "FileHeader.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/LittleEndian.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include <sys/stat.h>
#include <unistd.h>

namespace blobstreaming::detail {

namespace {

constexpr std::uint64_t kHeaderSize = FileStore::kHeaderSize;
constexpr char kMagic[8] = {'B', 'L', 'O', 'B', 'S', 'T', 'R', '1'};
/// 2 since checksums carry their algorithm; version 1 (SHA-256 only) files
/// are still read.
constexpr std::uint32_t kVersion = 2;
constexpr std::uint32_t kVersionSha256Only = 1;
/// Offset of the header's own SHA-256 (over the bytes before it).
constexpr std::size_t kHeaderDigestAt = kHeaderSize - 32;

// ---- header encoding (little-endian, fixed layout) ------------------------
//   0  magic[8]       8  version u32   12  header size u32
//  16  blob size u64 24  commit ns u64 32  checksum value[32] (zero-padded)
//  64  name length u16
//  version 2: 66 checksum algorithm u8 (Checksum.h codes), 67 zero, 68 name bytes
//  version 1: 66 name bytes, the checksum is SHA-256
//  4064 SHA-256 of bytes [0, 4064): the header's own check

std::int64_t to_ns(std::chrono::system_clock::time_point t)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// Bytes [0, kHeaderDigestAt) of the header of `info` (format version 2).
void encode_header_body(const BlobInfo& info, std::uint8_t* h)
{
    std::memset(h, 0, kHeaderDigestAt);
    std::memcpy(h, kMagic, sizeof kMagic);
    le::put<std::uint32_t>(h + 8, kVersion);
    le::put<std::uint32_t>(h + 12, static_cast<std::uint32_t>(kHeaderSize));
    le::put<std::uint64_t>(h + 16, info.size);
    le::put<std::uint64_t>(h + 24, static_cast<std::uint64_t>(to_ns(info.committed)));
    std::memcpy(h + 32, info.checksum.value.data(), info.checksum.size());
    le::put<std::uint16_t>(h + 64, static_cast<std::uint16_t>(info.name.size()));
    h[66] = static_cast<std::uint8_t>(info.checksum.algorithm);
    std::memcpy(h + 68, info.name.data(), info.name.size());
}

}  // namespace

void encode_header(const BlobInfo& info, std::uint8_t* h)
{
    encode_header_body(info, h);
    const Digest self = Sha256::of(h, kHeaderDigestAt);
    std::memcpy(h + kHeaderDigestAt, self.data(), 32);
}

/// Decodes a header; nullopt with `why` set when it is not a valid one.
std::optional<BlobInfo> decode_header(const std::uint8_t* h, std::string& why)
{
    if (std::memcmp(h, kMagic, sizeof kMagic) != 0) return why = "no blob header", std::nullopt;
    const std::uint32_t version = le::get<std::uint32_t>(h + 8);
    if (version != kVersion && version != kVersionSha256Only)
        return why = "unknown header version " + std::to_string(version), std::nullopt;
    const Digest self = Sha256::of(h, kHeaderDigestAt);
    if (std::memcmp(self.data(), h + kHeaderDigestAt, 32) != 0) return why = "header checksum mismatch", std::nullopt;
    const std::size_t name_len = le::get<std::uint16_t>(h + 64);
    if (name_len == 0 || name_len > kMaxBlobNameLength) return why = "bad name length", std::nullopt;
    BlobInfo info;
    std::size_t name_at = 66;
    info.checksum.algorithm = ChecksumAlgorithm::sha256;
    if (version == kVersion) {
        const auto algorithm = checksum_algorithm_from_code(h[66]);
        if (!algorithm) return why = "unknown checksum algorithm " + std::to_string(h[66]), std::nullopt;
        info.checksum.algorithm = *algorithm;
        name_at = 68;
    }
    info.name.assign(reinterpret_cast<const char*>(h + name_at), name_len);
    info.size = le::get<std::uint64_t>(h + 16);
    info.committed =
        std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(static_cast<std::int64_t>(le::get<std::uint64_t>(h + 24)))));
    std::memcpy(info.checksum.value.data(), h + 32, info.checksum.size());
    return info;
}

/// Reads and validates the header of an open blob file against its size.
std::optional<BlobInfo> read_header(int fd, std::string& why, const KnownHeader* known, HeaderDigest* digest,
                                    struct stat* st)
{
    std::uint8_t h[kHeaderSize];
    const ssize_t n = ::pread(fd, h, sizeof h, 0);
    if (n != static_cast<ssize_t>(sizeof h)) return why = "file shorter than a header", std::nullopt;
    std::optional<BlobInfo> info;
    if (known && std::memcmp(h + kHeaderDigestAt, known->digest.data(), known->digest.size()) == 0) {
        // The bytes the digest was checked over, unchanged: decode_header
        // would hash them to the same digest and return `known->info`.
        std::uint8_t expected[kHeaderDigestAt];
        encode_header_body(known->info, expected);
        if (std::memcmp(h, expected, sizeof expected) == 0) info = known->info;
    }
    if (!info) info = decode_header(h, why);
    if (!info) return info;
    if (digest) std::memcpy(digest->data(), h + kHeaderDigestAt, digest->size());
    struct stat own {};
    if (!st) st = &own;
    if (::fstat(fd, st) != 0) return why = std::strerror(errno), std::nullopt;
    if (static_cast<std::uint64_t>(st->st_size) != kHeaderSize + info->size)
        return why = "file size does not match the header (truncated or extended)", std::nullopt;
    return info;
}

}  // namespace blobstreaming::detail
