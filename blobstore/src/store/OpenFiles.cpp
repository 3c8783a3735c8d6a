/// A FileStore's recently read Blob files (OpenFiles.h).
#include "OpenFiles.h"

#include <blobstreaming/blobstore/FileStore.h>

#include <algorithm>

#include <sys/resource.h>

namespace blobstreaming::detail {

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

}  // namespace blobstreaming::detail
