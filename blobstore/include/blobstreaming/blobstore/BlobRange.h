#pragma once

#include <blobstreaming/blobstore/BlobReader.h>
#include <blobstreaming/common/BlobInfo.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace blobstreaming {

/// A file view's bytes, mapped into the process on the first
/// BlobRange::data() (FileStore): a view sent with `sendfile` never maps.
class LazyMapping {
public:
    virtual ~LazyMapping() = default;
    /// The bytes, mapped once; nullptr when the mapping failed (error()).
    virtual const std::uint8_t* bytes() const noexcept = 0;
    /// Why bytes() is nullptr: what was mapped and the system's reason.
    virtual std::string error() const = 0;
    /// Whether the bytes are mapped already (bytes() costs nothing): a
    /// FileStore's file kept open for its next reads.
    virtual bool mapped() const noexcept { return false; }
};

/// A read-only, zero-copy view of bytes [start, end) of one committed Blob.
///
/// The view is a consistent snapshot: it stays valid and unchanged while the
/// object lives, even if the Blob is replaced or removed meanwhile (it keeps
/// the old file or buffer alive; a streamed view reads the old version's
/// objects, which its store keeps for a grace period after the replacement
/// or removal: RadosStore::Options::grace). Copies share the same bytes.
///
/// A view has one of three forms, by where the store keeps the bytes:
/// - memory: `data()` (MemoryStore);
/// - file: `fd()` and the byte offset of `start` within it, so the data
///   plane can `sendfile` without touching `data()` (which maps pages into
///   the process only when used) (FileStore);
/// - streamed: `data()` null, `fd()` -1, and `reader()` fetches the bytes
///   piece by piece into the caller's buffer (RadosStore).
class BlobRange {
public:
    BlobRange() = default;
    BlobRange(BlobInfo info, std::uint64_t start, std::uint64_t end, std::shared_ptr<const void> keep_alive,
              const std::uint8_t* data, int fd, std::uint64_t file_offset)
        : info_(std::move(info)), start_(start), end_(end), keep_alive_(std::move(keep_alive)), data_(data), fd_(fd),
          file_offset_(file_offset)
    {}
    /// A file view whose data() maps `mapping` on first use; `keep_alive`
    /// owns it and `fd`.
    BlobRange(BlobInfo info, std::uint64_t start, std::uint64_t end, std::shared_ptr<const void> keep_alive,
              const LazyMapping* mapping, int fd, std::uint64_t file_offset)
        : info_(std::move(info)), start_(start), end_(end), keep_alive_(std::move(keep_alive)), mapping_(mapping),
          fd_(fd), file_offset_(file_offset)
    {}
    /// A streamed view: `reader` delivers bytes [start, end) of `info`.
    BlobRange(BlobInfo info, std::uint64_t start, std::uint64_t end, std::shared_ptr<BlobReader> reader)
        : info_(std::move(info)), start_(start), end_(end), reader_(std::move(reader))
    {}

    const BlobInfo& blob() const noexcept { return info_; }
    std::uint64_t start() const noexcept { return start_; }
    std::uint64_t end() const noexcept { return end_; }
    std::uint64_t size() const noexcept { return end_ - start_; }

    /// The bytes; nullptr when size() is 0, and for a streamed view. A file
    /// view maps them on the first call (nullptr if that fails:
    /// mapping_error()).
    const std::uint8_t* data() const noexcept { return data_ ? data_ : mapping_ ? mapping_->bytes() : nullptr; }
    /// Whether data() is at hand without mapping anything: a memory view,
    /// or a file view whose file is mapped already (LazyMapping::mapped).
    bool mapped() const noexcept { return data_ || (mapping_ && mapping_->mapped()); }
    /// Why data() of a file view is nullptr although size() is not 0.
    std::string mapping_error() const { return mapping_ ? mapping_->error() : std::string(); }

    /// An open descriptor of the file holding the bytes, or -1 when the view
    /// is not file-backed. Owned by the view: do not close it.
    int fd() const noexcept { return fd_; }
    /// Offset of byte `start()` in `fd()`.
    std::uint64_t file_offset() const noexcept { return file_offset_; }

    /// What streams the bytes of a view that has neither data() nor fd();
    /// nullptr otherwise. Shared by copies: one reader at a time.
    BlobReader* reader() const noexcept { return reader_.get(); }

private:
    BlobInfo info_;
    std::uint64_t start_ = 0;
    std::uint64_t end_ = 0;
    std::shared_ptr<const void> keep_alive_;
    const std::uint8_t* data_ = nullptr;
    const LazyMapping* mapping_ = nullptr;
    int fd_ = -1;
    std::uint64_t file_offset_ = 0;
    std::shared_ptr<BlobReader> reader_;
};

}  // namespace blobstreaming
