#pragma once
/// End-to-end checksums of Blobs: the algorithm, its value, and computing it
/// while the bytes flow.
///
/// CRC32C (Castagnoli, as iSCSI, ext4, Ceph BlueStore, HDFS and Google Cloud
/// Storage use it) is the default: ISA-L computes it at ~28 GB/s per core, ten
/// times what a loopback socket moves, so it costs nothing on the data path;
/// and CRCs combine (crc32c_combine), so the checksum of a whole Blob follows
/// from those of its parts without rereading them. SHA-256 (OpenSSL) is there
/// where a cryptographic digest is wanted (an adversary, not noise), at about
/// 1.5 GB/s per core. Blobs stored before CRC32C carry SHA-256 and stay
/// verifiable: a stored checksum always says its algorithm.

#include <blobstreaming/common/Sha256.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace blobstreaming {

/// The numeric values travel on the data connection and in FileStore
/// headers: never renumber.
enum class ChecksumAlgorithm : std::uint8_t { sha256 = 1, crc32c = 2 };

inline constexpr ChecksumAlgorithm kDefaultChecksum = ChecksumAlgorithm::crc32c;

/// "crc32c", "sha256".
std::string_view to_string(ChecksumAlgorithm algorithm) noexcept;
/// The algorithm of that name (as to_string() spells it); nullopt otherwise.
std::optional<ChecksumAlgorithm> checksum_algorithm_from(std::string_view name) noexcept;
/// The algorithm of that wire or header code; nullopt for an unknown one.
std::optional<ChecksumAlgorithm> checksum_algorithm_from_code(unsigned code) noexcept;
/// "crc32c, sha256": what an option accepts, for error messages.
inline constexpr const char* kChecksumAlgorithmNames = "crc32c, sha256";
/// Bytes of the algorithm's value: 4 (CRC32C), 32 (SHA-256).
std::size_t checksum_size(ChecksumAlgorithm algorithm) noexcept;

/// A checksum of some bytes: its algorithm and value. Two checksums are
/// equal only when both algorithm and value are.
struct Checksum {
    static constexpr std::size_t kMaxSize = 32;

    ChecksumAlgorithm algorithm = kDefaultChecksum;
    /// The first checksum_size(algorithm) bytes hold the value (a CRC
    /// big-endian, as it is usually written); the rest stay zero.
    std::array<std::uint8_t, kMaxSize> value{};

    std::size_t size() const noexcept { return checksum_size(algorithm); }
    /// The value in lower-case hex ("e3069283").
    std::string hex() const;
    /// "crc32c:e3069283", "sha256:9f86d0…" (whole): what the CLI prints and
    /// parse() reads.
    std::string text() const;
    /// For messages: text() with a SHA-256 value cut to 16 hex digits + "…".
    std::string brief() const;

    /// "ALGORITHM:HEX" as text() writes it (hex in either case); nullopt
    /// for anything else.
    static std::optional<Checksum> parse(std::string_view text);

    static Checksum crc32c(std::uint32_t crc) noexcept;
    static Checksum sha256(const Digest& digest) noexcept;
    /// The CRC of a crc32c checksum.
    std::uint32_t crc() const noexcept;

    friend bool operator==(const Checksum& a, const Checksum& b) noexcept
    {
        return a.algorithm == b.algorithm && a.value == b.value;
    }
    friend bool operator!=(const Checksum& a, const Checksum& b) noexcept { return !(a == b); }
};

/// CRC32C of `size` bytes, continuing `previous` (the CRC32C of the bytes
/// before them; 0 for none): crc32c(B, crc32c(A)) == crc32c(A‖B).
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t previous = 0) noexcept;

/// The CRC32C of A‖B from crc32c(A), crc32c(B) and B's length, in O(log
/// length) without the bytes.
std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t length_b) noexcept;

/// A checksum computed incrementally as bytes arrive.
class ChecksumState {
public:
    explicit ChecksumState(ChecksumAlgorithm algorithm = kDefaultChecksum);

    ChecksumAlgorithm algorithm() const noexcept { return algorithm_; }
    void update(const void* data, std::size_t size);
    /// Adds every byte read(2) yields from `fd` until its end, through a
    /// 1 MiB buffer. Returns the bytes added, also when a read fails (`ec`
    /// then holds its errno; EINTR is retried).
    std::uint64_t update_from(int fd, std::error_code& ec);
    /// The checksum of every byte so far; the state may not be updated
    /// afterwards.
    Checksum finish();

    static Checksum of(ChecksumAlgorithm algorithm, const void* data, std::size_t size);

private:
    ChecksumAlgorithm algorithm_;
    std::uint32_t crc_ = 0;
    std::optional<Sha256> sha_;
};

}  // namespace blobstreaming
