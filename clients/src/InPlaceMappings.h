#pragma once
/// The store files that same-host whole-Blob pulls in place served lately,
/// kept open and mapped (SessionOptions::kept_mappings): a pull of the same
/// version again verifies the bytes over the existing mapping instead of
/// opening the file, reading its header, mapping it, populating the page
/// tables and unmapping it afterwards. What stays the same on every pull:
/// the whole Blob's checksum is computed over the bytes and compared with
/// the version's (PullOptions::verify); only the work of reaching the bytes
/// is saved.
///
/// A kept mapping is reused only when the store named the same file
/// (path, data offset) for the same version (same_version) and one stat of
/// the path shows the identity the file had when it was opened and its
/// version read (FileIdentity: device, inode, size, mtime, ctime), that
/// identity having been taken after the file had settled
/// (identity_settled). Any difference, a checksum that no longer matches,
/// a file gone: the entry is dropped and the pull opens the file as a
/// first pull does (LocalRead.h). The least recently served are dropped
/// beyond the bounds (files, bytes of mappings; the files at most a
/// quarter of RLIMIT_NOFILE's soft limit), and those whose file was
/// unlinked (kSweepEvery). Any thread.

#include "DataPlane.h"
#include "LocalRead.h"
#include "Streams.h"

#include <blobstreaming/client/InPlace.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <ctime>

namespace blobstreaming::client {

class InPlaceMappings {
public:
    /// At most `files` files and `bytes` bytes of mappings kept; 0 keeps none.
    InPlaceMappings(std::size_t files, std::uint64_t bytes);

    /// The whole Blob of `file` from its kept mapping, verified when
    /// `verify`; nullptr when none is kept for it, or the kept one no
    /// longer holds it (dropped): open it then (open_local) and hand it to
    /// keep(). Throws what `progress` throws.
    std::shared_ptr<const InPlaceBlob> reuse(const LocalFile& file, bool verify, const std::string& what,
                                             const Progress& progress);
    /// What keep_in_place() does with `range` (the whole Blob, opened after
    /// `opened`: realtime_now() read before open_local()), and keeps it
    /// when its file had settled by then and the bounds allow. Throws what
    /// keep_in_place() throws (nothing kept then).
    std::shared_ptr<const InPlaceBlob> keep(LocalRange range, const timespec& opened, bool verify,
                                            const std::string& what, const Progress& progress);

    /// Whether a mapping of the file at `path` is kept (of whichever
    /// version: reuse() decides).
    bool holds(const std::string& path) const;

    /// reuse() and keep() look at every kept file at most this often and
    /// drop those unlinked (their Blob replaced or removed): their disk
    /// space is not held longer than that after the next pull in place.
    static constexpr std::chrono::seconds kSweepEvery{1};

private:
    struct Kept;
    using Order = std::list<std::shared_ptr<const Kept>>;
    /// The kept entry of `file`'s path, if it still holds `file`; dropped otherwise.
    std::shared_ptr<const Kept> find(const LocalFile& file, const std::string& what);
    void add(std::shared_ptr<const Kept> kept);
    void drop(const std::string& path, const Kept* only = nullptr);
    /// Drops the kept files no longer linked, at most every kSweepEvery.
    void sweep();

    std::size_t max_files_;
    std::uint64_t max_bytes_;
    mutable std::mutex mutex_;
    Order order_;  ///< most recently served first
    std::map<std::string, Order::iterator> by_path_;
    std::uint64_t bytes_ = 0;
    std::chrono::steady_clock::time_point swept_{};
};

}  // namespace blobstreaming::client
