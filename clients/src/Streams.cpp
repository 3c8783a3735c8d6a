#include "Streams.h"
#include "UserCallback.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/MappedRegion.h>
#include <blobstreaming/common/UniqueFd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <random>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace blobstreaming::client {

namespace {

constexpr std::size_t kChunk = 1 << 20;

/// "a FIFO", "a character device", ... for messages.
const char* file_kind(mode_t mode) noexcept
{
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

/// sendfile(2) from the file (TLS: SSL_write from the mapping, sendfile
/// cannot encrypt); the digest is taken from the mapping. The size is the
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
        std::error_code ec;
        map_ = MappedRegion::of_file(fd_.get(), 0, static_cast<std::size_t>(size_), MappedRegion::Access::read, ec);
        if (ec) throw Error(Errc::io_error, what + ": " + path + ": mmap: " + ec.message());
        map_.advise(MADV_SEQUENTIAL);
    }
    std::uint64_t size() const noexcept override { return size_; }
    long send(Channel& channel, std::size_t max, HashPipeline& hash) override
    {
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(max, size_ - offset_));
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
    void skip(std::uint64_t offset, Sha256& hash) override
    {
        check_not_shrunk(offset);
        hash.update(map_.data(), static_cast<std::size_t>(offset));
        offset_ = offset;
    }
    bool stable() const noexcept override { return true; }  // the mapped file

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
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(max, size_ - offset_));
        const long n = send_bytes(channel, data_ + offset_, want);
        if (n > 0) {
            hash.update(data_ + offset_, static_cast<std::size_t>(n));
            offset_ += static_cast<std::uint64_t>(n);
        }
        return n;
    }
    void skip(std::uint64_t offset, Sha256& hash) override
    {
        hash.update(data_, static_cast<std::size_t>(offset));
        offset_ = offset;
    }
    bool stable() const noexcept override { return true; }  // the caller's buffer

private:
    const std::uint8_t* data_;
    std::uint64_t size_;
    std::uint64_t offset_ = 0;
};

class ProducerSource final : public Source {
public:
    ProducerSource(std::uint64_t size, PushSource::Producer producer, std::string what)
        : size_(size), producer_(std::move(producer)), what_(std::move(what)),
          buffer_(static_cast<std::size_t>(std::min<std::uint64_t>(size, kChunk)))
    {
    }
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
    void skip(std::uint64_t offset, Sha256& hash) override
    {
        while (produced_ < offset) {
            const std::size_t got =
                produce(static_cast<std::size_t>(std::min<std::uint64_t>(buffer_.size(), offset - produced_)));
            hash.update(buffer_.data(), got);
        }
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
/// non-blocking mode by whoever passed it is waited for). Throws
/// Errc::io_error "<what>: cannot write <label>: <reason>".
void write_all(int fd, const std::uint8_t* data, std::size_t n, const std::string& what, const std::string& label)
{
    std::size_t done = 0;
    while (done < n) {
        const ssize_t w = ::write(fd, data + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pollfd p{fd, POLLOUT, 0};
            ::poll(&p, 1, -1);
            continue;
        }
        if (w < 0) throw Error(Errc::io_error, what + ": cannot write " + label + ": " + std::strerror(errno));
        done += static_cast<std::size_t>(w);
    }
}

bool set_blocking(int fd) noexcept
{
    const int flags = ::fcntl(fd, F_GETFL);
    return flags >= 0 && ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0;
}

std::size_t bounce_size(std::uint64_t length)
{
    return static_cast<std::size_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(length, 1), kChunk));
}

/// "-", "/dev/stdout", "/dev/stderr", "/dev/fd/N", "/proc/self/fd/N": the
/// descriptor the process inherited, which is written as it is instead of
/// being opened again (a new open would truncate an O_APPEND file, fail on
/// a socket, or replace a regular file).
std::optional<int> inherited_descriptor(const std::string& path)
{
    if (path == "-" || path == "/dev/stdout") return STDOUT_FILENO;
    if (path == "/dev/stderr") return STDERR_FILENO;
    for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
        const std::string p(prefix);
        if (path.compare(0, p.size(), p) != 0 || path.size() == p.size() || path.size() > p.size() + 9) continue;
        const std::string digits = path.substr(p.size());
        if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
        return std::stoi(digits);
    }
    return std::nullopt;
}

