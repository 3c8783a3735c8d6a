// The destinations of a pull (Streams.h): files (through a temporary file
// renamed into place, or in place: devices, FIFOs, a resume), inherited and
// caller's descriptors, memory, and a consumer callback; and the hash of a
// file a pull resumes.
#include "Streams.h"

#include "UserCallback.h"

#include <blobstreaming/common/Error.h>
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
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace blobstreaming::client {

namespace {

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

/// copy_file_range from a store's file into a destination that is a
/// regular file, written at its current offset. Off for good at the first
/// refusal (not the same kind of file system on an old kernel, an O_APPEND
/// descriptor, no such call): the bytes then go through the bounce buffer,
/// after what was copied (the destination's offset moved with it).
class KernelCopy {
public:
    /// Decides from what `fd` is: on for a regular file only.
    void arm(int fd) noexcept
    {
        struct stat st {};
        on_ = fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    }
    std::size_t copy(int from, std::uint64_t offset, std::size_t n, int to, const std::string& what,
                     const std::string& label)
    {
        auto in = static_cast<loff_t>(offset);
        while (on_) {
            const ssize_t c = ::copy_file_range(from, &in, to, nullptr, n, 0);
            if (c > 0) return static_cast<std::size_t>(c);
            if (c < 0 && errno == EINTR) continue;
            if (c == 0 || errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP ||
                errno == EBADF) {
                on_ = false;
                break;
            }
            throw Error(Errc::io_error, what + ": cannot write " + label + ": " + std::strerror(errno));
        }
        return 0;
    }

private:
    bool on_ = false;
};

std::size_t bounce_size(std::uint64_t length)
{
    return static_cast<std::size_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(length, 1), kStreamChunk));
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
    {}
    void open(std::uint64_t length) override
    {
        buffer_.resize(bounce_size(length));
        copy_.arm(fd_);
    }
    std::pair<std::uint8_t*, std::size_t> window() override { return {buffer_.data(), buffer_.size()}; }
    void commit(std::size_t n) override { write_all(fd_, buffer_.data(), n, what_, label_); }
    void finish() override {}
    std::size_t copy_from_file(int fd, std::uint64_t offset, std::size_t n) override
    {
        return copy_.copy(fd, offset, n, fd_, what_, label_);
    }

private:
    int fd_;
    std::string label_;
    std::string what_;
    std::vector<std::uint8_t> buffer_;
    KernelCopy copy_;
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
    {}
    ~FileSink() override { remove_temporary(); }
    void open(std::uint64_t length) override
    {
        buffer_.resize(bounce_size(length));
        if (path_.empty()) throw Error(Errc::invalid_argument, what_ + ": the output file name is empty");
        open_destination();
        copy_.arm(fd_.get());
    }
    std::pair<std::uint8_t*, std::size_t> window() override { return {buffer_.data(), buffer_.size()}; }
    void commit(std::size_t n) override { write_all(fd_.get(), buffer_.data(), n, what_, path_); }
    std::size_t copy_from_file(int fd, std::uint64_t offset, std::size_t n) override
    {
        return copy_.copy(fd, offset, n, fd_.get(), what_, path_);
    }
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
                throw Error(Errc::io_error,
                            what_ + ": cannot rename " + temporary_ + " to " + target_ + ": " + std::strerror(err));
            }
            temporary_.clear();
        }
    }
    void abandon() noexcept override { remove_temporary(); }
    bool positional() const noexcept override { return !temporary_.empty(); }
    void write_at(std::uint64_t offset, const std::uint8_t* data, std::size_t n) override
    {
        std::size_t done = 0;
        while (done < n) {
            const ssize_t w = ::pwrite(fd_.get(), data + done, n - done, static_cast<off_t>(offset + done));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) throw Error(Errc::io_error, what_ + ": cannot write " + path_ + ": " + std::strerror(errno));
            done += static_cast<std::size_t>(w);
        }
    }

