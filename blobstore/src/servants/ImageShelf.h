#pragma once
/// Sealed in-memory images of committed Blobs, made for the memory stores of
/// this host (BlobStore::shareImage). A memory store that fetches a Blob
/// from a FileStore of its host maps the image instead of copying the
/// file's bytes into memory of its own: a study precached to several memory
/// stores is read from the file once and held in memory once.
///
/// An image is a memfd the size of the Blob, filled from the Blob's file
/// with sendfile(2) (no user-space copy, no mapping of the file: a file
/// truncated behind the daemon's back ends the copy with an error, never a
/// SIGBUS), then sealed (F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE,
/// F_SEAL_SEAL): nobody can change or shorten it, so the stores that map it
/// can never fault on it, and each verifies its bytes against the Blob's
/// checksum before committing. The shelf keeps an image for kKeep after its
/// last request (the destinations of one copy ask within milliseconds of
/// each other), at most kMaxBytes in all, the least recently asked for
/// dropped first; images over kMaxImage are not made (the destination reads
/// the file). Dropping an image closes the shelf's descriptor: the pages
/// stay as long as a store maps them.

#include <blobstreaming/blobstore/Store.h>
#include <blobstreaming/common/UniqueFd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>

namespace blobstreaming::corba {

class ImageShelf {
public:
    static constexpr std::uint64_t kMaxBytes = std::uint64_t{256} << 20;
    static constexpr std::uint64_t kMaxImage = std::uint64_t{64} << 20;
    static constexpr std::chrono::seconds kKeep{10};

    struct Image {
        int fd = -1;              ///< the shelf's descriptor (valid while kept)
        std::uint64_t inode = 0;  ///< of the memfd
        BlobInfo info;
    };

    /// The image of the Blob in `file` (Store::local_file: its path, data
    /// offset and version), kept from a recent request or made now; a
    /// request for an image being made waits for it. nullopt when the Blob
    /// is empty or over kMaxImage, or when the images asked for within
    /// kKeep fill kMaxBytes. Throws Error (io_error, blob_changed) naming the
    /// file when it cannot be read or no longer holds that version.
    std::optional<Image> image_of(const Store::LocalFile& file);

private:
    struct Entry {
        std::string key;
        UniqueFd fd;
        std::uint64_t inode = 0;
        BlobInfo info;
        bool ready = false;  ///< false while the first request makes it
        std::chrono::steady_clock::time_point last_asked;
    };

    /// Drops images not asked for within kKeep, then the least recently
    /// asked-for ready ones until `room` more bytes fit. Under mutex_.
    bool make_room(std::uint64_t room, std::chrono::steady_clock::time_point now);
    static UniqueFd make(const Store::LocalFile& file, std::uint64_t& inode);

    mutable std::mutex mutex_;
    std::condition_variable made_;
    std::list<Entry> entries_;  ///< most recently asked for first
    std::uint64_t bytes_ = 0;
};

}  // namespace blobstreaming::corba