/// A descriptor this sink does not own: standard output, a /dev/fd/N
/// name, PullSink::descriptor. Never closed, truncated or removed.
class DescriptorSink final : public Sink {
public:
    DescriptorSink(int fd, std::string label, std::string what)
        : fd_(fd), label_(std::move(label)), what_(std::move(what))
    {
    }
    void open(std::uint64_t length) override { buffer_.resize(bounce_size(length)); }
    std::pair<std::uint8_t*, std::size_t> window() override { return {buffer_.data(), buffer_.size()}; }
    void commit(std::size_t n) override { write_all(fd_, buffer_.data(), n, what_, label_); }
    void finish() override {}

private:
    int fd_;
    std::string label_;
    std::string what_;
    std::vector<std::uint8_t> buffer_;
};

/// A named file (PullSink::file), through a bounce buffer. What open()
/// finds at the path decides how it is written:
/// - a regular file or nothing: a temporary file beside it, renamed over
///   it by finish() and removed by abandon();
/// - a FIFO or a device: written in place, never truncated or removed;
/// - resuming: the regular file is continued in place and kept on failure.
class FileSink final : public Sink {
public:
    FileSink(std::string path, std::string what, std::optional<std::uint64_t> resume_at)
        : path_(std::move(path)), what_(std::move(what)), resume_at_(resume_at)
    {
    }
    ~FileSink() override { remove_temporary(); }
    void open(std::uint64_t length) override
    {
        buffer_.resize(bounce_size(length));
        if (path_.empty()) throw Error(Errc::invalid_argument, what_ + ": the output file name is empty");
        if (resume_at_) return open_to_resume();
        // Opened without O_CREAT or O_TRUNC: this changes nothing, checks
        // that the caller may write there, and tells what is there.
        // O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of
        // blocking the reactor.
        UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
        if (!fd) {
            const int err = errno;
            if (err == ENOENT) return open_temporary(nullptr);
            struct stat st {};
            if (err == ENXIO && ::stat(path_.c_str(), &st) == 0 && S_ISFIFO(st.st_mode))
                throw Error(Errc::io_error, what_ + ": cannot write the FIFO " + path_ +
                                                ": no process has it open for reading");
            if (err == ENXIO && ::stat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
                throw Error(Errc::io_error, what_ + ": cannot write " + path_ +
                                                ": it is a socket (pull to standard output and redirect that)");
            throw Error(Errc::io_error, what_ + ": cannot write " + path_ + ": " + std::strerror(err));
        }
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0)
            throw Error(Errc::io_error, what_ + ": cannot stat " + path_ + ": " + std::strerror(errno));
        if (S_ISREG(st.st_mode)) return open_temporary(&st);
        // A FIFO or a device: written in place with blocking writes.
        if (!set_blocking(fd.get()))
            throw Error(Errc::io_error, what_ + ": cannot use " + path_ + ": " + std::strerror(errno));
        fd_ = std::move(fd);
    }
    std::pair<std::uint8_t*, std::size_t> window() override { return {buffer_.data(), buffer_.size()}; }
    void commit(std::size_t n) override { write_all(fd_.get(), buffer_.data(), n, what_, path_); }
    void finish() override
    {
        if (fd_ && ::close(fd_.release()) != 0) {
            const int err = errno;
            remove_temporary();
            throw Error(Errc::io_error, what_ + ": cannot write " + path_ + ": " + std::strerror(err));
        }
        if (!temporary_.empty()) {
            if (::rename(temporary_.c_str(), target_.c_str()) != 0) {
                const int err = errno;
                remove_temporary();
                throw Error(Errc::io_error, what_ + ": cannot rename " + temporary_ + " to " + target_ + ": " +
                                                std::strerror(err));
            }
            temporary_.clear();
        }
    }
    void abandon() noexcept override { remove_temporary(); }

private:
    /// Resuming: the bytes already there stay, the rest is appended; a
    /// failure keeps what the file holds for the next resume.
    void open_to_resume()
    {
        fd_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0666));
        struct stat st {};
        if (fd_ && ::fstat(fd_.get(), &st) == 0 && !S_ISREG(st.st_mode))
            throw Error(Errc::invalid_argument, what_ + ": cannot resume into " + path_ + ": it is " +
                                                    file_kind(st.st_mode) + ", not a regular file");
        if (!fd_ || !set_blocking(fd_.get()) ||
            ::ftruncate(fd_.get(), static_cast<off_t>(*resume_at_)) != 0 ||
            ::lseek(fd_.get(), static_cast<off_t>(*resume_at_), SEEK_SET) < 0)
            throw Error(Errc::io_error, what_ + ": cannot continue " + path_ + " at byte " +
                                            std::to_string(*resume_at_) + ": " + std::strerror(errno));
    }

    /// A new file beside the destination (`old`: the regular file there,
    /// whose symbolic links are followed and whose mode and owner the new
    /// one takes), renamed over it by finish().
    void open_temporary(const struct stat* old)
    {
        target_ = path_;
        if (old != nullptr) {
            std::unique_ptr<char, decltype(&std::free)> real(::realpath(path_.c_str(), nullptr), &std::free);
            if (real) target_ = real.get();
        } else {
            struct stat link {};
            if (::lstat(path_.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
                throw Error(Errc::io_error, what_ + ": cannot write " + path_ +
                                                ": it is a symbolic link to a missing file");
        }
        const auto slash = target_.rfind('/');
        const std::string dir = slash == std::string::npos ? "." : target_.substr(0, std::max<std::size_t>(slash, 1));
        const std::string base = slash == std::string::npos ? target_ : target_.substr(slash + 1);
        static std::atomic<std::uint32_t> counter{0};
        std::random_device random;
        for (int attempt = 0; attempt < 100 && !fd_; ++attempt) {
            char suffix[16];
            std::snprintf(suffix, sizeof suffix, "%08x", static_cast<unsigned>(random() ^ counter++));
            const std::string name = dir + "/." + base.substr(0, 200) + ".pull-" + suffix;
            fd_.reset(::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY,
                             old != nullptr ? 0600 : 0666));
            if (fd_) {
                temporary_ = name;
            } else if (errno != EEXIST) {
                throw Error(Errc::io_error, what_ + ": cannot write " + path_ + ": cannot create " + name + ": " +
                                                std::strerror(errno));
            }
        }
        if (!fd_) throw Error(Errc::io_error, what_ + ": cannot write " + path_ + ": no free temporary file name");
        if (old != nullptr) {
            // Owner before mode: chown clears set-user-ID bits.
            if (::geteuid() == 0 && ::fchown(fd_.get(), old->st_uid, old->st_gid) != 0) {
                // Best effort, as cp(1) does: the bytes and the mode are what matter.
            }
            if (::fchmod(fd_.get(), old->st_mode & 07777) != 0)
                throw Error(Errc::io_error, what_ + ": cannot write " + path_ + ": cannot set the mode of " +
                                                temporary_ + ": " + std::strerror(errno));
        }
    }

    void remove_temporary() noexcept
    {
        if (temporary_.empty()) return;
        fd_.reset();
        ::unlink(temporary_.c_str());
        temporary_.clear();
    }

    std::string path_;
    std::string what_;
    std::optional<std::uint64_t> resume_at_;
    UniqueFd fd_;
    std::string target_;     ///< what finish() replaces: path_ with its links followed
    std::string temporary_;  ///< the file written, until finish() renamed it
    std::vector<std::uint8_t> buffer_;
};