private:
    void open_destination()
    {
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
                throw Error(Errc::io_error,
                            what_ + ": cannot write the FIFO " + path_ + ": no process has it open for reading");
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

    /// Resuming: the bytes already there stay, the rest is appended; a
    /// failure keeps what the file holds for the next resume.
    void open_to_resume()
    {
        fd_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0666));
        struct stat st {};
        if (fd_ && ::fstat(fd_.get(), &st) == 0 && !S_ISREG(st.st_mode))
            throw Error(Errc::invalid_argument, what_ + ": cannot resume into " + path_ + ": it is " +
                                                    file_kind(st.st_mode) + ", not a regular file");
        if (!fd_ || !set_blocking(fd_.get()) || ::ftruncate(fd_.get(), static_cast<off_t>(*resume_at_)) != 0 ||
            ::lseek(fd_.get(), static_cast<off_t>(*resume_at_), SEEK_SET) < 0)
            throw Error(Errc::io_error, what_ + ": cannot continue " + path_ + " at byte " +
                                            std::to_string(*resume_at_) + ": " + std::strerror(errno));
    }

    /// Why no file can be created in `dir` (`err`: the errno of the
    /// attempt), in the user's words: the temporary file's name is ours.
    static std::string directory_problem(const std::string& dir, int err)
    {
        struct stat st {};
        if (err == ENOENT || err == ENOTDIR) {
            if (::stat(dir.c_str(), &st) != 0) return "directory " + dir + " does not exist";
            if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
        }
        if (err == EACCES || err == EPERM) return "no permission to create a file in directory " + dir;
        if (err == EROFS) return "directory " + dir + " is on a read-only file system";
        return "cannot create a file in directory " + dir + ": " + std::strerror(err);
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
                throw Error(Errc::io_error,
                            what_ + ": cannot write " + path_ + ": it is a symbolic link to a missing file");
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
            fd_.reset(
                ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, old != nullptr ? 0600 : 0666));
            if (fd_) {
                temporary_ = name;
            } else if (errno != EEXIST) {
                throw Error(Errc::io_error, what_ + ": cannot write " + path_ + ": " + directory_problem(dir, errno));
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
    KernelCopy copy_;
};

/// Receives straight into contiguous memory (the caller's vector or buffer).
class MemorySink final : public Sink {
public:
    MemorySink(std::vector<std::uint8_t>* vector, std::uint8_t* data, std::size_t capacity, std::string what)
        : vector_(vector), data_(data), capacity_(capacity), what_(std::move(what))
    {}
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
    bool positional() const noexcept override { return true; }
    void write_at(std::uint64_t offset, const std::uint8_t* data, std::size_t n) override
    {
        if (offset > length_ || n > length_ - offset)
            throw Error(Errc::invalid_range, what_ + ": " + std::to_string(n) + " bytes at offset " +
                                                 std::to_string(offset) + " do not fit the " + std::to_string(length_) +
                                                 " of the range");
        if (n > 0) std::memcpy(data_ + offset, data, n);
    }

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
    {}
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

std::unique_ptr<Sink> make_sink(const PullSink& sink, const std::string& what, std::optional<std::uint64_t> resume_at)
{
    switch (sink.kind()) {
    case PullSink::Kind::file:
        if (const auto fd = inherited_descriptor(sink.path()); fd && !resume_at) {
            const char* label = *fd == STDOUT_FILENO   ? "standard output"
                                : *fd == STDERR_FILENO ? "standard error"
                                                       : nullptr;
            return std::make_unique<DescriptorSink>(*fd, label != nullptr ? label : sink.path(), what);
        }
        return std::make_unique<FileSink>(sink.path(), what, resume_at);
    case PullSink::Kind::descriptor: return std::make_unique<DescriptorSink>(sink.fd(), sink.path(), what);
    case PullSink::Kind::memory: return std::make_unique<MemorySink>(sink.vector(), nullptr, 0, what);
    case PullSink::Kind::buffer: return std::make_unique<MemorySink>(nullptr, sink.data(), sink.capacity(), what);
    case PullSink::Kind::consumer: return std::make_unique<ConsumerSink>(sink.consumer_function(), what);
    }
    throw Error(Errc::invalid_argument, what + ": unknown sink kind");
}

std::pair<std::uint64_t, ChecksumState> hash_existing_file(const std::string& path, ChecksumAlgorithm algorithm,
                                                           const std::string& what)
{
    std::pair<std::uint64_t, ChecksumState> out{0, ChecksumState(algorithm)};
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd) {
        if (errno == ENOENT) return out;
        throw Error(Errc::io_error, what + ": cannot open " + path + " to resume: " + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        throw Error(Errc::io_error, what + ": cannot stat " + path + " to resume: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        throw Error(Errc::invalid_argument,
                    what + ": resume needs a regular file to continue: " + path + " is " + file_kind(st.st_mode));
    std::error_code ec;
    out.first = out.second.update_from(fd.get(), ec);
    if (ec) throw Error(Errc::io_error, what + ": cannot read " + path + " to resume: " + ec.message());
    return out;
}

}  // namespace blobstreaming::client
