// The byte sources of a push (Streams.h): a regular file (sendfile, or
// SSL_write from its mapping), memory, and a producer callback.
#include "Streams.h"

#include "UserCallback.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/MappedRegion.h>
#include <blobstreaming/common/UniqueFd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace blobstreaming::client {

namespace {

/// sendfile(2) from the file (TLS: SSL_write from the mapping, sendfile
/// cannot encrypt); the checksum is taken from the mapping. The size is the
/// one at open: later appends are not sent; a file that shrinks fails the
/// push when the bytes it lost are due (sendfile then finds the end early).
class FileSource final : public Source {
public:
    FileSource(const std::string& path, const std::string& what) : path_(path), what_(what)
    {
        // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer
        // (and is refused below); regular files ignore it.
        fd_.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
        if (!fd_) throw Error(Errc::io_error, what + ": cannot open " + path + ": " + std::strerror(errno));
        struct stat st {};
        if (::fstat(fd_.get(), &st) != 0)
            throw Error(Errc::io_error, what + ": cannot stat " + path + ": " + std::strerror(errno));
        if (!S_ISREG(st.st_mode))
            throw Error(Errc::io_error, what + ": " + path + " is " + file_kind(st.st_mode) +
                                            ", not a regular file (stream it: a producer source, or `blob push` "
                                            "with --size)");
        size_ = static_cast<std::uint64_t>(st.st_size);
        end_ = size_;
        std::error_code ec;
        map_ = MappedRegion::of_file(fd_.get(), 0, static_cast<std::size_t>(size_), ec);
        if (ec) throw Error(Errc::io_error, what + ": " + path + ": mmap: " + ec.message());
        map_.advise(MADV_SEQUENTIAL);
    }
    std::uint64_t size() const noexcept override { return size_; }
    long send(Channel& channel, std::size_t max, HashPipeline& hash) override
    {
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(max, end_ - offset_));
        if (want == 0) return 0;
        // The mapping must not be read past the file's end (SIGBUS): TLS
        // encrypts from it, so check first; sendfile reads the file itself
        // and reports the early end as 0.
        if (channel.tls()) check_not_shrunk(offset_ + want);
        off_t off = static_cast<off_t>(offset_);
        const long n = channel.tls() ? channel.write(map_.data() + offset_, want)
                                     : ::sendfile(channel.fd(), fd_.get(), &off, want);
        if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
        if (n == 0 && !channel.tls()) {
            check_not_shrunk(size_);
            throw_shrunk(size_);  // not seen by fstat yet: sendfile knows better
        }
        hash.update(map_.data() + offset_, static_cast<std::size_t>(n));
        offset_ += static_cast<std::uint64_t>(n);
        return n;
    }
    void skip(std::uint64_t offset, ChecksumState& hash) override
    {
        check_not_shrunk(offset);
        hash.update(map_.data(), static_cast<std::size_t>(offset));
        offset_ = offset;
    }
    bool stable() const noexcept override { return true; }  // the mapped file
    bool positional() const noexcept override { return true; }
    void select(std::uint64_t offset, std::uint64_t end) override
    {
        offset_ = std::min(offset, size_);
        end_ = std::clamp(end, offset_, size_);
    }
    void hash_range(std::uint64_t offset, std::uint64_t length, ChecksumState& hash) override
    {
        check_not_shrunk(offset + length);
        hash.update(map_.data() + offset, static_cast<std::size_t>(length));
    }
    std::pair<const std::uint8_t*, std::size_t> next(std::size_t max, HashPipeline& hash) override
    {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(max, end_ - offset_));
        check_not_shrunk(offset_ + n);  // the mapping must not be read past the file's end (SIGBUS)
        const std::uint8_t* bytes = map_.data() + offset_;
        hash.update(bytes, n);
        offset_ += n;
        return {bytes, n};
    }

private:
    /// Throws Errc::io_error when the file now ends before byte `end`.
    void check_not_shrunk(std::uint64_t end) const
    {
        struct stat st {};
        if (::fstat(fd_.get(), &st) != 0)
            throw Error(Errc::io_error, what_ + ": cannot stat " + path_ + ": " + std::strerror(errno));
        if (static_cast<std::uint64_t>(st.st_size) < end) throw_shrunk(static_cast<std::uint64_t>(st.st_size));
    }
    [[noreturn]] void throw_shrunk(std::uint64_t now) const
    {
        throw Error(Errc::io_error, what_ + ": " + path_ + " shrank while it was being pushed: it has " +
                                        std::to_string(now) + " bytes, " + std::to_string(size_) +
                                        " when the push started (" + std::to_string(offset_) + " were sent)");
    }

    std::string path_;
    std::string what_;
    UniqueFd fd_;
    std::uint64_t size_ = 0;
    std::uint64_t offset_ = 0;
    std::uint64_t end_ = ~std::uint64_t{0};  ///< select(); the size until then
    MappedRegion map_;
};

long send_bytes(Channel& channel, const std::uint8_t* data, std::size_t size)
{
    const long n = channel.write(data, size);
    if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    return n;
}