/// Receives straight into contiguous memory (the caller's vector or buffer).
class MemorySink final : public Sink {
public:
    MemorySink(std::vector<std::uint8_t>* vector, std::uint8_t* data, std::size_t capacity, std::string what)
        : vector_(vector), data_(data), capacity_(capacity), what_(std::move(what))
    {
    }
    void open(std::uint64_t length) override
    {
        if (vector_ != nullptr) {
            vector_->resize(static_cast<std::size_t>(length));
            data_ = vector_->data();
        } else if (length > capacity_) {
            throw Error(Errc::invalid_range, what_ + ": the range has " + std::to_string(length) +
                                                 " bytes, the destination buffer only " + std::to_string(capacity_));
        }
        length_ = static_cast<std::size_t>(length);
    }
    std::pair<std::uint8_t*, std::size_t> window() override { return {data_ + done_, length_ - done_}; }
    void commit(std::size_t n) override { done_ += n; }
    void finish() override {}
    bool stable() const noexcept override { return true; }

private:
    std::vector<std::uint8_t>* vector_;
    std::uint8_t* data_;
    std::size_t capacity_;
    std::string what_;
    std::size_t length_ = 0;
    std::size_t done_ = 0;
};

class ConsumerSink final : public Sink {
public:
    ConsumerSink(PullSink::Consumer consumer, std::string what) : consumer_(std::move(consumer)), what_(std::move(what))
    {
    }
    void open(std::uint64_t length) override { buffer_.resize(bounce_size(length)); }
    std::pair<std::uint8_t*, std::size_t> window() override { return {buffer_.data(), buffer_.size()}; }
    void commit(std::size_t n) override
    {
        call_user("consumer", what_, consumer_, buffer_.data(), n, offset_);
        offset_ += n;
    }
    void finish() override {}

private:
    PullSink::Consumer consumer_;
    std::string what_;
    std::vector<std::uint8_t> buffer_;
    std::uint64_t offset_ = 0;
};

}  // namespace

