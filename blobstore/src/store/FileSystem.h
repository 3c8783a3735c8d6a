#pragma once
/// What the file store asks of the file system beyond open/read/write: free
/// space (and the errors that mean there is none), directory fsync shared by
/// concurrent commits, and early writeback of a file being filled.

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace blobstreaming::detail {

/// ENOSPC, EDQUOT or EFBIG: the file system (or quota) has no room.
bool is_no_space(int err);

/// Bytes a non-root writer may still allocate on the file system of `dir`.
std::optional<std::uint64_t> free_bytes_of(const std::filesystem::path& dir);

/// "N bytes free" (or "free space unknown") for the file system of `dir`.
std::string free_text(const std::filesystem::path& dir);

/// fsync of a directory, so that a rename or unlink in it survives a crash;
/// throws Error(io_error) naming it.
void fsync_dir(const std::filesystem::path& dir);

/// Directory fsyncs shared by concurrent callers (group commit): a caller
/// returns once an fsync of its directory that began after its call has
/// succeeded, so its earlier rename or unlink there is durable. Callers that
/// arrive while an fsync of the same directory is in flight wait for the
/// next one and share it; one of them (the first to find none in flight)
/// runs it, the others sleep. A failed fsync throws Error(io_error) naming
/// the directory in every caller that shared it. Any thread.
class DirectorySync {
public:
    using Fsync = std::function<void(const std::filesystem::path&)>;

    /// `fsync`: what syncs one directory (fsync_dir; tests pass their own).
    explicit DirectorySync(Fsync fsync = fsync_dir) : fsync_(std::move(fsync)) {}

    void sync(const std::filesystem::path& dir);
    /// fsync(2) calls made so far (fewer than sync() calls when shared).
    std::uint64_t count() const;
    /// Callers now waiting for an fsync that another caller runs.
    std::size_t waiting() const;

private:
    /// One fsync, shared by the callers that joined it before it began.
    struct Batch {
        bool done = false;
        std::optional<std::string> error;  ///< set when the fsync failed
    };
    struct Directory {
        std::shared_ptr<Batch> next;  ///< not begun yet: new callers join it
        bool in_flight = false;
    };

    Fsync fsync_;
    mutable std::mutex mutex_;
    std::condition_variable done_;
    std::map<std::string, Directory> directories_;  ///< at most the fan-out's 256
    std::uint64_t count_ = 0;
    std::size_t waiting_ = 0;
};

/// Starts the kernel's writeback of a file while it is being filled in
/// order, so that the fdatasync at commit finds little left to write
/// (sync_file_range(SYNC_FILE_RANGE_WRITE) per kStep bytes, as PostgreSQL's
/// *_flush_after and RocksDB's bytes_per_sync do), and waits for the step
/// before the previous one to reach the disk, so that at most two steps are
/// dirty or in flight. Not durable by itself: fdatasync is still needed.
/// Failures are ignored here (fdatasync reports them).
class Writeback {
public:
    static constexpr std::uint64_t kStep = 8u << 20;

    /// The file's bytes before `start` are not this filling's.
    explicit Writeback(std::uint64_t start = 0) noexcept : started_(start), waited_(start) {}
    /// The bytes of `fd` up to file offset `end` are written.
    void written(int fd, std::uint64_t end) noexcept;

private:
    std::uint64_t started_;  ///< writeback started for [.., started_)
    std::uint64_t waited_;   ///< written back for [.., waited_)
};

}  // namespace blobstreaming::detail
