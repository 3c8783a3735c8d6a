#pragma once
/// Compression of a data connection's body (docs/PROTOCOL.md, "Compression
/// on the wire"): the bytes of a push or a pull travel as frames, each
/// carrying its wire length and the number of Blob bytes it holds, zstd
/// (libzstd) or raw. Only the wire is compressed: the sender checksums and
/// the receiver writes the uncompressed bytes, so stores keep the original
/// bytes and the end-to-end checksum is over them.
///
/// Frame: kind u8 (1 zstd, 2 raw) · reserved[3] = 0 · wire length u32 ·
/// bytes u32 · `wire length` bytes. A zstd frame is one zstd frame that
/// decompresses to exactly `bytes` bytes; a raw frame's wire length equals
/// `bytes`. 1 ≤ bytes ≤ kMaxFrame.

#include <blobstreaming/transporter/DataIo.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace blobstreaming::wire {

/// What a transfer asks for: `none` (the plain body; sendfile and the other
/// zero-copy paths stay), `zstd` (every frame compressed, raw only where
/// zstd would not shrink it), `automatic` (off towards a loopback address;
/// elsewhere frame by frame, compressed while the measured compression rate
/// outruns the measured link rate).
enum class CompressMode : std::uint8_t { none, zstd, automatic };

/// "none", "zstd", "auto".
const char* to_string(CompressMode mode) noexcept;
/// nullopt for anything but "none", "zstd", "auto".
std::optional<CompressMode> compress_mode_from(std::string_view text) noexcept;

enum class FrameKind : std::uint8_t { zstd = 1, raw = 2 };

struct FrameHeader {
    FrameKind kind = FrameKind::raw;
    std::uint32_t wire = 0;   ///< bytes of the frame after its header
    std::uint32_t bytes = 0;  ///< Blob bytes it holds
};
inline constexpr std::size_t kFrameHeaderSize = 12;
/// The most Blob bytes one frame holds: a receiver's buffer is bounded by it.
inline constexpr std::uint32_t kMaxFrame = std::uint32_t{1} << 20;
/// zstd level 1: several hundred MB/s per core, ~2x on CT pixel data.
inline constexpr int kLevel = 1;
/// The most wire bytes a frame of kMaxFrame bytes may take (zstd's bound).
std::size_t max_wire() noexcept;

void encode(const FrameHeader& header, std::uint8_t (&out)[kFrameHeaderSize]);
/// Errc::protocol_error with `why` for an unknown kind, reserved bytes set,
/// or lengths out of range.
std::error_code decode(const std::uint8_t (&in)[kFrameHeaderSize], FrameHeader& header, std::string& why);

/// Encodes Blob bytes into frames. One per transfer; single-threaded.
class FrameEncoder {
public:
    FrameEncoder();
    ~FrameEncoder();
    FrameEncoder(const FrameEncoder&) = delete;
    FrameEncoder& operator=(const FrameEncoder&) = delete;

    /// Appends the frame of `n` bytes (1..kMaxFrame) at `data` to `out`:
    /// zstd when `compress` and it comes out smaller, else raw. Returns the
    /// kind written. Throws Error(io_error) when libzstd fails.
    FrameKind encode(const std::uint8_t* data, std::size_t n, bool compress, OutputBuffer& out);

private:
    ZSTD_CCtx_s* cctx_;
    std::vector<std::uint8_t> scratch_;
};

/// Reads a body of frames from a Channel and writes the Blob bytes they
/// hold straight into the receiver's windows (a reservation, a sink): a
/// zstd frame is read whole (at most max_wire() bytes), then decompressed
/// into the windows; a raw frame is read into them. Single-threaded.
class FrameDecoder {
public:
    FrameDecoder();
    ~FrameDecoder();
    FrameDecoder(const FrameDecoder&) = delete;
    FrameDecoder& operator=(const FrameDecoder&) = delete;

    /// One step: reads (part of) the next frame's header or compressed
    /// bytes, or writes up to `room` of its Blob bytes at `dst`
    /// (`produced`). `left` is what the body still holds: a frame that
    /// holds more is corrupt. done: something moved (`produced` may be 0),
    /// call again; blocked, eof, error as the Channel said (partial
    /// transfer rules of DataIo.h). A corrupt frame (a header that does not
    /// decode, zstd data that fails or holds other than its announced
    /// length) is error EBADMSG with the reason in text(): nothing more of
    /// the body can be trusted.
    IoResult step(Channel& channel, std::uint8_t* dst, std::size_t room, std::uint64_t left, std::size_t& produced);

    /// A frame is under way (its header is read, not all its bytes are out).
    bool in_frame() const noexcept { return state_ != State::header || header_.got() > 0; }
    /// Bytes read from the wire so far (headers included).
    std::uint64_t wire_bytes() const noexcept { return wire_; }

private:
    enum class State { header, payload, inflate, raw };
    IoResult corrupt(const std::string& why) const;

    ZSTD_DCtx_s* dctx_;
    State state_ = State::header;
    FrameReader header_{kFrameHeaderSize};
    FrameReader payload_;
    std::size_t in_pos_ = 0;     ///< of payload_: consumed by zstd
    std::uint32_t frame_ = 0;    ///< Blob bytes of the current frame
    std::uint32_t left_ = 0;     ///< of them, not written yet
    std::uint64_t wire_ = 0;
};

/// Whether the next frame is compressed. `none` never, `zstd` always;
/// `automatic` compresses the first frame (to measure it) and then while
/// min(compression rate, link rate × ratio) beats the link rate by 10 %,
/// with the link rate from the connection's TCP_INFO delivery rate (a
/// sample limited by the sender counts as a lower bound) and the rate and
/// ratio from the frames compressed so far; every 16th frame goes the other
/// way, to keep both figures current. Single-threaded.
class CompressionPolicy {
public:
    explicit CompressionPolicy(CompressMode mode) : mode_(mode) {}

    /// Decides for the next frame; `socket` is the connection (TCP_INFO).
    bool compress_next(int socket);
    /// A frame of `bytes` was encoded to `wire` bytes in `seconds`
    /// (compressed: it was given to zstd).
    void encoded(std::size_t bytes, std::size_t wire, double seconds, bool compressed) noexcept;

    CompressMode mode() const noexcept { return mode_; }
    /// The figures the last decision was made with (logs, tests).
    double link_rate() const noexcept { return link_rate_; }
    double compress_rate() const noexcept { return compress_rate_; }
    double ratio() const noexcept { return ratio_; }

private:
    CompressMode mode_;
    double link_rate_ = 0;      ///< bytes/s on the wire, 0: unknown
    double compress_rate_ = 0;  ///< Blob bytes/s through zstd, 0: not measured
    double ratio_ = 0;          ///< Blob bytes per wire byte
    unsigned since_probe_ = 0;
    bool compressing_ = true;  ///< the last decision
};

/// The socket's peer is a loopback address (127.0.0.0/8, ::1, or
/// ::ffff:127.0.0.0/104): false when it cannot be told.
bool peer_is_loopback(int socket) noexcept;
/// Whether `host` (a name or a literal) resolves to a loopback address.
bool host_is_loopback(const std::string& host) noexcept;
/// The connection's delivery rate in bytes/s (TCP_INFO), 0 when unknown;
/// `app_limited` (optional): the sample was limited by the sender, not the
/// link.
double delivery_rate(int socket, bool* app_limited = nullptr) noexcept;

}  // namespace blobstreaming::wire
