// Same-host files kept mapped between pulls in place (InPlaceMappings.h).
#include "InPlaceMappings.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/FileIdentity.h>
#include <blobstreaming/transporter/Log.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <sys/resource.h>
#include <sys/stat.h>

namespace blobstreaming::client {

/// A store's file open and mapped whole, with the identity it had when its
/// version was read.
struct InPlaceMappings::Kept {
    LocalRange range;
    FileIdentity identity;
};

InPlaceMappings::InPlaceMappings(std::size_t files, std::uint64_t bytes) : max_files_(files), max_bytes_(bytes)
{
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        max_files_ = std::min<std::size_t>(max_files_, static_cast<std::size_t>(limit.rlim_cur / 4));
    if (max_bytes_ == 0) max_files_ = 0;
}

bool InPlaceMappings::holds(const std::string& path) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return by_path_.count(path) > 0;
}

void InPlaceMappings::sweep()
{
    std::vector<std::shared_ptr<const Kept>> all;
    {
        const auto now = std::chrono::steady_clock::now();
        std::lock_guard<std::mutex> lock(mutex_);
        if (order_.empty() || now - swept_ < kSweepEvery) return;
        swept_ = now;
        all.assign(order_.begin(), order_.end());
    }
    for (const auto& kept : all) {
        struct stat st {};
        if (::fstat(kept->range.fd(), &st) == 0 && st.st_nlink > 0) continue;
        library_log()->debug("local file {} no longer kept mapped: it was unlinked", kept->range.file().path);
        drop(kept->range.file().path, kept.get());
    }
}

std::shared_ptr<const InPlaceMappings::Kept> InPlaceMappings::find(const LocalFile& file, const std::string& what)
{
    std::shared_ptr<const Kept> kept;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const auto it = by_path_.find(file.path);
        if (it == by_path_.end()) return nullptr;
        kept = *it->second;
        order_.splice(order_.begin(), order_, it->second);
    }
    const LocalFile& held = kept->range.file();
    const char* why = nullptr;
    struct stat st {};
    if (held.data_offset != file.data_offset || held.info.name != file.info.name || !same_version(held.info, file.info))
        why = "the store names another version";
    else if (::stat(file.path.c_str(), &st) != 0)
        why = std::strerror(errno);
    else if (FileIdentity::of(st) != kept->identity)
        why = "the file changed (its identity: device, inode, size, mtime or ctime)";
    if (!why) return kept;
    library_log()->debug("{}: local file {} no longer kept mapped: {}", what, file.path, why);
    drop(file.path, kept.get());
    return nullptr;
}

void InPlaceMappings::add(std::shared_ptr<const Kept> kept)
{
    const std::uint64_t size = kept->range.length();
    std::lock_guard<std::mutex> lock(mutex_);
    if (max_files_ == 0 || size > max_bytes_) return;
    if (const auto it = by_path_.find(kept->range.file().path); it != by_path_.end()) {
        bytes_ -= (*it->second)->range.length();
        order_.erase(it->second);
        by_path_.erase(it);
    }
    order_.push_front(std::move(kept));
    by_path_.emplace(order_.front()->range.file().path, order_.begin());
    bytes_ += size;
    while (order_.size() > max_files_ || bytes_ > max_bytes_) {
        bytes_ -= order_.back()->range.length();
        by_path_.erase(order_.back()->range.file().path);
        order_.pop_back();
    }
}

void InPlaceMappings::drop(const std::string& path, const Kept* only)
{
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = by_path_.find(path);
    if (it == by_path_.end() || (only && it->second->get() != only)) return;
    bytes_ -= (*it->second)->range.length();
    order_.erase(it->second);
    by_path_.erase(it);
}

std::shared_ptr<const InPlaceBlob> InPlaceMappings::reuse(const LocalFile& file, bool verify, const std::string& what,
                                                          const Progress& progress)
{
    if (max_files_ == 0) return nullptr;
    sweep();
    std::shared_ptr<const Kept> kept = find(file, what);
    if (!kept) return nullptr;
    try {
        // The checksum over the bytes on every pull, as on the first.
        verify_in_place(kept->range, verify, what, progress, false);
    } catch (const Error& e) {
        if (e.code() != Errc::digest_mismatch) throw;
        // Opened again as on a first pull (which fails the same way if the
        // file still holds these bytes).
        library_log()->debug("{}; mapping {} again", e.what(), file.path);
        drop(file.path, kept.get());
        return nullptr;
    }
    return in_place_blob(kept, kept->range);
}

std::shared_ptr<const InPlaceBlob> InPlaceMappings::keep(LocalRange range, const timespec& opened, bool verify,
                                                         const std::string& what, const Progress& progress)
{
    sweep();
    struct stat st {};
    const bool settled = max_files_ > 0 && range.length() <= max_bytes_ && ::fstat(range.fd(), &st) == 0 &&
                         identity_settled(st, opened);
    if (!settled) return keep_in_place(std::move(range), verify, what, progress);
    verify_in_place(range, verify, what, progress, true);
    auto kept = std::make_shared<Kept>(Kept{std::move(range), FileIdentity::of(st)});
    add(kept);
    return in_place_blob(kept, kept->range);
}

}  // namespace blobstreaming::client
