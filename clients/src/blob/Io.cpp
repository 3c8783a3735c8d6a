#include "Io.h"

#include <blobstreaming/common/Error.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <future>
#include <memory>
#include <poll.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace blobstreaming::cli {

namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

/// A push input read as a stream (standard input, a FIFO, a character
/// device), each read waiting at most the timeout for its bytes.
class Stream {
public:
    /// `size`: the bytes to push (given by --size, or those a regular
    /// standard input holds), or nullopt: up to EOF.
    Stream(UniqueFd owned, int fd, std::string label, std::string what, std::optional<std::uint64_t> size,
           bool size_given, milliseconds timeout)
        : owned_(std::move(owned)), fd_(fd), label_(std::move(label)), what_(std::move(what)), size_(size),
          size_given_(size_given), timeout_(timeout)
    {}

    std::optional<std::uint64_t> size() const noexcept { return size_; }
    /// Bytes read so far.
    std::uint64_t got() const noexcept { return got_; }

    /// Returns once a byte, EOF or an error can be read (a FIFO: once a
    /// writer has written or gone). Throws Error (Errc::timeout).
    void wait_readable() const
    {
        const auto deadline = steady_clock::now() + timeout_;
        for (;;) {
            pollfd p{fd_, POLLIN, 0};
            const auto left = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now()).count();
            const int rc = ::poll(&p, 1, static_cast<int>(std::max<long long>(left, 0)));
            if (rc > 0) return;
            if (rc < 0 && errno == EINTR) continue;
            if (rc < 0)
                throw Error(Errc::io_error, what_ + ": cannot wait for " + label_ + ": " + std::strerror(errno));
            throw Error(Errc::timeout, what_ + ": no bytes from " + label_ + " for " + seconds_text(timeout_) +
                                           " s (--timeout) after " + progress() + " bytes");
        }
    }

    /// Up to `capacity` next bytes; 0 at EOF. Throws Error (Errc::timeout,
    /// Errc::io_error).
    std::size_t read_some(std::uint8_t* buffer, std::size_t capacity)
    {
        for (;;) {
            wait_readable();
            const ssize_t n = ::read(fd_, buffer, capacity);
            if (n >= 0) {
                got_ += static_cast<std::uint64_t>(n);
                return static_cast<std::size_t>(n);
            }
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            throw Error(Errc::io_error, what_ + ": cannot read " + label_ + ": " + std::strerror(errno));
        }
    }

    /// read_some(), then more while more can be read at once, up to
    /// `capacity`: a pipe gives 64 KiB a read, a chunk on the wire may hold
    /// more. 0 only at EOF.
    std::size_t read_available(std::uint8_t* buffer, std::size_t capacity)
    {
        std::size_t n = read_some(buffer, capacity);
        while (n > 0 && n < capacity) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 0) <= 0) break;
            const std::size_t more = read_some(buffer + n, capacity - n);
            if (more == 0) break;  // EOF: the next call returns 0
            n += more;
        }
        return n;
    }

    /// The stream ended before size() bytes: Errc::incomplete.
    [[noreturn]] void ended_early() const
    {
        throw Error(Errc::incomplete, what_ + ": " + label_ + " ended after " + std::to_string(got_) + " of the " +
                                          std::to_string(*size_) + " bytes " +
                                          (size_given_ ? "given by --size" : "it held when the push started"));
    }

    /// Reads to EOF. Throws Error (Errc::limit_reached past kSpoolLimit).
    std::vector<std::uint8_t> read_all()
    {
        std::vector<std::uint8_t> bytes;
        constexpr std::size_t kRead = 1 << 20;
        std::size_t used = 0;
        for (;;) {
            bytes.resize(used + kRead);
            const std::size_t n = read_some(bytes.data() + used, kRead);
            if (n == 0) break;
            used += n;
            if (used > kSpoolLimit)
                throw Error(Errc::limit_reached, what_ + ": " + label_ + " has more than " +
                                                     std::to_string(kSpoolLimit) +
                                                     " bytes, the most held in memory without --size: give --size "
                                                     "to stream it");
        }
        bytes.resize(used);
        return bytes;
    }

private:
    std::string progress() const
    {
        return size_ ? std::to_string(got_) + " of " + std::to_string(*size_) : std::to_string(got_);
    }

    UniqueFd owned_;
    int fd_;
    std::string label_;
    std::string what_;
    std::optional<std::uint64_t> size_;
    bool size_given_;
    milliseconds timeout_;
    std::uint64_t got_ = 0;
};