class MemorySource final : public Source {
public:
    MemorySource(const std::uint8_t* data, std::uint64_t size) : data_(data), size_(size) {}
    std::uint64_t size() const noexcept override { return size_; }
    long send(Channel& channel, std::size_t max, HashPipeline& hash) override
    {
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(max, end_ - offset_));
        if (want == 0) return 0;
        const long n = send_bytes(channel, data_ + offset_, want);
        if (n > 0) {
            hash.update(data_ + offset_, static_cast<std::size_t>(n));
            offset_ += static_cast<std::uint64_t>(n);
        }
        return n;
    }
    void skip(std::uint64_t offset, ChecksumState& hash) override
    {
        hash.update(data_, static_cast<std::size_t>(offset));
        offset_ = offset;
    }
    bool stable() const noexcept override { return true; }  // the caller's buffer
    bool positional() const noexcept override { return true; }
    void select(std::uint64_t offset, std::uint64_t end) override
    {
        offset_ = std::min(offset, size_);
        end_ = std::clamp(end, offset_, size_);
    }
    void hash_range(std::uint64_t offset, std::uint64_t length, ChecksumState& hash) override
    {
        hash.update(data_ + offset, static_cast<std::size_t>(length));
    }
    std::pair<const std::uint8_t*, std::size_t> next(std::size_t max, HashPipeline& hash) override
    {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(max, end_ - offset_));
        const std::uint8_t* bytes = data_ + offset_;
        hash.update(bytes, n);
        offset_ += n;
        return {bytes, n};
    }

private:
    const std::uint8_t* data_;
    std::uint64_t size_;
    std::uint64_t offset_ = 0;
    std::uint64_t end_ = size_;
};

class ProducerSource final : public Source {
public:
    ProducerSource(std::uint64_t size, PushSource::Producer producer, std::string what)
        : size_(size), producer_(std::move(producer)), what_(std::move(what)),
          buffer_(static_cast<std::size_t>(std::min<std::uint64_t>(size, kStreamChunk)))
    {}
    std::uint64_t size() const noexcept override { return size_; }
    long send(Channel& channel, std::size_t max, HashPipeline& hash) override
    {
        if (begin_ == end_) {
            end_ = produce(buffer_.size());
            hash.update(buffer_.data(), end_);
            begin_ = 0;
        }
        const long n = send_bytes(channel, buffer_.data() + begin_, std::min(max, end_ - begin_));
        if (n > 0) begin_ += static_cast<std::size_t>(n);
        return n;
    }
    /// The producer has no random access: the bytes before `offset` are
    /// produced again and only hashed.
    void skip(std::uint64_t offset, ChecksumState& hash) override
    {
        while (produced_ < offset) {
            const std::size_t got =
                produce(static_cast<std::size_t>(std::min<std::uint64_t>(buffer_.size(), offset - produced_)));
            hash.update(buffer_.data(), got);
        }
    }
    std::pair<const std::uint8_t*, std::size_t> next(std::size_t max, HashPipeline& hash) override
    {
        if (begin_ == end_) {
            end_ = produce(std::min(max, buffer_.size()));
            hash.update(buffer_.data(), end_);
            begin_ = 0;
        }
        const std::size_t n = std::min(max, end_ - begin_);
        const std::uint8_t* bytes = buffer_.data() + begin_;
        begin_ += n;
        return {bytes, n};
    }

private:
    /// Fills the buffer with up to `limit` next bytes.
    std::size_t produce(std::size_t limit)
    {
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(limit, size_ - produced_));
        const std::size_t got = call_user("producer", what_, producer_, buffer_.data(), want);
        if (got == 0 || got > want)
            throw Error(Errc::io_error, what_ + ": the producer returned " + std::to_string(got) + " bytes after " +
                                            std::to_string(produced_) + " of " + std::to_string(size_) +
                                            " (asked for up to " + std::to_string(want) + ")");
        produced_ += got;
        return got;
    }

    std::uint64_t size_;
    PushSource::Producer producer_;
    std::string what_;
    std::vector<std::uint8_t> buffer_;
    std::uint64_t produced_ = 0;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
};

/// Writes all `n` bytes at `data` to `fd` (blocking; a descriptor left in
}  // namespace

std::unique_ptr<Source> open_source(const PushSource& source, const std::string& what)
{
    switch (source.kind()) {
    case PushSource::Kind::file: return std::make_unique<FileSource>(source.path(), what);
    case PushSource::Kind::memory: return std::make_unique<MemorySource>(source.data(), source.size());
    case PushSource::Kind::producer:
        return std::make_unique<ProducerSource>(source.size(), source.producer_function(), what);
    case PushSource::Kind::stream:
        return std::make_unique<dataplane::ChunkedSource>(
            [producer = source.producer_function(), what](std::uint8_t* buffer, std::size_t capacity) {
                return call_user("producer", what, producer, buffer, capacity);
            },
            what);
    }
    throw Error(Errc::invalid_argument, what + ": unknown source kind");
}

}  // namespace blobstreaming::client
