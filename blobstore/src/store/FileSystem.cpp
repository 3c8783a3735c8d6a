/// File system queries of the file store (FileSystem.h).
#include "FileSystem.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/UniqueFd.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace blobstreaming::detail {

bool is_no_space(int err) { return err == ENOSPC || err == EDQUOT || err == EFBIG; }

std::optional<std::uint64_t> free_bytes_of(const fs::path& dir)
{
    struct statvfs st {};
    if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
    return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}

std::string free_text(const fs::path& dir)
{
    const auto free = free_bytes_of(dir);
    return free ? std::to_string(*free) + " bytes free" : std::string("free space unknown");
}

void fsync_dir(const fs::path& dir)
{
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) throw_io_error("open directory " + dir.string(), errno);
    if (::fsync(fd.get()) != 0) throw_io_error("fsync directory " + dir.string(), errno);
}

void DirectorySync::sync(const fs::path& dir)
{
    std::unique_lock lock(mutex_);
    Directory& d = directories_[dir.string()];
    if (!d.next) d.next = std::make_shared<Batch>();
    const std::shared_ptr<Batch> mine = d.next;
    // Not done and none in flight: `mine` is still d.next, and this caller
    // runs it for everyone who joined it.
    while (!mine->done) {
        if (d.in_flight) {
            ++waiting_;
            done_.wait(lock);
            --waiting_;
            continue;
        }
        const std::shared_ptr<Batch> batch = std::move(d.next);
        d.in_flight = true;
        ++count_;
        lock.unlock();
        std::optional<std::string> error;
        try {
            fsync_(dir);
        } catch (const std::exception& e) {
            error = e.what();
        }
        lock.lock();
        batch->error = std::move(error);
        batch->done = true;
        d.in_flight = false;
        done_.notify_all();
    }
    if (mine->error) throw Error(Errc::io_error, *mine->error);
}

std::uint64_t DirectorySync::count() const
{
    std::lock_guard lock(mutex_);
    return count_;
}

std::size_t DirectorySync::waiting() const
{
    std::lock_guard lock(mutex_);
    return waiting_;
}

void Writeback::written(int fd, std::uint64_t end) noexcept
{
    while (end - started_ >= kStep) {
        ::sync_file_range(fd, static_cast<off_t>(started_), static_cast<off_t>(kStep), SYNC_FILE_RANGE_WRITE);
        if (started_ - waited_ > kStep) {
            const std::uint64_t before_previous = started_ - kStep;
            ::sync_file_range(fd, static_cast<off_t>(waited_), static_cast<off_t>(before_previous - waited_),
                              SYNC_FILE_RANGE_WAIT_BEFORE);
            waited_ = before_previous;
        }
        started_ += kStep;
    }
}

}  // namespace blobstreaming::detail
