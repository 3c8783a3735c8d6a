#pragma once
/// The journal that lets an interrupted push outlive the daemon: an append
/// log kept beside a reservation's bytes, naming the Blob, its size, its
/// checksum algorithm and the client that reserved it, then the ranges
/// received so far, each with the CRC32C of its bytes.
///
/// Every record carries its own length and CRC32C, so a record torn by a
/// crash (or changed on disk) is detected and ends the journal there: what
/// follows is received again. The ranges say what was received; they are
/// never trusted as they are: the store that reopens a journal rereads the
/// bytes and keeps the prefix whose ranges still match (a part changed
/// while the daemon was down is received again), and the resumed push's
/// commit compares the whole Blob's checksum, computed over the bytes
/// as they are on disk, with the client's.
///
/// The format is the stores' own; FileStore keeps it in tmp/ beside the
/// reservation file, RadosStore as the object `blobstreaming.resume.ID`
/// beside the reservation's data objects (RadosJournal.h, docs/STORES.md).

#include <blobstreaming/blobstore/Store.h>
#include <blobstreaming/common/Checksum.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace blobstreaming::detail {

/// A range is recorded when this many bytes were received since the last
/// one, and when the push breaks off (park): a daemon killed in a push
/// receives at most this much again.
inline constexpr std::uint64_t kResumeCheckpoint = std::uint64_t{4} << 20;

struct ResumeHeader {
    std::string name;
    std::uint64_t size = 0;
    ChecksumAlgorithm checksum = kDefaultChecksum;
    ReserveMode mode = ReserveMode::create;
    std::string owner;  ///< the client that reserved it: the only one that may resume it
};

struct ResumeRange {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::uint32_t crc = 0;  ///< CRC32C of the bytes [start, end)
};

/// One record each: append them in order.
std::string encode_resume_header(const ResumeHeader& header);
std::string encode_resume_range(const ResumeRange& range);

struct ResumeJournal {
    ResumeHeader header;
    /// Contiguous from byte 0, in order, each within the Blob.
    std::vector<ResumeRange> ranges;
    /// Why reading stopped before the end of the bytes ("" when it did not):
    /// a torn or changed record, a range that does not follow the last.
    std::string stopped;
    std::uint64_t received() const noexcept { return ranges.empty() ? 0 : ranges.back().end; }
};

/// Reads a journal; nullopt, with `why`, when its first record is not a
/// valid header (nothing of it can be used).
std::optional<ResumeJournal> parse_resume_journal(std::string_view bytes, std::string& why);

}  // namespace blobstreaming::detail
