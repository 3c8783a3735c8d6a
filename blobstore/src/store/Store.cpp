#include <blobstreaming/blobstore/Store.h>

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <blobstreaming/common/Checksum.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

namespace blobstreaming {

std::optional<Store::LocalFile> Store::local_file(std::string_view name) const
{
    stat(name);
    return std::nullopt;
}

std::optional<BlobInfo> Store::find(std::string_view name) const
{
    try {
        return stat(name);
    } catch (const Error& e) {
        if (e.code() == Errc::no_such_blob) return std::nullopt;
        throw;
    }
}

BlobRange Store::read_at(std::string_view name, std::uint64_t offset, std::uint64_t length) const
{
    if (length > std::numeric_limits<std::uint64_t>::max() - offset) {
        validate_blob_name(name);
        throw Error(Errc::invalid_range, "read " + quote_name(name) + ": offset " + std::to_string(offset) +
                                             " + length " + std::to_string(length) + " overflows 64 bits");
    }
    return read(name, offset, offset + length);
}

BlobRange Store::read_all(std::string_view name) const { return read(name, 0, kToEnd); }

BlobInfo Store::verify(std::string_view name) const
{
    const BlobRange range = read_all(name);
    ChecksumState hash(range.blob().checksum.algorithm);
    if (range.fd() >= 0) {
        constexpr std::size_t kBuffer = 1 << 20;
        std::vector<std::uint8_t> buffer(static_cast<std::size_t>(std::min<std::uint64_t>(range.size(), kBuffer)));
        std::uint64_t done = 0;
        while (done < range.size()) {
            const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), range.size() - done));
            const ssize_t n = ::pread(range.fd(), buffer.data(), want, static_cast<off_t>(range.file_offset() + done));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                const int err = errno;
                // Name the file: /proc/self/fd/N links to it.
                char path[4096] = {};
                const std::string link = "/proc/self/fd/" + std::to_string(range.fd());
                const ssize_t len = ::readlink(link.c_str(), path, sizeof path - 1);
                throw_io_error("verify " + quote_name(name) + ": read " +
                                   (len > 0 ? std::string(path, static_cast<std::size_t>(len)) : link) + " at byte " +
                                   std::to_string(done),
                               err);
            }
            if (n == 0)
                throw Error(Errc::corrupt, "verify " + quote_name(name) + ": the stored file ends after " +
                                               std::to_string(done) + " of " + std::to_string(range.size()) + " bytes");
            hash.update(buffer.data(), static_cast<std::size_t>(n));
            done += static_cast<std::uint64_t>(n);
        }
    } else if (range.reader() && range.size() > 0) {
        constexpr std::size_t kBuffer = 1 << 20;
        std::vector<std::uint8_t> buffer(static_cast<std::size_t>(std::min<std::uint64_t>(range.size(), kBuffer)));
        for (std::uint64_t done = 0; done < range.size();) {
            const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), range.size() - done));
            std::error_code ec;
            const std::size_t n = range.reader()->read(range.start() + done, buffer.data(), want, ec);
            if (ec) {
                const auto code = ec.category() == error_category() ? static_cast<Errc>(ec.value()) : Errc::io_error;
                throw Error(code, "verify " + quote_name(name) + ": " + range.reader()->error_message());
            }
            hash.update(buffer.data(), n);
            done += n;
        }
    } else if (range.size() > 0) {
        hash.update(range.data(), static_cast<std::size_t>(range.size()));
    }
    const Checksum actual = hash.finish();
    if (actual != range.blob().checksum)
        throw Error(Errc::corrupt, "verify " + quote_name(name) + ": the " + std::to_string(range.size()) +
                                       " stored bytes have checksum " + actual.text() +
                                       ", recorded at commit: " + range.blob().checksum.text());
    return range.blob();
}

}  // namespace blobstreaming
