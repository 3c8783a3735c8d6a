#pragma once
/// FileStore's shared state: the directory layout (blobs/<fan-out>/<name>,
/// tmp/), the lock, the index of committed Blobs and open reservations, and
/// opening: recovery of a crashed process's reservations and the scan that
/// rebuilds the index. Shared by the store and its reservations.

#include "FileHeader.h"
#include "FileSystem.h"
#include "OpenFiles.h"
#include "SpareFile.h"
#include "StoreIndex.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/common/DescriptorReserve.h>
#include <blobstreaming/common/UniqueFd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace blobstreaming {

namespace detail {

/// The fan-out sub-directory of blob `name` ("00" to "ff").
std::string fanout(std::string_view name);

/// What a file store's index keeps beside a Blob's BlobInfo: the SHA-256
/// its file's header carried when the store wrote or last checked it. A
/// read whose header is byte for byte the one that digest was checked over
/// need not hash it again (FileHeader.h: read_header).
struct FileExtra {
    HeaderDigest header_digest{};
};

}  // namespace detail

struct FileStore::State {
    std::filesystem::path root;
    std::filesystem::path blobs;
    std::filesystem::path tmp;
    bool sync;
    UniqueFd lock_fd;
    dev_t root_dev = 0;  ///< identity of `root` when opened: a directory put
    ino_t root_ino = 0;  ///< in its place later is not this store
    /// blobs/, opened with the store: reads find a Blob's file relative to
    /// it (one path lookup, and always in this store's own directory).
    UniqueFd blobs_fd;
    std::size_t recovered = 0;
    /// Reservation files in tmp/ with a resume journal beside them, left by
    /// an earlier process for reopen_kept() (FileReservation.h).
    std::vector<std::filesystem::path> journaled;
    /// Names of new reservation files: this process's id and the time the
    /// store opened, so that they never meet a kept file of an earlier
    /// process that had the same id.
    std::string tmp_prefix;
    std::atomic<std::uint64_t> tmp_counter{0};
    mutable std::mutex mutex;
    detail::StoreIndex<detail::FileExtra> index;
    /// Bytes that open reservations on a file system without fallocate will
    /// still write (guarded by `mutex`): the free space they are counting on.
    std::uint64_t promised = 0;
    /// fsyncs of blobs/<fan-out>/ after renames and unlinks, shared by
    /// concurrent commits and removals.
    detail::DirectorySync directory_sync;
    /// Fan-out directories made (at open or by a commit) whose entry in
    /// blobs/ is not yet known durable (guarded by `mutex`): a commit
    /// renamed into one syncs blobs/ too, whoever made it.
    std::set<std::string> fanouts_unsynced;
    /// The next reservation's file, created ahead in tmp/ (SpareFile.h).
    detail::SpareFile spare{tmp};
    /// Recently read Blob files, kept open (guarded by `mutex`; OpenFiles.h),
    /// and the reads they served.
    detail::OpenFiles open_files;
    std::atomic<std::uint64_t> reads_kept_open{0};
    /// Gives the open files up when the process runs out of descriptors.
    IdleDescriptors::Registration idle;

    State(const std::filesystem::path& dir, const Options& o)
        : root(dir), blobs(dir / "blobs"), tmp(dir / "tmp"), sync(o.sync), index(o.capacity), open_files(o.open_files)
    {}

    std::filesystem::path path_of(std::string_view name) const
    {
        return blobs / detail::fanout(name) / std::string(name);
    }
    /// path_of() relative to blobs/ (for blobs_fd).
    static std::string relative_path_of(std::string_view name)
    {
        return detail::fanout(name) + "/" + std::string(name);
    }

    void open();
    /// Makes every fan-out directory blobs/<xx>/ there is not yet and, with
    /// `sync`, makes their entries durable with one fsync of blobs/: a commit
    /// then neither makes one nor syncs blobs/ (unless one was removed
    /// since). A directory that cannot be made is left to the first commit
    /// into it.
    void make_fanouts();
    void recover();
    void scan();
    /// Throws Error(io_error) naming the path when the store's directory, or
    /// its blobs/ or tmp/, is gone or was replaced (removed under the running
    /// store): `what` names the operation.
    void check_directories(const std::string& what) const;
    /// The file of a Blob the index lists is missing: drops the entry when
    /// it is still `seen` (not replaced or removed meanwhile), and throws
    /// no_such_blob naming the file. The caller holds `mutex`.
    [[noreturn]] void forget_missing(const std::string& what, std::string_view name, const BlobInfo& seen,
                                     const std::filesystem::path& path);
    /// forget_missing() without the throw: true when it dropped the entry.
    bool drop_missing(std::string_view name, const BlobInfo& seen, const std::filesystem::path& path);
    /// The committed Blob `name` as the index has it, confirmed by its file
    /// (fstatat relative to blobs_fd). The directories are checked
    /// (check_directories) only when the index or the file says no, so that
    /// a removed or replaced store directory is still reported as such.
    /// A Blob whose file is missing is dropped (drop_missing). nullopt for
    /// "no such Blob" when `quiet`; otherwise no_such_blob is thrown with
    /// the index's or forget_missing()'s message. The caller holds `mutex`.
    std::optional<BlobInfo> confirm(std::string_view name, const std::string& what, bool quiet);
};

}  // namespace blobstreaming
