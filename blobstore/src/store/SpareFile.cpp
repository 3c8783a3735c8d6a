/// SpareFile (SpareFile.h): an unnamed file created ahead by a helper thread,
/// linked into place when a reservation takes it.
#include "SpareFile.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace blobstreaming::detail {

SpareFile::SpareFile(std::filesystem::path dir) : dir_(std::move(dir)) {}

SpareFile::~SpareFile()
{
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

UniqueFd SpareFile::take(const std::filesystem::path& path)
{
    UniqueFd fd;
    {
        std::lock_guard lock(mutex_);
        if (unsupported_ || stop_) return {};
        fd = std::move(spare_);
        wanted_ = true;
        if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    }
    wake_.notify_one();
    if (!fd) return {};
    // An unnamed file is linked by its /proc path (AT_EMPTY_PATH would need
    // CAP_DAC_READ_SEARCH). A failure (no /proc, the directory replaced by
    // one on another file system) leaves the caller to create the file.
    const std::string self = "/proc/self/fd/" + std::to_string(fd.get());
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) != 0) {
        spdlog::debug("file store: cannot link the reservation file created ahead as {}: {}", path.string(),
                      std::strerror(errno));
        return {};
    }
    std::lock_guard lock(mutex_);
    ++taken_;
    return fd;
}

std::uint64_t SpareFile::taken() const
{
    std::lock_guard lock(mutex_);
    return taken_;
}

bool SpareFile::ready() const
{
    std::lock_guard lock(mutex_);
    return static_cast<bool>(spare_);
}

void SpareFile::run()
{
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return stop_ || (wanted_ && !spare_); });
        if (stop_) return;
        wanted_ = false;
        lock.unlock();
        UniqueFd fd(::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0644));
        const int err = fd ? 0 : errno;
        lock.lock();
        if (fd) {
            spare_ = std::move(fd);
        } else if (err == EOPNOTSUPP || err == EISDIR || err == EINVAL) {
            // No O_TMPFILE here (EISDIR: a kernel that does not know it).
            spdlog::info("file store {}: reservation files are created on demand (no O_TMPFILE: {})", dir_.string(),
                         std::strerror(err));
            unsupported_ = true;
            return;
        }
        // Any other failure (no inode left, tmp/ removed): none ready; the
        // next take() asks again and its caller meets the error itself.
    }
}

}  // namespace blobstreaming::detail
