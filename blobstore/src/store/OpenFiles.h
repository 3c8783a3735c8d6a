#pragma once
/// A FileStore's recently read Blob files, kept open so that the next read
/// of the same version skips the open, the header's read and its checks:
/// one fstat of the open file proves it unchanged and still linked.

#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/FileIdentity.h>
#include <blobstreaming/common/MappedRegion.h>
#include <blobstreaming/common/UniqueFd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <sys/stat.h>

namespace blobstreaming::detail {

/// A committed Blob file held open: its descriptor, the Blob its header
/// named when it was checked (read_header, every check), and its identity
/// then. Shared by the cache and the views made from it: the descriptor
/// closes when the last of them lets go.
struct OpenFile {
    UniqueFd fd;
    BlobInfo info;
    FileIdentity identity;
    std::string mmap_what;  ///< "read \"NAME\": mmap PATH": a view's mapping error

    /// The Blob's bytes, mapped on the first call and shared by every view
    /// of this file (nullptr when the mapping failed: `map_error`).
    const std::uint8_t* bytes() const noexcept;
    /// Whether bytes() has mapped them.
    bool mapped() const noexcept { return mapped_done_.load(std::memory_order_acquire); }
    mutable std::error_code map_error;

private:
    mutable std::once_flag mapped_once_;
    mutable MappedRegion mapped_;
    mutable std::atomic<bool> mapped_done_{false};
};

/// At most `capacity` open files by Blob name, the least recently read
/// dropped first. Not thread-safe: the FileStore's mutex guards it.
class OpenFiles {
public:
    /// How many a store keeps at most (FileStore::Options::open_files).
    static constexpr std::size_t kDefaultCapacity = 64;
    /// A file is kept only when its identity was taken a while after its
    /// last change (identity_settled, common/FileIdentity.h).

    /// `capacity` bounded by the process's descriptor limit: at most one
    /// sixteenth of RLIMIT_NOFILE's soft limit. 0 keeps none.
    explicit OpenFiles(std::size_t capacity);

    /// The open file of `name` when it holds `version` (same_version), made
    /// the most recently read; nullptr otherwise.
    std::shared_ptr<const OpenFile> find(std::string_view name, const BlobInfo& version);
    /// Keeps `file` as `name`'s (replacing any), dropping the least recently
    /// read beyond the capacity; false when the capacity is 0.
    bool keep(std::string_view name, std::shared_ptr<const OpenFile> file);
    /// Drops `name`'s, if it is `file` (or any, when `file` is null).
    void erase(std::string_view name, const OpenFile* file = nullptr) noexcept;
    /// Drops every file; returns how many descriptors closed (a view still
    /// holding one keeps it open until it goes).
    std::size_t clear() noexcept;

    std::size_t size() const noexcept { return order_.size(); }
    std::size_t capacity() const noexcept { return capacity_; }

private:
    using Order = std::list<std::pair<std::string, std::shared_ptr<const OpenFile>>>;
    std::size_t capacity_;
    Order order_;  ///< most recently read first
    std::map<std::string, Order::iterator, std::less<>> by_name_;
};

}  // namespace blobstreaming::detail
