#pragma once
/// Where a push takes its bytes from and where a pull puts them.

#include <blobstreaming/client/InPlace.h>
#include <blobstreaming/client/Notice.h>
#include <blobstreaming/client/Result.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::client {

/// The bytes of a push. Copyable and cheap: memory is referenced, not copied,
/// except by `owned`.
class PushSource {
public:
    /// Fills `buffer` (at most `capacity` bytes) with the next bytes of the
    /// Blob and returns how many it wrote; returning 0 before `size` bytes
    /// were produced fails the push (Errc::io_error). To fail it with a code
    /// and message of its own (the input ended early, a read error) it
    /// throws blobstreaming::Error; anything else it throws fails the push
    /// with Errc::io_error `push "N": the producer threw: <what()>`. Either
    /// way the reservation is aborted and nothing is stored. Runs on the
    /// reactor thread.
    using Producer = std::function<std::size_t(std::uint8_t* buffer, std::size_t capacity)>;

    /// The whole regular file at `path`, sent with sendfile(2). Its size is
    /// taken when the push starts: bytes appended later are not sent, and a
    /// file that shrinks before its end was sent fails the push
    /// (Errc::io_error). Anything else (a FIFO, a device) is refused at once,
    /// without waiting for a writer: stream it with `producer`.
    static PushSource file(std::string path);
    /// `size` bytes at `data`: the caller keeps them alive and unchanged
    /// until the completion has run.
    static PushSource memory(const void* data, std::size_t size);
    /// A buffer the source owns (shared by copies of the source).
    static PushSource owned(std::vector<std::uint8_t> bytes);
    /// `size` bytes obtained from `producer`, called as the socket drains.
    static PushSource producer(std::uint64_t size, Producer producer);
    /// Bytes of a length known only at their end (a modality streaming cine
    /// or ultrasound video): `producer` fills the buffer and returns how many
    /// bytes it wrote, and returns 0 once at the end (it may block until it
    /// has bytes; it must not return 0 before the end). The store's
    /// reservation grows as the bytes arrive, up to PushOptions::max_size;
    /// the commit and checksum are those of any push, and a push that fails
    /// (the producer throws, the connection breaks, the store fills up)
    /// leaves nothing. Memory stays one chunk (1 MiB) on each side whatever
    /// the length. One stream; no resume; a store of an earlier release
    /// refuses it (Errc::refused naming the release). size() is 0.
    static PushSource stream(Producer producer);

    enum class Kind { file, memory, producer, stream };
    Kind kind() const noexcept { return kind_; }
    const std::string& path() const noexcept { return path_; }
    const std::uint8_t* data() const noexcept { return data_; }
    /// Size in bytes; for a file, known only once the push has opened it.
    std::uint64_t size() const noexcept { return size_; }
    const Producer& producer_function() const noexcept { return producer_; }

private:
    Kind kind_ = Kind::memory;
    std::string path_;
    const std::uint8_t* data_ = nullptr;
    std::shared_ptr<const std::vector<std::uint8_t>> owned_;
    std::uint64_t size_ = 0;
    Producer producer_;
};

/// Where the bytes of a pull go.
class PullSink {
public:
    /// Receives each piece of the range in order as it arrives (`offset` is
    /// relative to the start of the range). Runs on the reactor thread; the
    /// bytes are valid only during the call. An exception fails the pull and
    /// the consumer is not called again: a blobstreaming::Error with its own
    /// code and message, anything else with Errc::io_error
    /// `pull "N": store "S": the consumer threw: <what()>`.
    using Consumer = std::function<void(const std::uint8_t* data, std::size_t size, std::uint64_t offset)>;

    /// The file at `path`:
    /// - a regular file or a new one: the bytes go to a temporary file beside
    ///   it (`.NAME.pull-XXXXXXXX`, in the directory of the symbolic link's
    ///   target), which replaces `path` by rename(2) only once every byte is
    ///   in and checked; an existing file's mode (and, for root, owner) is
    ///   kept. A failed pull removes the temporary file: an existing file
    ///   keeps its bytes, a new one does not appear. The directory must be
    ///   writable; an existing file must be writable too.
    /// - "-", "/dev/stdout", "/dev/stderr", "/dev/fd/N", "/proc/self/fd/N":
    ///   the inherited descriptor, written at its position (O_APPEND kept),
    ///   never closed.
    /// - an existing FIFO, character or block device: opened for writing
    ///   in place, never truncated, renamed or removed. A FIFO must already
    ///   have a reader (Errc::io_error otherwise; to wait for one, open it
    ///   yourself and use `descriptor`). A socket or directory is refused.
    /// - with PullOptions::resume: written in place after the bytes it holds.
    static PullSink file(std::string path);
    /// The caller's open descriptor `fd`, written at its position; the
    /// caller keeps it open until the completion has run. Never closed,
    /// truncated or removed; cannot be resumed. `name` is what messages
    /// call it (default "descriptor N").
    static PullSink descriptor(int fd, std::string name = {});
    /// `*out` is resized to the range's length and filled; the caller keeps
    /// it alive and untouched until the completion has run.
    static PullSink memory(std::vector<std::uint8_t>* out);
    /// The caller's buffer of `capacity` bytes; a longer range fails with
    /// Errc::invalid_range before any byte moves.
    static PullSink buffer(void* data, std::size_t capacity);
    /// Bytes handed to `consumer` as they arrive.
    static PullSink consumer(Consumer consumer);
    /// `otherwise`, unless the pull takes the same-host fast path
    /// (SessionOptions::local_fast_path): then nothing is copied and
    /// nothing of `otherwise` is opened or written: `*place` is set to the
    /// range in the store's file (InPlace.h), verified as any pull is
    /// (PullOptions::verify), and Result::local is true. Otherwise `*place`
    /// is left empty and the bytes go to `otherwise`. The caller keeps
    /// `place` alive until the completion has run.
    static PullSink in_place(std::shared_ptr<const InPlaceBlob>* place, PullSink otherwise);

