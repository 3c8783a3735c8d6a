#include <blobstreaming/transporter/Protocol.h>

#include <blobstreaming/common/LittleEndian.h>

#include <array>
#include <cstring>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <unistd.h>

namespace blobstreaming::protocol {
namespace {

std::error_code check_preamble(const std::uint8_t* in, std::string& why)
{
    if (le::get<std::uint32_t>(in) != kMagic) {
        why = "not a Blob Streaming data connection (bad magic)";
        return Errc::protocol_error;
    }
    if (in[4] != kVersion) {
        why = "unsupported protocol version " + std::to_string(in[4]) + " (this store speaks " +
              std::to_string(kVersion) + ")";
        return Errc::protocol_error;
    }
    return {};
}

}  // namespace

TicketId random_ticket()
{
    // RAND_bytes costs ~2.5 µs a call whatever its size up to a few KiB
    // (the DRBG's lock and set-up), more than the rest of a named
    // request's admission: each thread draws 256 tickets' bits at once.
    // Each ticket's bytes are wiped from the batch as they are handed out;
    // a forked child draws its own.
    struct Batch {
        std::array<unsigned char, 256 * sizeof(TicketId)> bytes{};
        std::size_t used = sizeof bytes;
        pid_t pid = 0;
        ~Batch() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
    };
    thread_local Batch batch;
    const pid_t pid = ::getpid();
    if (batch.used == batch.bytes.size() || batch.pid != pid) {
        if (RAND_bytes(batch.bytes.data(), static_cast<int>(batch.bytes.size())) != 1)
            throw Error(Errc::io_error, "cannot draw a random transfer ticket (OpenSSL RAND_bytes failed)");
        batch.used = 0;
        batch.pid = pid;
    }
    TicketId id{};
    std::memcpy(id.data(), batch.bytes.data() + batch.used, id.size());
    OPENSSL_cleanse(batch.bytes.data() + batch.used, id.size());
    batch.used += id.size();
    return id;
}

std::string ticket_tag(const TicketId& id)
{
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < 4; ++i) {
        out += kHex[id[i] >> 4];
        out += kHex[id[i] & 0xf];
    }
    return out;
}

// Request: magic u32 | version u8 | type u8 | flags u16 | ticket[16] | offset u64 | length u64
void encode(const Request& r, std::uint8_t (&out)[kRequestSize])
{
    std::memset(out, 0, kRequestSize);
    le::put<std::uint32_t>(out, kMagic);
    out[4] = kVersion;
    out[5] = static_cast<std::uint8_t>(r.type);
    le::put<std::uint16_t>(out + 6, static_cast<std::uint16_t>((r.streamed ? kFlagStreamed : 0) |
                                                               (r.compress ? kFlagCompress : 0) |
                                                               (r.compress_auto ? kFlagCompressAuto : 0)));
    std::memcpy(out + 8, r.ticket.data(), 16);
    le::put<std::uint64_t>(out + 24, r.offset);
    le::put<std::uint64_t>(out + 32, r.length);
}

std::error_code decode(const std::uint8_t (&in)[kRequestSize], Request& r, std::string& why)
{
    if (auto ec = check_preamble(in, why)) return ec;
    if (in[5] != static_cast<std::uint8_t>(FrameType::push) && in[5] != static_cast<std::uint8_t>(FrameType::pull)) {
        why = "unknown request type " + std::to_string(in[5]) + " (allowed: 1 push, 2 pull)";
        return Errc::protocol_error;
    }
    const auto flags = le::get<std::uint16_t>(in + 6);
    if ((flags & ~(kFlagStreamed | kFlagCompress | kFlagCompressAuto)) != 0) {
        why = "reserved request bits are set";
        return Errc::protocol_error;
    }
    r.streamed = (flags & kFlagStreamed) != 0;
    if (r.streamed && (in[5] != static_cast<std::uint8_t>(FrameType::push) || le::get<std::uint64_t>(in + 24) != 0)) {
        why = "only a push from offset 0 can be streamed";
        return Errc::protocol_error;
    }
    // Compression on the wire (Request::compress).
    r.compress = (flags & kFlagCompress) != 0;
    r.compress_auto = (flags & kFlagCompressAuto) != 0;
    if (r.compress && r.streamed) {
        why = "a push of unknown length cannot be compressed (flags streamed and compress together)";
        return Errc::protocol_error;
    }
    if (r.compress_auto && (!r.compress || in[5] != static_cast<std::uint8_t>(FrameType::pull))) {
        why = "the compress-auto request bit is for a compressed pull only";
        return Errc::protocol_error;
    }
    r.type = static_cast<FrameType>(in[5]);
    std::memcpy(r.ticket.data(), in + 8, 16);
    r.offset = le::get<std::uint64_t>(in + 24);
    r.length = le::get<std::uint64_t>(in + 32);
    return {};
}

