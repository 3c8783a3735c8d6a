#include <blobstreaming/transporter/Protocol.h>

#include <cstring>

#include <openssl/rand.h>

namespace blobstreaming::protocol {
namespace {

void put_u16(std::uint8_t* p, std::uint16_t v) { p[0] = v & 0xff; p[1] = static_cast<std::uint8_t>(v >> 8); }
std::uint16_t get_u16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | p[1] << 8); }
void put_u32(std::uint8_t* p, std::uint32_t v)
{
    for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get_u32(const std::uint8_t* p)
{
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t{p[i]} << (8 * i);
    return v;
}
void put_u64(std::uint8_t* p, std::uint64_t v)
{
    for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint64_t get_u64(const std::uint8_t* p)
{
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
    return v;
}

std::error_code check_preamble(const std::uint8_t* in, std::string& why)
{
    if (get_u32(in) != kMagic) {
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
    TicketId id{};
    if (RAND_bytes(id.data(), static_cast<int>(id.size())) != 1)
        throw Error(Errc::io_error, "cannot draw a random transfer ticket (OpenSSL RAND_bytes failed)");
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

// Request: magic u32 | version u8 | type u8 | reserved u16 | ticket[16] | offset u64 | length u64
void encode(const Request& r, std::uint8_t (&out)[kRequestSize])
{
    std::memset(out, 0, kRequestSize);
    put_u32(out, kMagic);
    out[4] = kVersion;
    out[5] = static_cast<std::uint8_t>(r.type);
    std::memcpy(out + 8, r.ticket.data(), 16);
    put_u64(out + 24, r.offset);
    put_u64(out + 32, r.length);
}

std::error_code decode(const std::uint8_t (&in)[kRequestSize], Request& r, std::string& why)
{
    if (auto ec = check_preamble(in, why)) return ec;
    if (in[5] != static_cast<std::uint8_t>(FrameType::push) &&
        in[5] != static_cast<std::uint8_t>(FrameType::pull)) {
        why = "unknown request type " + std::to_string(in[5]) + " (allowed: 1 push, 2 pull)";
        return Errc::protocol_error;
    }
    if (get_u16(in + 6) != 0) {
        why = "reserved request bits are set";
        return Errc::protocol_error;
    }
    r.type = static_cast<FrameType>(in[5]);
    std::memcpy(r.ticket.data(), in + 8, 16);
    r.offset = get_u64(in + 24);
    r.length = get_u64(in + 32);
    return {};
}

// Response: magic u32 | version u8 | type u8 | status u16 | message size u32 | reserved u32
//           | length u64 | blob size u64 | digest[32]
std::string encode(const Response& r)
{
    const std::size_t msg = std::min(r.message.size(), kMaxMessageSize);
    std::string out(kResponseHeaderSize + msg, '\0');
    auto* p = reinterpret_cast<std::uint8_t*>(out.data());
    put_u32(p, kMagic);
    p[4] = kVersion;
    p[5] = static_cast<std::uint8_t>(FrameType::response);
    put_u16(p + 6, static_cast<std::uint16_t>(r.status));
    put_u32(p + 8, static_cast<std::uint32_t>(msg));
    put_u64(p + 16, r.length);
    put_u64(p + 24, r.blob_size);
    std::memcpy(p + 32, r.digest.data(), 32);
    std::memcpy(p + kResponseHeaderSize, r.message.data(), msg);
    return out;
}

std::error_code decode(const std::uint8_t (&in)[kResponseHeaderSize], Response& r,
                       std::size_t& message_size, std::string& why)
{
    if (auto ec = check_preamble(in, why)) return ec;
    if (in[5] != static_cast<std::uint8_t>(FrameType::response)) {
        why = "expected a response frame, got type " + std::to_string(in[5]);
        return Errc::protocol_error;
    }
    message_size = get_u32(in + 8);
    if (message_size > kMaxMessageSize) {
        why = "response message of " + std::to_string(message_size) + " bytes exceeds " +
              std::to_string(kMaxMessageSize);
        return Errc::protocol_error;
    }
    r.status = static_cast<Errc>(get_u16(in + 6));
    r.length = get_u64(in + 16);
    r.blob_size = get_u64(in + 24);
    std::memcpy(r.digest.data(), in + 32, 32);
    return {};
}

}  // namespace blobstreaming::protocol