    enum class Kind { file, memory, buffer, consumer, descriptor };
    Kind kind() const noexcept { return kind_; }
    const std::string& path() const noexcept { return path_; }
    std::vector<std::uint8_t>* vector() const noexcept { return vector_; }
    std::uint8_t* data() const noexcept { return data_; }
    std::size_t capacity() const noexcept { return capacity_; }
    int fd() const noexcept { return fd_; }
    const Consumer& consumer_function() const noexcept { return consumer_; }
    /// Where in_place() puts the same-host range (nullptr: not asked for).
    std::shared_ptr<const InPlaceBlob>* place() const noexcept { return place_; }

private:
    Kind kind_ = Kind::consumer;
    std::string path_;
    std::vector<std::uint8_t>* vector_ = nullptr;
    std::uint8_t* data_ = nullptr;
    std::size_t capacity_ = 0;
    int fd_ = -1;
    Consumer consumer_;
    std::shared_ptr<const InPlaceBlob>* place_ = nullptr;
};

/// PullOptions::streams: at most this many data connections for one pull.
constexpr std::size_t kMaxStreams = 64;
/// PushOptions::streams, PullOptions::streams: chosen once the store's data
/// endpoint is known. One stream on loopback (the host's CPUs copy the
/// bytes whatever the number of connections: more are slower); elsewhere
/// 4 for a Blob or range of at least 64 MiB (a push: CRC32C, no notices),
/// else one. The choice is logged at INFO (blob -v) from 2 MiB on. No extra
/// round trip on loopback.
constexpr std::size_t kAutoStreams = 0;
/// Each stream of a pull carries at least this many bytes: a shorter range
/// runs over fewer streams (under 2 MiB: one).
constexpr std::uint64_t kMinStreamRange = 1 << 20;

/// Compression on the data connection (docs/CLIENT_API.md, "Compression on
/// the wire"): of the wire only, the store keeps the original bytes and
/// checksum. `automatic` is off towards a loopback address and elsewhere
/// compresses while compressing outruns the link; `zstd` compresses every
/// frame it shrinks; `none` sends the bytes as they are (sendfile). One
/// stream only: the parts of PushOptions::streams / PullOptions::streams > 1
/// and a push of unknown length (PushSource::stream: `zstd` is refused,
/// Errc::invalid_argument) go uncompressed. Result::compressed says whether
/// it was used. Needs a store of this release: an older one refuses a
/// compressed data connection ("reserved request bits are set"), one run
/// with `blobstored --compress none` refuses a compressed push and answers a
/// pull uncompressed.
enum class Compression { none, zstd, automatic };