void encode_chunk_header(std::uint32_t length, std::uint8_t (&out)[kChunkHeaderSize])
{
    le::put<std::uint32_t>(out, length);
}

std::error_code decode_chunk_header(const std::uint8_t (&in)[kChunkHeaderSize], std::uint32_t& length, std::string& why)
{
    length = le::get<std::uint32_t>(in);
    if (length > kMaxChunk) {
        why = "chunk of " + std::to_string(length) + " bytes in a streamed push exceeds " + std::to_string(kMaxChunk);
        return Errc::protocol_error;
    }
    return {};
}

// Trailer: algorithm u8 | reserved[7] | value[32] (zero beyond the algorithm's size)
void encode(const Trailer& t, std::uint8_t (&out)[kTrailerSize])
{
    std::memset(out, 0, kTrailerSize);
    out[0] = static_cast<std::uint8_t>(t.checksum.algorithm);
    std::memcpy(out + 8, t.checksum.value.data(), t.checksum.size());
}

std::error_code decode(const std::uint8_t (&in)[kTrailerSize], Trailer& t, std::string& why)
{
    const auto algorithm = checksum_algorithm_from_code(in[0]);
    if (!algorithm) {
        why = "unknown checksum algorithm " + std::to_string(in[0]) +
              " in the push trailer (allowed: 1 sha256, 2 crc32c)";
        return Errc::protocol_error;
    }
    t.checksum = Checksum{};
    t.checksum.algorithm = *algorithm;
    const std::size_t size = t.checksum.size();
    for (std::size_t i = 1; i < kTrailerSize; ++i)
        if (in[i] != 0 && (i < 8 || i >= 8 + size)) {
            why = "reserved bytes of the push trailer are set";
            return Errc::protocol_error;
        }
    std::memcpy(t.checksum.value.data(), in + 8, size);
    return {};
}

// Response: magic u32 | version u8 | type u8 | status u16 | message size u32 | checksum algorithm u8
//           | body encoding u8 | advertisement u8 | default checksum u8 | length u64 | blob size u64 | checksum value[32]
std::string encode(const Response& r)
{
    const std::size_t msg = std::min(r.message.size(), kMaxMessageSize);
    std::string out(kResponseHeaderSize + msg, '\0');
    auto* p = reinterpret_cast<std::uint8_t*>(out.data());
    le::put<std::uint32_t>(p, kMagic);
    p[4] = kVersion;
    p[5] = static_cast<std::uint8_t>(FrameType::response);
    le::put<std::uint16_t>(p + 6, static_cast<std::uint16_t>(r.status));
    le::put<std::uint32_t>(p + 8, static_cast<std::uint32_t>(msg));
    le::put<std::uint64_t>(p + 16, r.length);
    le::put<std::uint64_t>(p + 24, r.blob_size);
    p[13] = r.compressed ? 1 : 0;  // compression on the wire
    if (r.checksum) {
        p[12] = static_cast<std::uint8_t>(r.checksum->algorithm);
        std::memcpy(p + 32, r.checksum->value.data(), r.checksum->size());
    }
    std::memcpy(p + kResponseHeaderSize, r.message.data(), msg);
    return out;
}

std::error_code decode(const std::uint8_t (&in)[kResponseHeaderSize], Response& r, std::size_t& message_size,
                       std::string& why)
{
    if (auto ec = check_preamble(in, why)) return ec;
    if (in[5] != static_cast<std::uint8_t>(FrameType::response)) {
        why = "expected a response frame, got type " + std::to_string(in[5]);
        return Errc::protocol_error;
    }
    message_size = le::get<std::uint32_t>(in + 8);
    if (message_size > kMaxMessageSize) {
        why =
            "response message of " + std::to_string(message_size) + " bytes exceeds " + std::to_string(kMaxMessageSize);
        return Errc::protocol_error;
    }
    r.status = static_cast<Errc>(le::get<std::uint16_t>(in + 6));
    r.length = le::get<std::uint64_t>(in + 16);
    r.blob_size = le::get<std::uint64_t>(in + 24);
    if (in[13] > 1) {  // compression on the wire
        why = "unknown body encoding " + std::to_string(in[13]) + " in a response (allowed: 0 raw, 1 compressed frames)";
        return Errc::protocol_error;
    }
    r.compressed = in[13] == 1;
    r.checksum.reset();
    if (in[12] != 0) {
        const auto algorithm = checksum_algorithm_from_code(in[12]);
        if (!algorithm) {
            why = "unknown checksum algorithm " + std::to_string(in[12]) + " in a response";
            return Errc::protocol_error;
        }
        Checksum c;
        c.algorithm = *algorithm;
        std::memcpy(c.value.data(), in + 32, c.size());
        r.checksum = c;
    }
    return {};
}

