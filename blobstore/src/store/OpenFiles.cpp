/// A FileStore's recently read Blob files (OpenFiles.h).
#include "OpenFiles.h"

#include <blobstreaming/blobstore/FileStore.h>

#include <algorithm>
#include <ctime>

#include <sys/resource.h>

namespace blobstreaming::detail {

namespace {

bool same_time(const timespec& a, const timespec& b) noexcept { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

}  // namespace

FileIdentity FileIdentity::of(const struct stat& st) noexcept
{
    return {st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
}

bool FileIdentity::operator==(const FileIdentity& other) const noexcept
{
    return dev == other.dev && ino == other.ino && size == other.size && same_time(mtime, other.mtime) &&
           same_time(ctime, other.ctime);
}

const std::uint8_t* OpenFile::bytes() const noexcept
{
    std::call_once(mapped_once_, [this] {
        mapped_ =
            MappedRegion::of_file(fd.get(), FileStore::kHeaderSize, static_cast<std::size_t>(info.size), map_error);
        mapped_done_.store(mapped_.data() != nullptr, std::memory_order_release);
    });
    return mapped_.data();
}

OpenFiles::OpenFiles(std::size_t capacity) : capacity_(capacity)
{
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        capacity_ = std::min<std::size_t>(capacity_, static_cast<std::size_t>(limit.rlim_cur / 16));
}

std::shared_ptr<const OpenFile> OpenFiles::find(std::string_view name, const BlobInfo& version)
{
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) return nullptr;
    const auto& file = it->second->second;
    if (!same_version(file->info, version)) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return file;
}

bool OpenFiles::keep(std::string_view name, std::shared_ptr<const OpenFile> file)
{
    if (capacity_ == 0) return false;
    erase(name);
    order_.emplace_front(std::string(name), std::move(file));
    by_name_.emplace(order_.front().first, order_.begin());
    while (order_.size() > capacity_) {
        by_name_.erase(order_.back().first);
        order_.pop_back();
    }
    return true;
}

void OpenFiles::erase(std::string_view name, const OpenFile* file) noexcept
{
    const auto it = by_name_.find(name);
    if (it == by_name_.end() || (file && it->second->second.get() != file)) return;
    order_.erase(it->second);
    by_name_.erase(it);
}

std::size_t OpenFiles::clear() noexcept
{
    std::size_t closed = 0;
    for (const auto& [name, file] : order_) closed += file.use_count() == 1 ? 1 : 0;
    by_name_.clear();
    order_.clear();
    return closed;
}

std::chrono::nanoseconds OpenFiles::settle_time(const struct stat& st) noexcept
{
    using std::chrono::milliseconds;
    using std::chrono::nanoseconds;
    if (st.st_ctim.tv_nsec % 1'000'000 == 0) return std::chrono::seconds(3);
    static const nanoseconds tick = [] {
        timespec res{};
        if (::clock_getres(CLOCK_REALTIME_COARSE, &res) != 0) return nanoseconds(milliseconds(10));
        return nanoseconds(static_cast<std::int64_t>(res.tv_sec) * 1'000'000'000 + res.tv_nsec);
    }();
    return std::max<nanoseconds>(2 * tick, milliseconds(2));
}

timespec OpenFiles::now() noexcept
{
    timespec t{};
    ::clock_gettime(CLOCK_REALTIME, &t);
    return t;
}

bool OpenFiles::settled(const struct stat& st, const timespec& taken) noexcept
{
    const auto ns = [](const timespec& t) {
        return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + static_cast<std::int64_t>(t.tv_nsec);
    };
    return ns(taken) - ns(st.st_ctim) > settle_time(st).count();
}

}  // namespace blobstreaming::detail