struct PushOptions {
    /// "" : the Session's default store, or when it has none (or `tier` is
    /// given) the store the placement rule chooses: the locator's default
    /// store (blobstored --default-store), then a store of `tier` with room
    /// for the Blob, nearest tier first (docs/CLIENT_API.md, "Placement").
    std::string store;  ///< see also `tier` (last, so that aggregate initialisers keep their order)
    bool replace = false;  ///< overwrite an existing Blob of that name
    Progress progress;     ///< optional
    /// Continue an interrupted push of this name where the store's
    /// reservation stopped (the store keeps it for its reservation grace
    /// period), or start one when there is none. Only the missing bytes
    /// move; the source's first bytes are hashed again so that the checksum
    /// the store verifies covers the whole Blob. A resumable push that fails
    /// in transit (Errc::transfer_failed, timeout, unreachable) leaves the
    /// reservation for the next resume instead of aborting it.
    bool resume = false;
    /// The Blob's end-to-end checksum: CRC32C (fast; every store's default)
    /// or SHA-256 (a cryptographic digest, ~1.5 GB/s per core, computed on
    /// a helper thread where the bytes allow). nullopt: the store's default
    /// (blobstored --checksum). The Blob keeps it: stat, list and every
    /// whole-Blob pull use it.
    std::optional<ChecksumAlgorithm> checksum;
    /// Data connections the Blob is pushed over, 1 to kMaxStreams, or
    /// kAutoStreams (Errc::invalid_argument otherwise): for long links where one TCP
    /// connection's window limits the rate. The Blob is split into this many
    /// contiguous parts of at least kMinStreamRange bytes (fewer when it is
    /// shorter), received by the store concurrently and committed once, with
    /// the CRC32C combined from the parts' (Result::streams says how many
    /// ran). One stream is used for a producer source, with `resume`, and
    /// for a SHA-256 checksum (its digest does not combine). A broken stream
    /// continues its own part, up to 3 times.
    std::size_t streams = 1;
    /// PushSource::stream: the most the Blob may hold (0: what the store
    /// can hold); a stream that goes past it fails with Errc::out_of_space.
    std::uint64_t max_size = 0;
    /// A notice from the store when the transfer has ended (Notice.h):
    /// send needs SessionOptions::on_notice, queue is taken with
    /// Session::poll_notices(). A push with notices runs over one stream
    /// (the store reports whole transfers, not parts).
    NoticeMode notices = NoticeMode::none;
    /// The tier a push that names no store goes to (nullopt: any), chosen
    /// by the placement rule (`store` above); Errc::invalid_argument
    /// together with `store`. Errc::out_of_space when no store of the tier
    /// has room, naming each with its free bytes.
    std::optional<Tier> tier = std::nullopt;
    Compression compress = Compression::automatic;  ///< on the wire (Compression)
};

struct PullOptions {
    /// "" : the Session's default store, or when it has none the nearest
    /// store that holds the Blob.
    std::string store;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;  ///< 0: up to the end of the Blob
    /// Compare the whole-Blob checksum (in the Blob's algorithm) when the
    /// whole Blob was pulled (also when it was completed by a resume).
    bool verify = true;
    Progress progress;  ///< optional
    /// PullSink::file of a regular (or missing) file only, whole Blob only
    /// (offset and length 0): the file's bytes are taken as the Blob's first
    /// bytes and only the rest is pulled and appended in place; a failure
    /// keeps what the file holds for the next resume (otherwise a failed
    /// pull leaves the file as it was). Result::offset says where it
    /// continued. With `verify`, the file's bytes are part of the check.
    bool resume = false;
    /// Data connections the range is pulled over, 1 to kMaxStreams, or
    /// kAutoStreams (Errc::invalid_argument otherwise): for long links where one TCP
    /// connection's window limits the rate. The range is split into this
    /// many contiguous parts of at least kMinStreamRange bytes (fewer when
    /// it is shorter), each with its own ticket for the same committed
    /// version, so a Blob replaced meanwhile is never mixed: the pull then
    /// fails with Errc::blob_changed. The whole Blob's CRC32C is combined
    /// from the parts' and checked once before the destination becomes
    /// visible; a part whose connection breaks continues its own range on a
    /// new connection (up to 3 times). One stream is used with `resume`, a
    /// SHA-256 Blob pulled whole with `verify` (its digest does not combine),
    /// and a destination that takes bytes only in order (PullSink::consumer,
    /// descriptor, standard output, a FIFO, a device). More streams than
    /// SessionOptions::max_connections_per_endpoint wait for a connection.
    /// The same-host fast path, when taken, needs no streams.
    std::size_t streams = 1;
    /// PushSource::stream: the most the Blob may hold (0: what the store
    /// can hold); a stream that goes past it fails with Errc::out_of_space.
    std::uint64_t max_size = 0;
    /// A notice from the store when the transfer has ended, as for
    /// PushOptions::notices. A pull with notices goes over a data connection
    /// (never the same-host fast path, which the store does not see) and one
    /// stream.
    NoticeMode notices = NoticeMode::none;
    Compression compress = Compression::automatic;  ///< on the wire (Compression)
};

/// Session::copy(): Blobs copied from store to store, the bytes never
/// passing through this client (each destination fetches from its source:
/// BlobStore::fetch, a third-party transfer).
struct CopyOptions {
    /// The destination stores, at least one; a Blob is copied to each.
    std::vector<std::string> to;
    /// The source store; "" : for each Blob the nearest store that holds it
    /// and is not a destination.
    std::string from;
    /// Replace a Blob of the same name at a destination (otherwise
    /// Errc::already_exists there).
    bool overwrite = false;
    /// Fan-out as a chain: every destination after the first fetches from
    /// the one before it, so the source is read once and each store sends
    /// each Blob at most once; Blobs flow down the chain one after another.
    /// A Blob whose previous hop failed is fetched from the source instead.
    /// false: every destination fetches from the source.
    bool chain = true;
    /// Copies in flight per destination (1 to 64).
    std::size_t window = 4;
};

}  // namespace blobstreaming::client
