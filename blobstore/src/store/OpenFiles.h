#pragma once
/// A FileStore's recently read Blob files, kept open so that the next read
/// of the same version skips the open, the header's read and its checks:
/// one fstat of the open file proves it unchanged and still linked.

#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/UniqueFd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <sys/stat.h>

namespace blobstreaming::detail {

/// A file's identity and state as one stat saw it. Any write, truncation,
/// chmod, link, unlink or rename of the file moves its ctime (a file
/// renamed over it unlinks it, so that too): a file whose identity is
/// unchanged, still linked, is the one at its path with the bytes it had
/// (once settled(): see OpenFiles).
struct FileIdentity {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    timespec mtime{};
    timespec ctime{};

    static FileIdentity of(const struct stat& st) noexcept;
    bool operator==(const FileIdentity& other) const noexcept;
};

/// A committed Blob file held open: its descriptor, the Blob its header
/// named when it was checked (read_header, every check), and its identity
/// then. Shared by the cache and the views made from it: the descriptor
/// closes when the last of them lets go.
struct OpenFile {
    UniqueFd fd;
    BlobInfo info;
    FileIdentity identity;
    std::string mmap_what;  ///< "read \"NAME\": mmap PATH": a view's mapping error
};

/// At most `capacity` open files by Blob name, the least recently read
/// dropped first. Not thread-safe: the FileStore's mutex guards it.
class OpenFiles {
public:
    /// How many a store keeps at most (FileStore::Options::open_files).
    static constexpr std::size_t kDefaultCapacity = 64;
    /// A file changed within this long of now is not kept: file systems
    /// stamp ctime from a clock that advances in ticks (1-10 ms), so a
    /// change in the same tick as the stat that is kept could leave the
    /// ctime as it was ("racy git"). Once the file's ctime is older than
    /// this when it is kept, any later change stamps a later ctime.
    static constexpr std::chrono::milliseconds kSettle{100};

    /// `capacity` bounded by the process's descriptor limit: at most one
    /// sixteenth of RLIMIT_NOFILE's soft limit. 0 keeps none.
    explicit OpenFiles(std::size_t capacity);

    /// The open file of `name` when it holds `version` (same_version), made
    /// the most recently read; nullptr otherwise.
    std::shared_ptr<const OpenFile> find(std::string_view name, const BlobInfo& version);
    /// Keeps `file` as `name`'s (replacing any), dropping the least recently
    /// read beyond the capacity.
    void keep(std::string_view name, std::shared_ptr<const OpenFile> file);
    /// Drops `name`'s, if it is `file` (or any, when `file` is null).
    void erase(std::string_view name, const OpenFile* file = nullptr) noexcept;
    /// Drops every file; returns how many descriptors closed (a view still
    /// holding one keeps it open until it goes).
    std::size_t clear() noexcept;

    std::size_t size() const noexcept { return order_.size(); }
    std::size_t capacity() const noexcept { return capacity_; }

    /// Whether a file that `st` describes may be kept (kSettle).
    static bool settled(const struct stat& st) noexcept;

private:
    using Order = std::list<std::pair<std::string, std::shared_ptr<const OpenFile>>>;
    std::size_t capacity_;
    Order order_;  ///< most recently read first
    std::map<std::string, Order::iterator, std::less<>> by_name_;
};

}  // namespace blobstreaming::detail
