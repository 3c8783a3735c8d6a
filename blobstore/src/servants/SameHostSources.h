#pragma once
/// A source store on this host, read without its data port: its committed
/// file (findGrantedFile, then pread) or, for a store that adopts images,
/// its sealed in-memory image (shareGrantedImages, then a mapping of
/// /proc/PID/fd/FD). Each is asked for with the fetch's grant and checked
/// against the granted version; when neither is offered or usable, the
/// source's data port serves the grant (Fetcher). Thread-safe.

#include "Grant.h"

#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/MappedRegion.h>
#include <blobstreaming/common/UniqueFd.h>

#include <BlobStreaming.hh>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::corba {

class SameHostSources {
public:
    /// `call_timeout` bounds each call to a source.
    explicit SameHostSources(std::chrono::milliseconds call_timeout);

    /// The source's committed file of the grant's Blob, opened, when the
    /// source is on this host and offers it (findGrantedFile) and it still
    /// holds the granted version; nullopt otherwise (the data port serves).
    /// Throws what findGrantedFile raises (the grant refused, ...), as
    /// Error naming `what`.
    struct File {
        UniqueFd fd;
        std::string path;
        std::uint64_t data_offset = 0;
        BlobInfo info;
    };
    std::optional<File> file(const Grant& grant, const std::string& what);

    /// The source's sealed image of the grant's Blob (shareGrantedImages),
    /// opened through /proc/PID/fd/FD and mapped read-only, when the source
    /// is on this host, offers its files and made one, and the descriptor
    /// opened is that image (its inode), sealed against any change, of the
    /// Blob's size and version; nullopt otherwise (its file or the data
    /// port serves). Throws what shareGrantedImages raises.
    struct Image {
        std::shared_ptr<const std::uint8_t> bytes;
        BlobInfo info;
    };
    std::optional<Image> image(const Grant& grant, const std::string& what);

    /// Asks the source of `grants` (all of one source) for its images of
    /// their Blobs in one call (shareGrantedImages): image() of those grants
    /// within a few seconds uses them instead of asking one by one. Errors
    /// only log: each image() then asks for itself.
    void prepare_images(const std::vector<Grant>& grants);

private:
    /// An image a source described (shareGrantedImages).
    struct ImageRef {
        std::string host;
        std::uint64_t pid = 0;
        long fd = -1;
        std::uint64_t inode = 0;
        BlobInfo info;
    };
    static ImageRef image_ref(const BlobStreaming::SharedImage& image, const std::string& what);
    /// Whether `source` (control endpoint `key`) offers its files to this
    /// host: its status, asked at most once a minute (offers_).
    bool offers_files(BlobStreaming::BlobStore_ptr source, const std::string& key);
    /// Whether images of `source` (control endpoint `key`) may be opened
    /// here: it offers its files to this host, and opening one was not
    /// refused within the last minute (no_images_).
    bool images_open(BlobStreaming::BlobStore_ptr source, const std::string& key);
    /// The image prepare_images() got for `grant` (taken: used once), while
    /// fresh.
    std::optional<ImageRef> take_prepared(const Grant& grant);

    const std::chrono::milliseconds call_timeout_;
    std::mutex mutex_;
    /// Whether the source at a control endpoint offers its files to this
    /// host (StoreStatus::localFiles, same host), and until when that is
    /// taken as known: no findGrantedFile is asked of one that does not.
    struct Offer {
        bool offers = false;
        std::chrono::steady_clock::time_point until;
    };
    std::map<std::string, Offer> offers_;
    /// Sources whose images this daemon may not open (another user), until
    /// when: their files or data ports serve meanwhile.
    std::map<std::string, std::chrono::steady_clock::time_point> no_images_;
    struct Prepared {
        ImageRef image;
        std::chrono::steady_clock::time_point until;
    };
    std::map<std::string, Prepared> prepared_;  ///< grant's ticket tag -> its image (prepare_images)
};

}  // namespace blobstreaming::corba