std::unique_ptr<Source> open_source(const PushSource& source, const std::string& what)
{
    switch (source.kind()) {
    case PushSource::Kind::file: return std::make_unique<FileSource>(source.path(), what);
    case PushSource::Kind::memory: return std::make_unique<MemorySource>(source.data(), source.size());
    case PushSource::Kind::producer:
        return std::make_unique<ProducerSource>(source.size(), source.producer_function(), what);
    }
    throw Error(Errc::invalid_argument, what + ": unknown source kind");
}

std::unique_ptr<Sink> make_sink(const PullSink& sink, const std::string& what, std::optional<std::uint64_t> resume_at)
{
    switch (sink.kind()) {
    case PullSink::Kind::file:
        if (const auto fd = inherited_descriptor(sink.path()); fd && !resume_at) {
            const char* label = *fd == STDOUT_FILENO ? "standard output"
                                : *fd == STDERR_FILENO ? "standard error" : nullptr;
            return std::make_unique<DescriptorSink>(*fd, label != nullptr ? label : sink.path(), what);
        }
        return std::make_unique<FileSink>(sink.path(), what, resume_at);
    case PullSink::Kind::descriptor:
        return std::make_unique<DescriptorSink>(sink.fd(), sink.path(), what);
    case PullSink::Kind::memory: return std::make_unique<MemorySink>(sink.vector(), nullptr, 0, what);
    case PullSink::Kind::buffer: return std::make_unique<MemorySink>(nullptr, sink.data(), sink.capacity(), what);
    case PullSink::Kind::consumer: return std::make_unique<ConsumerSink>(sink.consumer_function(), what);
    }
    throw Error(Errc::invalid_argument, what + ": unknown sink kind");
}

std::pair<std::uint64_t, Sha256> hash_existing_file(const std::string& path, const std::string& what)
{
    std::pair<std::uint64_t, Sha256> out{0, Sha256()};
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd) {
        if (errno == ENOENT) return out;
        throw Error(Errc::io_error, what + ": cannot open " + path + " to resume: " + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        throw Error(Errc::io_error, what + ": cannot stat " + path + " to resume: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        throw Error(Errc::invalid_argument, what + ": resume needs a regular file to continue: " + path + " is " +
                                                file_kind(st.st_mode));
    std::vector<std::uint8_t> buffer(kChunk);
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error(Errc::io_error, what + ": cannot read " + path + " to resume: " + std::strerror(errno));
        if (n == 0) return out;
        out.second.update(buffer.data(), static_cast<std::size_t>(n));
        out.first += static_cast<std::uint64_t>(n);
    }
}

// ---- the public value types ------------------------------------------------

PushSource PushSource::file(std::string path)
{
    PushSource s;
    s.kind_ = Kind::file;
    s.path_ = std::move(path);
    return s;
}

PushSource PushSource::memory(const void* data, std::size_t size)
{
    PushSource s;
    s.kind_ = Kind::memory;
    s.data_ = static_cast<const std::uint8_t*>(data);
    s.size_ = size;
    return s;
}

PushSource PushSource::owned(std::vector<std::uint8_t> bytes)
{
    PushSource s;
    s.kind_ = Kind::memory;
    s.owned_ = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
    s.data_ = s.owned_->data();
    s.size_ = s.owned_->size();
    return s;
}

PushSource PushSource::producer(std::uint64_t size, Producer producer)
{
    PushSource s;
    s.kind_ = Kind::producer;
    s.size_ = size;
    s.producer_ = std::move(producer);
    return s;
}

PullSink PullSink::file(std::string path)
{
    PullSink s;
    s.kind_ = Kind::file;
    s.path_ = std::move(path);
    return s;
}

PullSink PullSink::descriptor(int fd, std::string name)
{
    PullSink s;
    s.kind_ = Kind::descriptor;
    s.fd_ = fd;
    s.path_ = name.empty() ? "descriptor " + std::to_string(fd) : std::move(name);
    return s;
}

PullSink PullSink::memory(std::vector<std::uint8_t>* out)
{
    PullSink s;
    s.kind_ = Kind::memory;
    s.vector_ = out;
    return s;
}

PullSink PullSink::buffer(void* data, std::size_t capacity)
{
    PullSink s;
    s.kind_ = Kind::buffer;
    s.data_ = static_cast<std::uint8_t*>(data);
    s.capacity_ = capacity;
    return s;
}

PullSink PullSink::consumer(Consumer consumer)
{
    PullSink s;
    s.kind_ = Kind::consumer;
    s.consumer_ = std::move(consumer);
    return s;
}

}  // namespace blobstreaming::client
