#pragma once
/// FileStore's shared state: the directory layout (blobs/<fan-out>/<name>,
/// tmp/), the lock, the index of committed Blobs and open reservations, and
/// opening: recovery of a crashed process's reservations and the scan that
/// rebuilds the index. Shared by the store and its reservations.

#include "FileSystem.h"
#include "SpareFile.h"
#include "StoreIndex.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/common/UniqueFd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace blobstreaming {

namespace detail {

/// The fan-out sub-directory of blob `name` ("00" to "ff").
std::string fanout(std::string_view name);

/// A file store's index entries carry nothing beyond the BlobInfo.
struct NoExtra {};

}  // namespace detail

struct FileStore::State {
    std::filesystem::path root;
    std::filesystem::path blobs;
    std::filesystem::path tmp;
    bool sync;
    UniqueFd lock_fd;
    dev_t root_dev = 0;  ///< identity of `root` when opened: a directory put
    ino_t root_ino = 0;  ///< in its place later is not this store
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
    detail::StoreIndex<detail::NoExtra> index;
    /// Bytes that open reservations on a file system without fallocate will
    /// still write (guarded by `mutex`): the free space they are counting on.
    std::uint64_t promised = 0;
    /// fsyncs of blobs/<fan-out>/ after renames and unlinks, shared by
    /// concurrent commits and removals.
    detail::DirectorySync directory_sync;
    /// The next reservation's file, created ahead in tmp/ (SpareFile.h).
    detail::SpareFile spare{tmp};

    State(const std::filesystem::path& dir, const Options& o)
        : root(dir), blobs(dir / "blobs"), tmp(dir / "tmp"), sync(o.sync), index(o.capacity)
    {}

    std::filesystem::path path_of(std::string_view name) const
    {
        return blobs / detail::fanout(name) / std::string(name);
    }

    void open();
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
};

}  // namespace blobstreaming
