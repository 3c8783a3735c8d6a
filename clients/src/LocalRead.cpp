#include "LocalRead.h"

#include <blobstreaming/blobstore/Error.h>
#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/blobstore/Sha256.h>
#include <blobstreaming/blobstore/UniqueFd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace blobstreaming::client {

bool local_file_readable(const std::string& path) noexcept { return ::access(path.c_str(), R_OK) == 0; }

std::uint64_t read_local(const LocalFile& file, std::uint64_t offset, std::uint64_t length, Sink& sink, bool verify,
                         const std::string& what, const Progress& progress)
{
    const std::uint64_t size = file.info.size;
    if (offset > size || (length != 0 && length > size - offset)) {
        // Same wording as the store's own range errors.
        const std::string end = length > ~std::uint64_t{0} - offset ? std::string("beyond 2^64")
                                                                     : std::to_string(offset + length);
        throw Error(Errc::invalid_range, what + ": range [" + std::to_string(offset) + ", " + end +
                                             ") is outside the blob of " + std::to_string(size) + " bytes");
    }
    if (length == 0) length = size - offset;
    UniqueFd fd(::open(file.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw Error(Errc::io_error, what + ": cannot open local file " + file.path + ": " + std::strerror(errno));
    // The path names whatever version was committed last: read only the one
    // the store described (the file opened is one version throughout).
    std::string why;
    const auto held = FileStore::file_info(fd.get(), why);
    if (!held || !same_version(*held, file.info))
        throw Error(Errc::blob_changed, what + ": local file " + file.path + " no longer holds the version of " +
                                            describe_version(file.info) + " (" +
                                            (held ? "it holds " + describe_version(*held) : why) + ")");
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) < file.data_offset + offset + length)
        throw Error(Errc::io_error, what + ": local file " + file.path + " is shorter than the Blob");

    sink.open(length);
    if (length == 0) {
        sink.finish();
        return 0;
    }
    const std::uint64_t start = file.data_offset + offset;
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t map_start = start - start % page;
    const auto map_length = static_cast<std::size_t>(start - map_start + length);
    void* p = ::mmap(nullptr, map_length, PROT_READ, MAP_SHARED, fd.get(), static_cast<off_t>(map_start));
    if (p == MAP_FAILED) throw Error(Errc::io_error, what + ": cannot map " + file.path + ": " + std::strerror(errno));
    std::unique_ptr<void, std::function<void(void*)>> mapping(p, [map_length](void* q) { ::munmap(q, map_length); });
    ::madvise(p, map_length, MADV_SEQUENTIAL);
    const auto* bytes = static_cast<const std::uint8_t*>(p) + (start - map_start);

    const bool whole = verify && offset == 0 && length == size;
    Sha256 hash;
    std::uint64_t done = 0;
    while (done < length) {
        auto [window, room] = sink.window();
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(room, length - done));
        std::memcpy(window, bytes + done, n);
        if (whole) hash.update(bytes + done, n);
        sink.commit(n);
        done += n;
        if (progress) progress(done, length);
    }
    if (whole) {
        const Digest read = hash.finish();
        if (read != file.info.digest)
            throw Error(Errc::digest_mismatch, what + ": the " + std::to_string(length) + " bytes of local file " +
                                                   file.path + " have SHA-256 " + to_hex(read) +
                                                   ", not the Blob's SHA-256 " + to_hex(file.info.digest) +
                                                   "; nothing was kept");
    }
    sink.finish();
    return done;
}

}  // namespace blobstreaming::client
