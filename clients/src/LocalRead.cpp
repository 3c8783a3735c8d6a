#include "LocalRead.h"
#include "UserCallback.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Sha256.h>

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
    range.map_ = MappedRegion::of_file(range.fd_.get(), file.data_offset + offset, static_cast<std::size_t>(length),
                                       MappedRegion::Access::read, ec);
    if (ec) throw Error(Errc::io_error, what + ": cannot map " + file.path + ": " + ec.message());
    range.map_.advise(MADV_SEQUENTIAL);
    return range;
}

std::uint64_t copy_local(const LocalRange& range, Sink& sink, bool verify, const std::string& what,
                         const Progress& progress)
{
    const std::uint64_t length = range.length();
    const BlobInfo& info = range.file().info;
    sink.open(length);
    const bool whole = verify && range.offset() == 0 && length == info.size;
    Sha256 hash;
    std::uint64_t done = 0;
    while (done < length) {
        auto [window, room] = sink.window();
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(room, length - done));
        std::memcpy(window, range.data() + done, n);
        if (whole) hash.update(range.data() + done, n);
        sink.commit(n);
        done += n;
        if (progress) call_user("progress callback", what, progress, done, length);
    }
    if (whole) {
        const Digest read = hash.finish();
        if (read != info.digest)
            throw Error(Errc::digest_mismatch, what + ": the " + std::to_string(length) + " bytes of local file " +
                                                   range.file().path + " have SHA-256 " + to_hex(read) +
                                                   ", not the Blob's SHA-256 " + to_hex(info.digest) +
                                                   "; nothing was kept");
    }
    sink.finish();
    return done;
}

}  // namespace blobstreaming::client