client::PushSource from_stream(std::shared_ptr<Stream> stream, bool spool,
                               std::function<std::optional<client::PushSource>()>* fallback)
{
    if (!stream->size() && spool) return client::PushSource::owned(stream->read_all());
    // Nothing is reserved before the stream has something to say (a FIFO's
    // writer may never come).
    stream->wait_readable();
    if (!stream->size()) {
        // Its length is known at its end: memory is one chunk, whatever it is.
        if (fallback)
            *fallback = [stream]() -> std::optional<client::PushSource> {
                if (stream->got() > 0) return std::nullopt;
                return client::PushSource::owned(stream->read_all());
            };
        return client::PushSource::stream(
            [stream](std::uint8_t* buffer, std::size_t capacity) { return stream->read_available(buffer, capacity); });
    }
    return client::PushSource::producer(*stream->size(), [stream](std::uint8_t* buffer, std::size_t capacity) {
        const std::size_t n = stream->read_some(buffer, capacity);
        if (n == 0) stream->ended_early();
        return n;
    });
}

bool set_blocking(int fd) noexcept
{
    const int flags = ::fcntl(fd, F_GETFL);
    return flags >= 0 && ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0;
}

/// Opens the FIFO `path` for writing, waiting at most `timeout` for a
/// reader. Throws Error (Errc::timeout, Errc::io_error).
UniqueFd open_fifo_writer(const std::string& path, const std::string& what, milliseconds timeout)
{
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK));
    if (fd && set_blocking(fd.get())) return fd;
    if (fd || errno != ENXIO)
        throw Error(Errc::io_error, what + ": cannot write " + path + ": " + std::strerror(errno));
    // No reader yet. There is no event to wait on for one, so a helper
    // thread makes the blocking open, bounded by the timeout.
    auto opened = std::make_shared<std::promise<int>>();
    std::future<int> result = opened->get_future();
    std::thread opener([path, opened] {
        const int f = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
        opened->set_value(f >= 0 ? f : -errno);
    });
    if (result.wait_for(timeout) != std::future_status::ready) {
        // Being its reader for a moment completes the helper's open.
        UniqueFd reader(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
        if (reader) {
            opener.join();
            UniqueFd late(result.get());
        } else {
            opener.detach();  // blocked until some reader comes, or the process ends
        }
        throw Error(Errc::timeout, what + ": no process opened the FIFO " + path + " for reading within " +
                                       seconds_text(timeout) + " s");
    }
    opener.join();
    const int got = result.get();
    if (got < 0) throw Error(Errc::io_error, what + ": cannot write " + path + ": " + std::strerror(-got));
    return UniqueFd(got);
}

}  // namespace

std::string seconds_text(milliseconds timeout)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", static_cast<double>(timeout.count()) / 1000.0);
    return text;
}

bool is_standard_output(const std::string& file) noexcept
{
    return file == "-" || file == "/dev/stdout" || file == "/dev/fd/1" || file == "/proc/self/fd/1";
}

client::PushSource open_push_input(const std::string& file, const std::string& what, std::optional<std::uint64_t> size,
                                   milliseconds timeout, bool spool,
                                   std::function<std::optional<client::PushSource>()>* fallback)
{
    if (file == "-") {
        std::optional<std::uint64_t> bytes = size;
        struct stat st {};
        if (!size && ::fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode)) {
            // `blob push --name NAME - < FILE`: what follows the position is known.
            const off_t at = std::max<off_t>(::lseek(STDIN_FILENO, 0, SEEK_CUR), 0);
            bytes = static_cast<std::uint64_t>(std::max<off_t>(st.st_size - at, 0));
        }
        return from_stream(std::make_shared<Stream>(UniqueFd(), STDIN_FILENO, "standard input", what, bytes,
                                                    size.has_value(), timeout),
                           spool, fallback);
    }
    // O_NONBLOCK: a FIFO opens without waiting for a writer.
    UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd) throw Error(Errc::io_error, what + ": cannot open " + file + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        throw Error(Errc::io_error, what + ": cannot stat " + file + ": " + std::strerror(errno));
    if (S_ISREG(st.st_mode)) {
        if (size && *size != static_cast<std::uint64_t>(st.st_size))
            throw Error(Errc::invalid_argument, what + ": " + file + " has " + std::to_string(st.st_size) +
                                                    " bytes, not the " + std::to_string(*size) + " given by --size");
        return client::PushSource::file(file);
    }
    if (S_ISDIR(st.st_mode)) throw Error(Errc::io_error, what + ": cannot read " + file + ": " + std::strerror(EISDIR));
    const int raw = fd.get();
    return from_stream(std::make_shared<Stream>(std::move(fd), raw, file, what, size, size.has_value(), timeout), spool,
                       fallback);
}

PullOutput::PullOutput(const std::string& file, const std::string& what, bool resume, milliseconds timeout)
    : file_(file)
{
    struct stat st {};
    if (resume || is_standard_output(file) || ::stat(file.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) return;
    fifo_ = open_fifo_writer(file, what, timeout);
}

client::PullSink PullOutput::sink() const
{
    return fifo_ ? client::PullSink::descriptor(fifo_.get(), file_) : client::PullSink::file(file_);
}

}  // namespace blobstreaming::cli
