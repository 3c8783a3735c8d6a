#pragma once
/// The data-plane wire format (docs/PROTOCOL.md). Fixed-size binary frames,
/// little-endian, so that both ends frame with two reads and no parser.
///
/// On one data connection, transfers follow one another:
///   PUSH: Request{push} · `length` raw bytes · Trailer  ->  Response
///   PULL: Request{pull}                                 ->  Response · `length` raw bytes
///   PUSH of unknown length: Request{push, streamed} · chunks (u32 length ·
///         bytes), the last of length 0 · Trailer            ->  Response
/// Every Request carries a single-use ticket issued on the control plane;
/// a refused Request gets an error Response and the connection is closed.

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace blobstreaming::protocol {

inline constexpr std::uint32_t kMagic = 0x31445342;  ///< "BSD1" on the wire
/// 2: the trailer and the Response carry the checksum's algorithm (1 had
/// SHA-256 only).
inline constexpr std::uint8_t kVersion = 2;

using TicketId = std::array<std::uint8_t, 16>;

/// A fresh random ticket (OpenSSL RAND_bytes).
TicketId random_ticket();
/// The first 8 hex digits, enough to follow a ticket in logs without
/// writing the secret.
std::string ticket_tag(const TicketId& id);

enum class FrameType : std::uint8_t { push = 1, pull = 2, response = 3 };

/// Client -> store: starts one transfer.
struct Request {
    FrameType type = FrameType::pull;
    TicketId ticket{};
    std::uint64_t offset = 0;
    /// The bytes that follow (push) or are asked for (pull); of a streamed
    /// push, the most it may send (the ticket's maximum).
    std::uint64_t length = 0;
    /// A push whose length is known only at its end: the body is a sequence
    /// of chunks (ChunkHeader), ended by one of length 0 (flag bit 0 of the
    /// Request's u16 at byte 6; a store of an earlier release refuses it as
    /// "reserved request bits are set"). Push only, offset 0.
    bool streamed = false;
    // --- Compression on the wire (WireCompression.h; docs/PROTOCOL.md,
    // "Compression on the wire"): flag bits 1 and 2 of the u16 at byte 6. A
    // store of an earlier release refuses them ("reserved request bits are
    // set"). Not with `streamed`.
    /// Push: the body is compressed frames. Pull: the client takes them
    /// (the Response says whether they come).
    bool compress = false;
    /// Pull with `compress`: the store compresses a frame only where that
    /// beats its link (CompressMode::automatic), else each frame.
    bool compress_auto = false;
    // --- end of compression
};
inline constexpr std::uint16_t kFlagStreamed = 1;
inline constexpr std::uint16_t kFlagCompress = 2;      ///< compression (see Request::compress)
inline constexpr std::uint16_t kFlagCompressAuto = 4;  ///< compression (see Request::compress_auto)
inline constexpr std::size_t kRequestSize = 40;

void encode(const Request& request, std::uint8_t (&out)[kRequestSize]);
/// Errc::protocol_error with `why` (bad magic, version, or type) on garbage.
std::error_code decode(const std::uint8_t (&in)[kRequestSize], Request& request, std::string& why);

/// Before each chunk of a streamed push: its length, u32 little-endian.
/// Length 0 ends the body; the Trailer follows. A chunk may have any length
/// up to kMaxChunk: the receiver reads it straight into the reservation, so
/// its memory does not depend on it.
inline constexpr std::size_t kChunkHeaderSize = 4;
inline constexpr std::uint32_t kMaxChunk = std::uint32_t{1} << 30;
void encode_chunk_header(std::uint32_t length, std::uint8_t (&out)[kChunkHeaderSize]);
/// Errc::protocol_error with `why` for a length above kMaxChunk.
std::error_code decode_chunk_header(const std::uint8_t (&in)[kChunkHeaderSize], std::uint32_t& length,
                                    std::string& why);

/// Client -> store after the bytes of a push: the checksum of the whole
/// Blob, in the algorithm the push ticket names.
struct Trailer {
    Checksum checksum;
};
inline constexpr std::size_t kTrailerSize = 40;

void encode(const Trailer& trailer, std::uint8_t (&out)[kTrailerSize]);
/// Errc::protocol_error with `why` (unknown algorithm, reserved bytes set).
std::error_code decode(const std::uint8_t (&in)[kTrailerSize], Trailer& trailer, std::string& why);

/// Store -> client: the outcome of a push (the end-to-end acknowledgement:
/// sent after the commit is durable) or the start of a pull's bytes.
struct Response {
    Errc status = Errc::ok;
    std::uint64_t length = 0;     ///< push: bytes received; pull: bytes that follow
    std::uint64_t blob_size = 0;  ///< size of the whole Blob
    /// The whole Blob's checksum (a pull, or a committed push); none in an
    /// error Response.
    std::optional<Checksum> checksum;
    std::string message;  ///< why, when status != ok
    /// Compression on the wire: a pull's bytes follow as compressed frames
    /// (byte 13 = 1; 0: raw, as from a store of an earlier release).
    bool compressed = false;
};
inline constexpr std::size_t kResponseHeaderSize = 64;
inline constexpr std::size_t kMaxMessageSize = 4096;

/// Header followed by the message bytes (truncated to kMaxMessageSize).
std::string encode(const Response& response);
/// Decodes the fixed header; `message_size` bytes of message follow it.
std::error_code decode(const std::uint8_t (&in)[kResponseHeaderSize], Response& response, std::size_t& message_size,
                       std::string& why);

// ---- Named requests on a pooled connection (docs/PROTOCOL.md, "Named
// requests"). One block, appended: a connection that presented a valid
// ticket once may start later transfers by naming the Blob instead of
// presenting a ticket; the store checks the permission and binds the
// transfer to one version exactly as its control plane issues a ticket.
// A store of an earlier release answers such a Request protocol_error
// ("unknown request type"), and never advertises that it takes them.

/// Request types of a named request (the byte at offset 5, as a Request's).
inline constexpr std::uint8_t kNamedPush = 4;
inline constexpr std::uint8_t kNamedPull = 5;
/// Named request flags (the u16 at offset 6): a push may replace a
/// committed Blob of its name.
inline constexpr std::uint16_t kNamedFlagOverwrite = 1;

/// Client -> store: a push or pull named by its Blob. 40 bytes of header
/// (magic · version · type u8 (4 push, 5 pull) · flags u16 · checksum
/// algorithm u8 (push: the one the client checksums with; pull: 0) ·
/// reserved[3] · name length u16 · reserved[10] · offset u64 · length u64)
/// followed by the name (1 to kMaxNamedName bytes).
struct NamedRequest {
    FrameType type = FrameType::pull;  ///< push or pull
    std::string name;
    std::uint64_t offset = 0;  ///< push: 0
    /// Push: the Blob's size; pull: the bytes asked for (0: to the end).
    std::uint64_t length = 0;
    bool overwrite = false;                 ///< push only
    ChecksumAlgorithm checksum = kDefaultChecksum;  ///< push only: never "the store's default"
};
inline constexpr std::size_t kMaxNamedName = 1024;
/// Whether the first byte of a Request frame's type (offset 5) is a named one.
bool is_named(const std::uint8_t (&in)[kRequestSize]) noexcept;
/// The header and the name, ready to send.
std::string encode(const NamedRequest& request);
/// Decodes the header; `name_size` bytes of name follow. protocol_error
/// with `why` on garbage (reserved bytes, an unknown algorithm, a name
/// length of 0 or above kMaxNamedName, a push from another offset than 0).
std::error_code decode_named(const std::uint8_t (&in)[kRequestSize], NamedRequest& request, std::size_t& name_size,
                             std::string& why);

/// What a store of this release says in every Response on a connection
/// that presented a valid ticket (bytes 14 and 15 of the Response header,
/// reserved before and ignored by earlier clients): bit 0 of byte 14, named
/// requests are taken on this connection; byte 15, the checksum code of the
/// store's default algorithm.
struct Advertisement {
    bool named_requests = false;
    std::optional<ChecksumAlgorithm> default_checksum;
};
/// Writes `what` into the encoded Response `frame` (at least its header).
void advertise(std::string& frame, const Advertisement& what);
/// Reads it from a Response header (nothing from an earlier store).
Advertisement advertised(const std::uint8_t (&in)[kResponseHeaderSize]);
/// The message of an ok Response to a named pull: the commit time of the
/// version served, 8 bytes little-endian, nanoseconds since the epoch (0: a
/// version the store is still receiving).
inline constexpr std::size_t kNamedPullMessageSize = 8;
std::string encode_commit_time(std::int64_t nanoseconds);
std::int64_t decode_commit_time(const std::string& message);
// ---- end of named requests

}  // namespace blobstreaming::protocol
