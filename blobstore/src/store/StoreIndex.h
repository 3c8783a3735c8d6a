#pragma once
// The bookkeeping FileStore and MemoryStore share: committed Blobs by name,
// names with an open reservation, capacity accounting, and the errors those
// rules produce. Not thread-safe: the owning store holds its mutex.

#include <blobstreaming/blobstore/Store.h>
#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace blobstreaming::detail {

template <class Extra>
class StoreIndex {
public:
    struct Entry {
        BlobInfo info;
        Extra extra;
    };

    explicit StoreIndex(std::uint64_t capacity) : capacity_(capacity) {}

    std::uint64_t capacity() const { return capacity_; }
    std::uint64_t used() const { return used_; }
    std::uint64_t reserved() const { return reserved_; }
    std::uint64_t free_bytes() const
    {
        const std::uint64_t taken = used_ + reserved_;
        return taken >= capacity_ ? 0 : capacity_ - taken;
    }

    /// The entry, or throws no_such_blob (saying if a reservation is open).
    const Entry& get(std::string_view name) const
    {
        auto it = committed_.find(name);
        if (it == committed_.end()) {
            std::string msg = "blob " + quote_name(name) + " not found";
            if (reserving_.count(name)) msg += " (it is being written; it becomes visible at commit)";
            throw Error(Errc::no_such_blob, msg);
        }
        return it->second;
    }
    Entry* find(std::string_view name)
    {
        auto it = committed_.find(name);
        return it == committed_.end() ? nullptr : &it->second;
    }

    std::vector<BlobInfo> list() const
    {
        std::vector<BlobInfo> out;
        out.reserve(committed_.size());
        for (const auto& [name, entry] : committed_) out.push_back(entry.info);
        return out;
    }

    /// Checks the name's state for a new reservation (not the space).
    void check_reservable(std::string_view name, ReserveMode mode) const
    {
        if (reserving_.count(name))
            throw Error(Errc::already_exists,
                        "blob " + quote_name(name) + " is already being written by another reservation");
        if (mode == ReserveMode::create && committed_.count(name))
            throw Error(Errc::already_exists,
                        "blob " + quote_name(name) + " already exists (remove it first, or replace it)");
    }

    bool fits(std::uint64_t size) const { return capacity_ == 0 || size <= free_bytes(); }

    [[noreturn]] void throw_out_of_space(std::string_view name, std::uint64_t size) const
    {
        throw Error(Errc::out_of_space, "no room for blob " + quote_name(name) + ": need " + std::to_string(size) +
                                            " bytes, " + std::to_string(free_bytes()) + " free of capacity " +
                                            std::to_string(capacity_) + " (" + std::to_string(used_) + " used, " +
                                            std::to_string(reserved_) + " reserved)");
    }

    bool reserving(std::string_view name) const { return reserving_.count(name) > 0; }

    void open_reservation(std::string_view name, std::uint64_t size)
    {
        reserving_.emplace(name);
        reserved_ += size;
    }
    void close_reservation(const std::string& name, std::uint64_t size)
    {
        reserving_.erase(name);
        reserved_ -= size;
    }

    /// An open-ended reservation asks for up to `want` more bytes: what
    /// fits (all of them without a capacity) is counted as reserved and
    /// returned.
    std::uint64_t grow_reservation(std::uint64_t want)
    {
        const std::uint64_t got = capacity_ == 0 ? want : std::min(want, free_bytes());
        reserved_ += got;
        return got;
    }
    /// An open-ended reservation gives back `bytes` it will not fill.
    void shrink_reservation(std::uint64_t bytes) { reserved_ -= std::min(bytes, reserved_); }
    /// Why an open-ended reservation of `name` cannot grow past `received`.
    std::string full_message(std::string_view name, std::uint64_t received) const
    {
        return "no room for blob " + quote_name(name) + ": the store is full after " + std::to_string(received) +
               " bytes of a push of unknown length (capacity " + std::to_string(capacity_) + ": " +
               std::to_string(used_) + " used, " + std::to_string(reserved_) + " reserved)";
    }

    /// Adds or replaces a committed Blob; returns the replaced entry's extra
    /// through `old` when there was one.
    bool publish(Entry entry, Extra* old = nullptr)
    {
        auto it = committed_.find(entry.info.name);
        bool replaced = false;
        if (it != committed_.end()) {
            used_ -= it->second.info.size;
            if (old) *old = std::move(it->second.extra);
            committed_.erase(it);
            replaced = true;
        }
        used_ += entry.info.size;
        std::string key = entry.info.name;
        committed_.emplace(std::move(key), std::move(entry));
        return replaced;
    }

    /// Removes a committed Blob; throws no_such_blob.
    Entry erase(std::string_view name)
    {
        auto it = committed_.find(name);
        if (it == committed_.end()) get(name);  // throws the specific message
        Entry entry = std::move(it->second);
        used_ -= entry.info.size;
        committed_.erase(it);
        return entry;
    }

    std::size_t count() const { return committed_.size(); }

    StoreUsage usage() const { return {capacity_, used_, reserved_, committed_.size()}; }

private:
    std::uint64_t capacity_;
    std::uint64_t used_ = 0;
    std::uint64_t reserved_ = 0;
    std::map<std::string, Entry, std::less<>> committed_;
    std::set<std::string, std::less<>> reserving_;
};

/// Throws invalid_range unless start <= end <= size; resolves kToEnd.
inline std::uint64_t checked_end(std::string_view name, std::uint64_t size, std::uint64_t start, std::uint64_t end)
{
    if (end == Store::kToEnd) end = size;
    if (start > end || end > size)
        throw Error(Errc::invalid_range, "read " + quote_name(name) + ": range [" + std::to_string(start) + ", " +
                                             std::to_string(end) + ") is outside the blob of " + std::to_string(size) +
                                             " bytes");
    return end;
}

}  // namespace blobstreaming::detail