// ---- Named requests (Protocol.h): header as a Request's preamble, then
// checksum algorithm u8 at 8, name length u16 at 12, offset u64 at 24,
// length u64 at 32; the name follows.
bool is_named(const std::uint8_t (&in)[kRequestSize]) noexcept { return in[5] == kNamedPush || in[5] == kNamedPull; }

std::string encode(const NamedRequest& r)
{
    std::string out(kRequestSize + r.name.size(), '\0');
    auto* p = reinterpret_cast<std::uint8_t*>(out.data());
    le::put<std::uint32_t>(p, kMagic);
    p[4] = kVersion;
    const bool push = r.type == FrameType::push;
    p[5] = push ? kNamedPush : kNamedPull;
    le::put<std::uint16_t>(p + 6, push && r.overwrite ? kNamedFlagOverwrite : 0);
    p[8] = push ? static_cast<std::uint8_t>(r.checksum) : 0;
    le::put<std::uint16_t>(p + 12, static_cast<std::uint16_t>(r.name.size()));
    le::put<std::uint64_t>(p + 24, r.offset);
    le::put<std::uint64_t>(p + 32, r.length);
    std::memcpy(p + kRequestSize, r.name.data(), r.name.size());
    return out;
}

std::error_code decode_named(const std::uint8_t (&in)[kRequestSize], NamedRequest& r, std::size_t& name_size,
                             std::string& why)
{
    if (auto ec = check_preamble(in, why)) return ec;
    if (!is_named(in)) {
        why = "not a named request (type " + std::to_string(in[5]) + ")";
        return Errc::protocol_error;
    }
    const bool push = in[5] == kNamedPush;
    const auto flags = le::get<std::uint16_t>(in + 6);
    bool reserved = (flags & ~(push ? kNamedFlagOverwrite : 0)) != 0;
    for (std::size_t i = 9; i < 24; ++i)
        if (i != 12 && i != 13 && in[i] != 0) reserved = true;
    if (reserved) {
        why = "reserved bits of a named request are set";
        return Errc::protocol_error;
    }
    r.type = push ? FrameType::push : FrameType::pull;
    r.overwrite = (flags & kNamedFlagOverwrite) != 0;
    if (push) {
        const auto algorithm = checksum_algorithm_from_code(in[8]);
        if (!algorithm) {
            why = "unknown checksum algorithm " + std::to_string(in[8]) +
                  " in a named push (allowed: 1 sha256, 2 crc32c)";
            return Errc::protocol_error;
        }
        r.checksum = *algorithm;
    } else if (in[8] != 0) {
        why = "a named pull names a checksum algorithm (" + std::to_string(in[8]) + "; allowed: 0)";
        return Errc::protocol_error;
    }
    name_size = le::get<std::uint16_t>(in + 12);
    if (name_size == 0 || name_size > kMaxNamedName) {
        why = "named request with a name of " + std::to_string(name_size) + " bytes (allowed: 1 to " +
              std::to_string(kMaxNamedName) + ")";
        return Errc::protocol_error;
    }
    r.offset = le::get<std::uint64_t>(in + 24);
    r.length = le::get<std::uint64_t>(in + 32);
    if (push && r.offset != 0) {
        why = "a named push starts at offset 0, not " + std::to_string(r.offset);
        return Errc::protocol_error;
    }
    return {};
}

void advertise(std::string& frame, const Advertisement& what)
{
    if (frame.size() < kResponseHeaderSize) return;
    frame[14] = static_cast<char>(what.named_requests ? 1 : 0);
    frame[15] = static_cast<char>(what.default_checksum ? static_cast<std::uint8_t>(*what.default_checksum) : 0);
}

Advertisement advertised(const std::uint8_t (&in)[kResponseHeaderSize])
{
    Advertisement out;
    out.named_requests = (in[14] & 1) != 0;
    out.default_checksum = checksum_algorithm_from_code(in[15]);
    return out;
}

std::string encode_commit_time(std::int64_t nanoseconds)
{
    std::string out(kNamedPullMessageSize, '\0');
    le::put<std::uint64_t>(reinterpret_cast<std::uint8_t*>(out.data()), static_cast<std::uint64_t>(nanoseconds));
    return out;
}

std::int64_t decode_commit_time(const std::string& message)
{
    if (message.size() != kNamedPullMessageSize) return 0;
    return static_cast<std::int64_t>(le::get<std::uint64_t>(reinterpret_cast<const std::uint8_t*>(message.data())));
}
// ---- end of named requests

}  // namespace blobstreaming::protocol
