#pragma once
/// What a data connection moves bytes from (a push's Source) and into (a
/// pull's Sink). Sources hash what they send; sinks supply the receive
/// buffer late (window()), so bytes land straight in the destination when
/// it is memory or a store's reservation. The client library's sources
/// and sinks (files, memory, producers, consumers) and the daemon's
/// reservation sink implement them.

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/HashPipeline.h>
#include <blobstreaming/transporter/Tls.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace blobstreaming::dataplane {

class Source {
public:
    virtual ~Source() = default;
    virtual std::uint64_t size() const noexcept = 0;
    /// Sends up to `max` of the next bytes on the non-blocking `channel` and
    /// adds them to `hash`. Returns the bytes sent (0: the socket is full),
    /// or -1 with errno set by the channel. Throws Error when the source
    /// itself fails (Errc::io_error). A TLS channel is retried with the same
    /// bytes after 0 (the sources resend from their unchanged position).
    virtual long send(Channel& channel, std::size_t max, HashPipeline& hash) = 0;
    /// Resuming a push: adds bytes [0, offset) to `hash` without sending
    /// them and continues at `offset`. Called before the first send().
    /// Throws Error (Errc::io_error) when the source fails.
    virtual void skip(std::uint64_t offset, ChecksumState& hash) = 0;
    /// The bytes handed to `hash` stay unchanged in place until the
    /// transfer ends, so a helper thread may hash them later.
    virtual bool stable() const noexcept { return false; }
    /// A push of unknown length: send() writes the body's wire form (chunk
    /// headers and bytes, the chunk of length 0 at the end; ChunkedSource)
    /// and returns wire bytes; size() is 0.
    virtual bool streamed() const noexcept { return false; }
    /// streamed(): the chunk of length 0 is sent (the trailer may follow).
    virtual bool ended() const noexcept { return false; }
    /// streamed(): the Blob's bytes produced so far (what `hash` holds).
    virtual std::uint64_t produced() const noexcept { return 0; }
    /// Whether select() and hash_range() work: a source that can hand out
    /// any range (a file, memory), not one that produces its bytes in order.
    virtual bool positional() const noexcept { return false; }
    /// Positional sources: send() continues at `offset` and ends at `end`
    /// (one part of a push over several streams). Called before send().
    virtual void select(std::uint64_t offset, std::uint64_t end);
    /// Positional sources: adds bytes [offset, offset + length) to `hash`
    /// without sending them. Throws Error (Errc::io_error).
    virtual void hash_range(std::uint64_t offset, std::uint64_t length, ChecksumState& hash);
    /// Compression on the wire: the next up to `max` bytes (at least one
    /// while bytes remain), in memory and added to `hash`, valid until the
    /// next call; the source moves past them. Instead of send() for a
    /// compressed push. Throws Error (Errc::io_error when the source fails;
    /// Errc::invalid_argument from a source that has no such bytes: this
    /// default).
    virtual std::pair<const std::uint8_t*, std::size_t> next(std::size_t max, HashPipeline& hash);
};

/// The bytes of a push of unknown length, from a function that fills a
/// buffer and returns how many bytes it wrote, 0 at the end (it may block:
/// it runs on the data connection's thread). Each call becomes one chunk
/// on the wire (docs/PROTOCOL.md), so memory is one chunk whatever the
/// length. A call that returns more than it was offered, or throws, fails
/// the push (Error: its own; anything else: Errc::io_error).
class ChunkedSource final : public Source {
public:
    using Produce = std::function<std::size_t(std::uint8_t* buffer, std::size_t capacity)>;
    static constexpr std::size_t kChunk = std::size_t{1} << 20;

    explicit ChunkedSource(Produce produce, std::string what, std::size_t chunk = kChunk);
    std::uint64_t size() const noexcept override { return 0; }
    long send(Channel& channel, std::size_t max, HashPipeline& hash) override;
    /// Refused (Errc::invalid_argument): nothing can produce the same bytes again.
    void skip(std::uint64_t offset, ChecksumState& hash) override;
    bool streamed() const noexcept override { return true; }
    bool ended() const noexcept override { return last_ && begin_ == end_; }
    std::uint64_t produced() const noexcept override { return produced_; }

private:
    Produce produce_;
    std::string what_;
    std::vector<std::uint8_t> frame_;  ///< chunk header, then up to `chunk` minus its size
    std::size_t begin_ = 0;            ///< of frame_: sent up to here
    std::size_t end_ = 0;              ///< of frame_: filled up to here
    std::uint64_t produced_ = 0;
    bool last_ = false;  ///< the chunk of length 0 is in frame_
};

/// Where the bytes of a pull go. Life cycle, driven by one transfer:
/// open(), then window()/commit() until every byte is in, then either
/// finish() (success) or abandon() (failure, also before open()), at most
/// one of the two. The transfer checks the checksum before finish(), so that
/// a Blob that does not match is never made visible.
class Sink {
public:
    /// Without finish() or abandon(): as abandon().
    virtual ~Sink() = default;
    /// The range's length is known: prepare for it (a file: create the
    /// temporary file it is written to, open a device). Touches nothing
    /// that exists at the destination. Throws Error.
    virtual void open(std::uint64_t length) = 0;
    /// Where the next bytes go; never empty while bytes remain.
    virtual std::pair<std::uint8_t*, std::size_t> window() = 0;
    /// `n` bytes were written at window(). Throws Error (Errc::io_error
    /// naming the destination and the system's reason).
    virtual void commit(std::size_t n) = 0;
    /// Every byte is in and checked: makes the output visible (a file: the
    /// temporary file replaces the destination). Throws Error; the
    /// destination is then as before the pull and nothing is left behind.
    virtual void finish() = 0;
    /// The transfer failed before finish(): removes what this pull created
    /// (the temporary file), never what was there before it (a device, a
    /// FIFO, standard output, the file being replaced, a file being
    /// resumed). A no-op after finish().
    virtual void abandon() noexcept {}
    /// Bytes received into window() stay unchanged in place until the
    /// transfer ends (no bounce buffer), so a helper thread may hash them.
    virtual bool stable() const noexcept { return false; }
    /// The same-host path: moves up to `n` bytes of the file `fd` from
    /// `offset` into the destination inside the kernel (copy_file_range, no
    /// pass through user space) and returns how many; 0 when this
    /// destination takes no kernel copy (not a regular file, a file system
    /// that refuses it), and then the bytes go through window() and commit().
    /// Throws Error (Errc::io_error naming the destination) when it fails.
    virtual std::size_t copy_from_file(int /*fd*/, std::uint64_t /*offset*/, std::size_t /*n*/) { return 0; }
    /// Parallel streams (PullOptions::streams): whether, once open(), the
    /// destination takes bytes anywhere in the range through write_at() (a
    /// new temporary file, memory), so several data connections can each
    /// fill a range of it. A device, a FIFO, standard output, a consumer:
    /// no, they take the bytes in order.
    virtual bool positional() const noexcept { return false; }
    /// `n` bytes at `offset` of the range; only where positional(). Throws
    /// Error (Errc::io_error naming the destination and the system's reason).
    virtual void write_at(std::uint64_t /*offset*/, const std::uint8_t* /*data*/, std::size_t /*n*/) {}
};

}  // namespace blobstreaming::dataplane
