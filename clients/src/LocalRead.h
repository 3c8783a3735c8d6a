#pragma once
/// The same-host fast path: a range of a committed Blob read from the
/// store's own file through a mapping, instead of a socket.
///
/// Two steps, so that a caller can tell "the store's file cannot be used
/// here" (open_local: take the network instead, nothing was written) from a
/// failure of the destination or of the checksum (copy_local: the sink may
/// already have written bytes, e.g. to standard output or a FIFO, so the
/// pull must fail rather than start again over another path).

#include "Streams.h"
#include "DataPlane.h"

#include <blobstreaming/client/InPlace.h>
#include <blobstreaming/client/Result.h>
#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/MappedRegion.h>
#include <blobstreaming/common/UniqueFd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace blobstreaming::client {

/// [offset, offset + length) of the Blob in a store's file, mapped
/// read-only. Move-only; unmaps when destroyed.
class LocalRange {
public:
    LocalRange() = default;

    const LocalFile& file() const noexcept { return file_; }
    std::uint64_t offset() const noexcept { return offset_; }
    std::uint64_t length() const noexcept { return length_; }
    /// The range's first byte (nullptr when the range is empty).
    const std::uint8_t* data() const noexcept { return map_.data(); }
    /// The store's file, open for reading; the range starts at byte
    /// file().data_offset + offset() of it.
    int fd() const noexcept { return fd_.get(); }

private:
    friend LocalRange open_local(const LocalFile&, std::uint64_t, std::uint64_t, const std::string&);
    LocalFile file_;
    std::uint64_t offset_ = 0;
    std::uint64_t length_ = 0;
    UniqueFd fd_;
    MappedRegion map_;
};

/// What a same-host pull of `file` from `store` at `offset` reports before
/// it moves a byte (local, the file's version); bytes, length and time are
/// the caller's to fill.
Result local_result(const std::string& store, const LocalFile& file, std::uint64_t offset);

/// Opens and maps [offset, offset + length) of the Blob in `file` (length
/// 0: to the end). Touches no sink. Throws Error: Errc::invalid_range,
/// Errc::io_error when the file cannot be used here, Errc::blob_changed when
/// the path now holds another version than `file.info` (the caller may take
/// the network instead for both).
LocalRange open_local(const LocalFile& file, std::uint64_t offset, std::uint64_t length, const std::string& what);

/// Opens `sink`, copies the range into it, checks the whole Blob's checksum
/// when the range is the whole Blob and `verify` is set, then finishes the
/// sink (on success only: the caller abandons it on failure). Returns the
/// bytes delivered. The bytes move by slices of kLocalSlice: inside the
/// kernel when the sink takes it (Sink::copy_from_file: a regular file),
/// else read(2) straight into the sink's window (memory, a bounce buffer);
/// the checksum is computed from the mapping (SHA-256 from 4 MiB on on a
/// HashPipeline helper thread at the same time). `progress` is called after each slice. Throws Error: the sink's (Errc::io_error: its
/// destination failed, possibly after bytes were written),
/// Errc::digest_mismatch. Not to be retried over the network.
/// Bytes moved between two progress calls.
constexpr std::size_t kLocalSlice = std::size_t{8} << 20;

std::uint64_t copy_local(const LocalRange& range, Sink& sink, bool verify, const std::string& what,
                         const Progress& progress);

/// Keeps `range` in place (PullSink::in_place) instead of copying it:
/// checks the whole Blob's checksum over the mapping when the range is the
/// whole Blob and `verify` is set, then hands the range over, its file
/// still open. `progress` is called once, at the end. Throws Error:
/// Errc::digest_mismatch (nothing is handed over).
std::shared_ptr<const InPlaceBlob> keep_in_place(LocalRange range, bool verify, const std::string& what,
                                                 const Progress& progress);

/// `range` handed over in place, kept open and mapped while `owner` (which
/// holds `range`) lives, and as long as the handed-over object does.
std::shared_ptr<const InPlaceBlob> in_place_blob(std::shared_ptr<const void> owner, const LocalRange& range);

/// What keep_in_place() checks before it hands `range` over: the whole
/// Blob's checksum over the mapping (its page tables populated first when
/// `populate_first`: a new mapping) when the range is the whole Blob and
/// `verify` is set; then `progress`, once. Throws Error:
/// Errc::digest_mismatch. For a caller that keeps the range itself
/// (InPlaceMappings).
void verify_in_place(const LocalRange& range, bool verify, const std::string& what, const Progress& progress,
                     bool populate_first);

/// Whether `path` can be opened for reading by this process.
bool local_file_readable(const std::string& path) noexcept;

}  // namespace blobstreaming::client
