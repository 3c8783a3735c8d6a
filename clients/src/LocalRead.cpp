#include "LocalRead.h"
#include "UserCallback.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/HashPipeline.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace blobstreaming::client {

bool local_file_readable(const std::string& path) noexcept { return ::access(path.c_str(), R_OK) == 0; }

Result local_result(const std::string& store, const LocalFile& file, std::uint64_t offset)
{
    Result r;
    r.store = store;
    r.local = true;
    r.info = file.info;
    r.offset = offset;
    return r;
}

LocalRange open_local(const LocalFile& file, std::uint64_t offset, std::uint64_t length, const std::string& what)
{
    const std::uint64_t size = file.info.size;
    if (offset > size || (length != 0 && length > size - offset)) {
        // Same wording as the store's own range errors.
        const std::string end =
            length > ~std::uint64_t{0} - offset ? std::string("beyond 2^64") : std::to_string(offset + length);
        throw Error(Errc::invalid_range, what + ": range [" + std::to_string(offset) + ", " + end +
                                             ") is outside the blob of " + std::to_string(size) + " bytes");
    }
    if (length == 0) length = size - offset;
    LocalRange range;
    range.file_ = file;
    range.offset_ = offset;
    range.length_ = length;
    range.fd_.reset(::open(file.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!range.fd_)
        throw Error(Errc::io_error, what + ": cannot open local file " + file.path + ": " + std::strerror(errno));
    // The path names whatever version was committed last: read only the one
    // the store described (the file opened is one version throughout).
    std::string why;
    const auto held = FileStore::file_info(range.fd_.get(), why);
    if (!held || !same_version(*held, file.info))
        throw Error(Errc::blob_changed, what + ": local file " + file.path + " no longer holds the version of " +
                                            describe_version(file.info) + " (" +
                                            (held ? "it holds " + describe_version(*held) : why) + ")");
    struct stat st {};
    if (::fstat(range.fd_.get(), &st) != 0 ||
        static_cast<std::uint64_t>(st.st_size) < file.data_offset + offset + length)
        throw Error(Errc::io_error, what + ": local file " + file.path + " is shorter than the Blob");
    if (length == 0) return range;
    std::error_code ec;
    range.map_ =
        MappedRegion::of_file(range.fd_.get(), file.data_offset + offset, static_cast<std::size_t>(length), ec);
    if (ec) throw Error(Errc::io_error, what + ": cannot map " + file.path + ": " + ec.message());
    range.map_.advise(MADV_SEQUENTIAL);
    return range;
}

namespace {

/// Reads exactly `n` bytes of `fd` at `offset` into `out`. Throws
/// Errc::io_error (a read error, or the file ended early).
void read_exact(const LocalRange& range, std::uint64_t offset, std::uint8_t* out, std::size_t n,
                const std::string& what)
{
    std::size_t done = 0;
    while (done < n) {
        const ssize_t r = ::pread(range.fd(), out + done, n - done, static_cast<off_t>(offset + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            throw Error(Errc::io_error, what + ": cannot read local file " + range.file().path + ": " +
                                            (r < 0 ? std::strerror(errno) : "it ended early"));
        done += static_cast<std::size_t>(r);
    }
}

/// Maps the page tables of [data, data + n) of a file mapping in one call
/// (MADV_POPULATE_READ, Linux 5.14): reading it then takes no page fault
/// per 4 KiB. Best effort: an older kernel just faults as before.
void populate(const std::uint8_t* data, std::size_t n) noexcept
{
#ifdef MADV_POPULATE_READ
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto start = reinterpret_cast<std::uintptr_t>(data) & ~(page - 1);
    const auto end = reinterpret_cast<std::uintptr_t>(data) + n;
    ::madvise(reinterpret_cast<void*>(start), end - start, MADV_POPULATE_READ);
#else
    (void)data;
    (void)n;
#endif
}

/// Throws Errc::digest_mismatch unless `read` (of the whole Blob in
/// `range`) is the Blob's checksum.
void check_whole(const Checksum& read, const LocalRange& range, const std::string& what)
{
    const BlobInfo& info = range.file().info;
    if (read != info.checksum)
        throw Error(Errc::digest_mismatch, what + ": the " + std::to_string(range.length()) + " bytes of local file " +
                                               range.file().path + " have checksum " + read.text() +
                                               ", not the Blob's " + info.checksum.text() + "; nothing was kept");
}

/// A LocalRange handed over in place: `owner` keeps it (its descriptor and
/// mapping) until the last holder lets go.
class RangeBlob final : public InPlaceBlob {
public:
    RangeBlob(std::shared_ptr<const void> owner, const LocalRange& range) : owner_(std::move(owner)), range_(range) {}
    const std::uint8_t* data() const noexcept override { return range_.data(); }
    std::size_t size() const noexcept override { return static_cast<std::size_t>(range_.length()); }
    int fd() const noexcept override { return range_.fd(); }
    std::uint64_t file_offset() const noexcept override { return range_.file().data_offset + range_.offset(); }
    const std::string& path() const noexcept override { return range_.file().path; }

private:
    std::shared_ptr<const void> owner_;
    const LocalRange& range_;
};

}  // namespace

void verify_in_place(const LocalRange& range, bool verify, const std::string& what, const Progress& progress,
                     bool populate_first)
{
    const std::uint64_t length = range.length();
    if (verify && range.offset() == 0 && length == range.file().info.size) {
        // Inline, slice by slice from the mapping (its page tables
        // populated first when it is new): nothing else runs meanwhile to
        // overlap with.
        HashPipeline hash;
        hash.reset(ChecksumState(range.file().info.checksum.algorithm));
        for (std::uint64_t done = 0; done < length;) {
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kLocalSlice, length - done));
            if (populate_first) populate(range.data() + done, n);
            hash.update(range.data() + done, n);
            done += n;
        }
        check_whole(hash.finish(), range, what);
    }
    if (progress) call_user("progress callback", what, progress, length, length);
}

std::shared_ptr<const InPlaceBlob> keep_in_place(LocalRange range, bool verify, const std::string& what,
                                                 const Progress& progress)
{
    verify_in_place(range, verify, what, progress, true);
    auto owned = std::make_shared<const LocalRange>(std::move(range));
    return in_place_blob(owned, *owned);
}

std::shared_ptr<const InPlaceBlob> in_place_blob(std::shared_ptr<const void> owner, const LocalRange& range)
{
    return std::make_shared<RangeBlob>(std::move(owner), range);
}

std::uint64_t copy_local(const LocalRange& range, Sink& sink, bool verify, const std::string& what,
                         const Progress& progress)
{
    const std::uint64_t length = range.length();
    const BlobInfo& info = range.file().info;
    sink.open(length);
    const bool whole = verify && range.offset() == 0 && length == info.size;
    // The mapping stays until this returns, and `hash` (declared after the
    // range it reads) stops its helper first on every way out.
    HashPipeline hash;
    hash.reset(ChecksumState(info.checksum.algorithm));
    // SHA-256 runs behind the copy on a helper thread, over the mapping.
    // CRC32C follows the copy slice by slice: from the sink's window where
    // the bytes were just read (hot in cache), else from the mapping with
    // its page tables populated in one call.
    const bool by_slice = whole && info.checksum.algorithm != ChecksumAlgorithm::sha256;
    if (whole && !by_slice) {
        if (length >= HashPipeline::kBackgroundFrom) hash.run_in_background();
        hash.update(range.data(), static_cast<std::size_t>(length));
    }
    const std::uint64_t base = range.file().data_offset + range.offset();
    std::uint64_t done = 0;
    while (done < length) {
        auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kLocalSlice, length - done));
        if (const std::size_t moved = sink.copy_from_file(range.fd(), base + done, n); moved > 0) {
            n = moved;
            if (by_slice) {
                populate(range.data() + done, n);
                hash.update(range.data() + done, n);
            }
        } else {
            auto [window, room] = sink.window();
            n = std::min(n, room);
            read_exact(range, base + done, window, n, what);
            if (by_slice) hash.update(window, n);
            sink.commit(n);
        }
        done += n;
        if (progress) call_user("progress callback", what, progress, done, length);
    }
    if (whole) check_whole(hash.finish(), range, what);
    sink.finish();
    return done;
}

}  // namespace blobstreaming::client
