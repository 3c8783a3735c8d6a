#pragma once

#include <blobstreaming/blobstore/Store.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming {

/// A directory of Blobs on a local file system.
///
/// Layout (see docs/STORES.md): `blobs/<xx>/<name>`, where `<xx>` is a
/// fan-out of 256 sub-directories chosen by a hash of the name; each file is
/// a 4 KiB header (size, SHA-256, commit time, name) followed by the bytes,
/// so that byte i of the Blob is at file offset 4096 + i (page aligned for
/// mmap, usable by sendfile). Reservations are files in `tmp/`, filled with
/// pwrite from a small buffer (writeback started as the bytes arrive), then
/// fsync'ed and renamed into `blobs/` (and the directory fsync'ed, shared by
/// concurrent commits).
///
/// Opening takes an exclusive lock on the directory (Errc::store_busy if
/// another process or object holds it), removes leftover reservations of a
/// crashed process and indexes the committed Blobs; files without a valid
/// header are never listed.
///
/// A reservation holds its file by path: a descriptor (and buffer) only
/// while a transfer fills it. It is never mapped, so that a full disk on a
/// file system without fallocate (ext2, vfat) is Errc::out_of_space and
/// never SIGBUS.
///
/// The file system changed behind the store's back: a missing or replaced
/// store directory (or blobs/, tmp/) is Errc::io_error naming the path for
/// every operation, index untouched; a Blob whose own file is missing is
/// gone (stat, read, remove drop it: Errc::no_such_blob naming the file); a
/// remove that cannot unlink keeps the entry (Errc::io_error).
class FileStore final : public Store {
public:
    struct Options {
        std::uint64_t capacity = 0;  ///< 0: only the file system limits
        bool sync = true;            ///< fsync at commit (off only for tests and benchmarks)
        /// Recently read Blob files kept open, at most (and at most a
        /// sixteenth of RLIMIT_NOFILE's soft limit); 0 keeps none.
        std::size_t open_files = 64;
    };

    explicit FileStore(const std::filesystem::path& directory);
    FileStore(const std::filesystem::path& directory, Options options);
    ~FileStore() override;

    std::string_view kind() const noexcept override { return "file"; }
    /// The index answers; the Blob's file confirms it is still there.
    BlobInfo stat(std::string_view name) const override;
    std::optional<BlobInfo> find(std::string_view name) const override;
    std::vector<BlobInfo> list() const override;
    /// A view of the file actually opened, by its own header: a Blob
    /// replaced since the lookup is seen whole in its new version. The view
    /// holds the file open (usable by sendfile) and maps the Blob's bytes
    /// on its first data() (once per open file, shared by its views).
    ///
    /// The store keeps the last Options::open_files files it read open, with
    /// their checked headers: a read of the version the index lists, whose
    /// file is unchanged and still linked (one fstat of it: device, inode,
    /// size, mtime, ctime, link count; any write, unlink, rename, or a file
    /// renamed over it moves its ctime), is served from it without opening
    /// or checking the header again. A file changed less than two ticks of
    /// the kernel's coarse clock before is not kept (a change in the same
    /// tick could leave its ctime as it was; 3 s on a file system with
    /// coarse timestamps). A replace or remove through the store drops the
    /// name's file; anything else (a file replaced, removed or written
    /// behind the store) fails the identity check, and the read opens the
    /// path as above. When the process runs out of descriptors they are all
    /// closed (IdleDescriptors).
    BlobRange read(std::string_view name, std::uint64_t start, std::uint64_t end) const override;
    /// Creates the reservation file in tmp/ at its full size (fallocate; on
    /// a file system without it, after checking the free space).
    std::unique_ptr<Reservation> reserve(std::string_view name, std::uint64_t size,
                                         ReserveMode mode = ReserveMode::create,
                                         ChecksumAlgorithm checksum = kDefaultChecksum) override;
    /// Unlinks the Blob's file (and, with sync, fsyncs its directory).
    BlobInfo remove(std::string_view name) override;
    StoreUsage usage() const override;
    /// Reservations kept for a resume (their journals in tmp/), reread at
    /// open: each keeps the prefix whose journaled ranges match the bytes.
    std::vector<Kept> take_kept() override;

    const std::filesystem::path& directory() const noexcept;

    /// Where a committed Blob's bytes are on disk, for a same-host client
    /// that maps the file itself: the path and the offset of byte 0.
    struct Location {
        std::filesystem::path path;
        std::uint64_t data_offset;
    };
    Location locate(std::string_view name) const;
    std::optional<LocalFile> local_file(std::string_view name) const override;
    bool keeps_files() const noexcept override { return true; }

    /// Offset of byte 0 of a Blob in its file.
    static constexpr std::uint64_t kHeaderSize = 4096;

    /// The Blob an open Blob file holds, from its header (a same-host client
    /// that opened a path checks that it is the version it was told of: the
    /// path may have been replaced since). nullopt, with `why`, when `fd` is
    /// not a valid Blob file.
    static std::optional<BlobInfo> file_info(int fd, std::string& why);

    /// Blob files the store holds open now for its next reads (see read()),
    /// and how many reads they served.
    std::size_t open_files() const;
    std::uint64_t reads_from_open_files() const;

    /// How many leftover reservations the last open removed.
    std::size_t recovered_reservations() const noexcept;

    /// How many directory fsyncs commits and removals made so far: commits
    /// into one fan-out directory that arrive while its fsync is in flight
    /// share the next one (group commit), so this can be lower than their
    /// count.
    std::uint64_t directory_syncs() const;

    /// Reservations whose file was created ahead by the store's helper
    /// thread (an unnamed file, linked into tmp/ by reserve()), rather than
    /// by reserve() itself: the file system's inode allocation off the
    /// reservation's round trip.
    std::uint64_t files_created_ahead() const;
    /// Whether the next reservation's file is ready (tests).
    bool file_ready_ahead() const;

    struct State;

private:
    std::shared_ptr<State> state_;
    std::mutex kept_mutex_;
    std::vector<Kept> kept_;  ///< until take_kept()
};

}  // namespace blobstreaming
