#pragma once
/// The data plane's I/O layer, shared by the daemon's connections and the
/// client's: the outcome of a non-blocking transfer on a Channel as a value
/// (IoResult, instead of `long` + errno), a reader that gathers one frame of
/// the wire format across partial reads (FrameReader) and a buffer that
/// drains small writes across partial writes (OutputBuffer).
///
/// Only small things are framed here (Requests, trailers, Responses); the
/// bytes of a Blob go straight between the socket and their store or sink
/// through read_some(), write_some() and send_file(), which copy nothing.
///
/// Partial transfers, once for every call below: `bytes()` of the result is
/// what the call moved, also when it then stopped. A call that stops with
/// want_read or want_write has moved what it could; call it again when the
/// socket is readable or writable (TLS may need either, whichever way the
/// bytes go). EINTR is retried inside. TLS: a write that stopped with
/// want_read or want_write must be retried with at least as many bytes, the
/// same ones first (the buffer may move); OutputBuffer keeps that rule.

#include <blobstreaming/transporter/Tls.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace blobstreaming {

/// How a read or write on a Channel ended: `done` (all that was asked was
/// moved, or for the single calls some bytes were), want_read / want_write
/// (wait for the socket), eof (the peer closed its side), error (errno and
/// its text: the socket's, or for TLS EPROTO with OpenSSL's reason).
class IoResult {
public:
    enum class Status : std::uint8_t { done, want_read, want_write, eof, error };

    IoResult() = default;
    static IoResult moved(std::size_t bytes) noexcept { return IoResult(Status::done, bytes); }
    static IoResult stopped(Status status) noexcept { return IoResult(status, 0); }
    /// `text`: what failed, as Channel::error_text() says it.
    static IoResult failed(int error_number, std::string text);
    /// This stop, after `bytes` moved by earlier calls of a compound one.
    IoResult after(std::size_t bytes) && noexcept;

    Status status() const noexcept { return status_; }
    std::size_t bytes() const noexcept { return bytes_; }
    bool done() const noexcept { return status_ == Status::done; }
    /// want_read or want_write: nothing is wrong, the socket is not ready.
    bool blocked() const noexcept { return status_ == Status::want_read || status_ == Status::want_write; }
    bool eof() const noexcept { return status_ == Status::eof; }
    bool failed() const noexcept { return status_ == Status::error; }
    /// errno of an error (EPROTO: a TLS failure); 0 otherwise.
    int error_number() const noexcept { return error_number_; }
    /// An error's text ("TLS: " and OpenSSL's reason, else strerror); "" otherwise.
    const std::string& text() const noexcept { return text_; }

private:
    IoResult(Status status, std::size_t bytes) noexcept : status_(status), bytes_(bytes) {}

    Status status_ = Status::done;
    std::size_t bytes_ = 0;
    int error_number_ = 0;
    std::string text_;
};

/// One recv() / SSL_read() of up to `size` bytes: done with bytes() > 0,
/// want_read (TLS: or want_write), eof (end of stream: a plain EOF, a TLS
/// close_notify, or a TLS peer gone without one), or error.
IoResult read_some(Channel& channel, void* data, std::size_t size);

/// One send() / SSL_write() of up to `size` bytes: done with bytes() > 0
/// (0 when `size` is 0), want_write (TLS: or want_read), or error (EPIPE
/// when a TLS peer closed). Never raises SIGPIPE. `more`: the caller sends
/// more at once (Channel::write): the kernel may hold these bytes until
/// then, so a call with `more` must be followed by one without it.
IoResult write_some(Channel& channel, const void* data, std::size_t size, bool more = false);

/// One sendfile(2) of up to `size` bytes of the file `file` from `offset`
/// to a plain channel (never TLS: sendfile cannot encrypt): done with
/// bytes() > 0, want_write, eof (the file ends at `offset`: it shrank), or
/// error.
IoResult send_file(Channel& channel, int file, std::uint64_t offset, std::size_t size);

/// Looks without consuming: done (bytes are waiting; bytes() 1), want_read
/// (nothing yet; TLS: or want_write), eof, or error. TLS: a record without
/// application data is nothing yet, not a close.
IoResult peek(Channel& channel);

/// Reads and drops up to `limit` bytes (what a refused peer still sends):
/// done once `limit` bytes were dropped, else what stopped it.
IoResult discard(Channel& channel, std::uint64_t limit);

/// Gathers one frame of a known size (a Request, a trailer, a Response's
/// header and then its message) across partial reads. Reads only the bytes
/// the frame misses, never what follows it. Single-threaded.
class FrameReader {
public:
    /// Room for the largest frame it will be asked for.
    explicit FrameReader(std::size_t capacity) : buffer_(capacity) {}

    /// Starts a new frame of `size` bytes (at most the capacity; more is a
    /// programming error: std::length_error), forgetting the last one.
    void expect(std::size_t size);
    /// The frame goes on for `more` bytes after what it was (a Response's
    /// message after its header); what was read stays.
    void extend(std::size_t more);

    /// Reads what the frame misses: done once it is complete (at once when
    /// it already is), else what stopped it; bytes() is what arrived during
    /// this call.
    IoResult fill(Channel& channel);

    bool complete() const noexcept { return got_ == size_; }
    /// Bytes of the current frame received so far.
    std::size_t got() const noexcept { return got_; }
    std::size_t size() const noexcept { return size_; }
    const std::uint8_t* data() const noexcept { return buffer_.data(); }
    /// The frame's first N bytes, as protocol::decode() takes them; N must
    /// not exceed the frame's size.
    template <std::size_t N>
    const std::uint8_t (&first() const noexcept)[N]
    {
        return *reinterpret_cast<const std::uint8_t(*)[N]>(buffer_.data());
    }

private:
    std::vector<std::uint8_t> buffer_;
    std::size_t size_ = 0;
    std::size_t got_ = 0;
};

/// Small writes (encoded frames) queued and written across partial writes,
/// in order. Appending while bytes wait is allowed: the next write then
/// carries the waiting bytes first and more after them, which keeps the TLS
/// rule above. Single-threaded.
class OutputBuffer {
public:
    void append(const void* data, std::size_t size);
    void append(std::string_view bytes) { append(bytes.data(), bytes.size()); }

    /// Writes what waits: done once everything is written (at once when
    /// nothing waits), else what stopped it; bytes() is what left during
    /// this call. `more`: as write_some()'s.
    IoResult drain(Channel& channel, bool more = false);

    bool empty() const noexcept { return sent_ == bytes_.size(); }
    /// Bytes waiting to be written.
    std::size_t pending() const noexcept { return bytes_.size() - sent_; }
    /// Forgets what waits. TLS: only when nothing different will be written
    /// on the channel after a write that stopped (the connection ends, or
    /// the same bytes are appended again).
    void clear() noexcept;

private:
    std::string bytes_;
    std::size_t sent_ = 0;
};

}  // namespace blobstreaming
