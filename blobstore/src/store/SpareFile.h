#pragma once
/// A reservation file created ahead of the reservation that will use it.
/// Creating a file costs the file system an inode, which on ext4 with many
/// recently deleted files means scanning for a free one (0.1-0.7 ms here,
/// most of a small push's reservation round trip): a helper thread creates
/// the next file while the current one is being filled, so that reserve()
/// only names it. The file is unnamed until taken (O_TMPFILE): nothing shows
/// in tmp/ and a crash leaves nothing behind. Where the file system has no
/// O_TMPFILE, or creating one fails, take() returns nothing and the caller
/// creates its file itself, with its own errors, as without a spare.

#include <blobstreaming/common/UniqueFd.h>

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <thread>

namespace blobstreaming::detail {

class SpareFile {
public:
    explicit SpareFile(std::filesystem::path dir);
    /// Stops the helper; an untaken file goes with its descriptor.
    ~SpareFile();
    SpareFile(const SpareFile&) = delete;
    SpareFile& operator=(const SpareFile&) = delete;

    /// Links the file created ahead at `path` (in the directory given to the
    /// constructor) and returns its descriptor, open for reading and
    /// writing; an empty UniqueFd when none is ready or it cannot be linked
    /// there. Either way the helper starts on the next one.
    UniqueFd take(const std::filesystem::path& path);

    /// Files taken (linked) so far, for tests and logs.
    std::uint64_t taken() const;
    /// Whether a file is ready for the next take() (tests).
    bool ready() const;

private:
    void run();

    const std::filesystem::path dir_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    UniqueFd spare_;
    bool wanted_ = false;       ///< the helper should create one
    bool unsupported_ = false;  ///< O_TMPFILE refused: never again
    bool stop_ = false;
    std::uint64_t taken_ = 0;
    std::thread thread_;  ///< started by the first take()
};

}  // namespace blobstreaming::detail
