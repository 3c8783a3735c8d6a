#include <blobstreaming/transporter/WireCompression.h>

#define BOOST_TEST_MODULE WireCompression
#include "SocketPair.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/LittleEndian.h>
#include <blobstreaming/common/UniqueFd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace blobstreaming;
using namespace blobstreaming::wire;

// The frames of a compressed body (docs/PROTOCOL.md, "Compression on the
// wire"): what the sender writes, what the receiver accepts, and how it
// refuses a corrupt frame.

namespace {

/// CT-like: 16-bit samples of a smooth image with a little noise, the
/// background at -1024 (compresses ~2-3x with zstd -1).
std::vector<std::uint8_t> ct_like(std::size_t bytes, unsigned seed = 1)
{
    std::vector<std::uint8_t> out(bytes);
    std::mt19937 noise(seed);
    for (std::size_t i = 0; i + 1 < bytes; i += 2) {
        const std::size_t x = (i / 2) % 512, y = (i / 2) / 512 % 512;
        const long dx = static_cast<long>(x) - 256, dy = static_cast<long>(y) - 256;
        const bool body = dx * dx + dy * dy < 200 * 200;
        const std::int16_t v =
            body ? static_cast<std::int16_t>(40 + static_cast<int>(x % 37) + static_cast<int>(noise() % 8)) : -1024;
        le::put<std::uint16_t>(out.data() + i, static_cast<std::uint16_t>(v));
    }
    return out;
}

std::vector<std::uint8_t> random_bytes(std::size_t bytes, unsigned seed = 2)
{
    std::vector<std::uint8_t> out(bytes);
    std::mt19937 g(seed);
    for (auto& b : out) b = static_cast<std::uint8_t>(g());
    return out;
}

/// The wire form of `frames` (each a piece of the body) encoded as asked.
std::string encode_body(const std::vector<std::vector<std::uint8_t>>& frames, bool compress)
{
    FrameEncoder encoder;
    OutputBuffer out;
    for (const auto& f : frames) encoder.encode(f.data(), f.size(), compress, out);
    // Drain into a socket pair, read back: the buffer's bytes.
    test::SocketPair pair;
    Channel channel(pair.a.get());
    std::string wire;
    char buffer[64 << 10];
    for (int rounds = 0; !out.empty(); ++rounds) {
        BOOST_REQUIRE(rounds < 100000);
        const IoResult r = out.drain(channel);
        BOOST_REQUIRE(r.done() || r.blocked());
        for (;;) {
            const ssize_t n = ::read(pair.b.get(), buffer, sizeof buffer);
            if (n <= 0) break;
            wire.append(buffer, static_cast<std::size_t>(n));
        }
    }
    return wire;
}

struct Decoded {
    std::vector<std::uint8_t> bytes;
    IoResult last;  ///< what ended it: done (all `total` bytes), or the failure
    std::uint64_t wire = 0;
};

/// Feeds `wire` to a FrameDecoder expecting `total` bytes, through windows
/// of at most `window` bytes.
Decoded decode_body(const std::string& wire, std::uint64_t total, std::size_t window = 100000)
{
    test::SocketPair pair;
    Channel channel(pair.b.get());
    FrameDecoder decoder;
    Decoded out;
    out.bytes.resize(total);
    std::size_t sent = 0, done = 0;
    for (int rounds = 0; done < total; ++rounds) {
        BOOST_REQUIRE(rounds < 1000000);
        if (sent < wire.size()) {
            const ssize_t n = ::write(pair.a.get(), wire.data() + sent, wire.size() - sent);
            if (n > 0) sent += static_cast<std::size_t>(n);
        } else if (pair.a) {
            pair.a.reset();  // all written: the peer's end
        }
        std::size_t produced = 0;
        const std::size_t room = std::min<std::size_t>(window, total - done);
        const IoResult r = decoder.step(channel, out.bytes.data() + done, room, total - done, produced);
        done += produced;
        if (r.done() || r.blocked()) continue;
        out.last = r;
        out.bytes.resize(done);
        out.wire = decoder.wire_bytes();
        return out;
    }
    out.last = IoResult::moved(done);
    out.wire = decoder.wire_bytes();
    return out;
}

void check_corrupt(const Decoded& d, const std::string& text)
{
    BOOST_TEST(d.last.failed());
    BOOST_TEST(d.last.error_number() == EBADMSG);
    BOOST_TEST(d.last.text().find(text) != std::string::npos, "reason: " << d.last.text());
}

std::uint32_t wire_length_at(const std::string& wire, std::size_t frame_start)
{
    return le::get<std::uint32_t>(reinterpret_cast<const std::uint8_t*>(wire.data()) + frame_start + 4);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_header_carries_kind_wire_length_and_bytes)
{
    std::uint8_t raw[kFrameHeaderSize];
    encode(FrameHeader{FrameKind::zstd, 1234, 5678}, raw);
    FrameHeader h;
    std::string why;
    BOOST_TEST(!decode(raw, h, why));
    BOOST_TEST((h.kind == FrameKind::zstd));
    BOOST_TEST(h.wire == 1234u);
    BOOST_TEST(h.bytes == 5678u);
}

BOOST_AUTO_TEST_CASE(a_header_out_of_range_is_refused_with_its_reason)
{
    const auto refused = [](FrameHeader h, std::uint8_t poke_at, std::uint8_t poke, const std::string& text) {
        std::uint8_t raw[kFrameHeaderSize];
        encode(h, raw);
        if (poke_at < kFrameHeaderSize) raw[poke_at] = poke;
        FrameHeader out;
        std::string why;
        BOOST_TEST((decode(raw, out, why) == make_error_code(Errc::protocol_error)));
        BOOST_TEST(why.find(text) != std::string::npos, "why: " << why);
    };
    refused({FrameKind::zstd, 10, 10}, 0, 7, "unknown compressed frame kind 7 (allowed: 1 zstd, 2 raw)");
    refused({FrameKind::zstd, 10, 10}, 2, 1, "reserved bytes");
    refused({FrameKind::zstd, 10, 0}, 99, 0, "announces 0 bytes (allowed: 1 to 1048576)");
    refused({FrameKind::raw, kMaxFrame + 1, kMaxFrame + 1}, 99, 0, "announces 1048577 bytes");
    refused({FrameKind::raw, 9, 10}, 99, 0, "a raw frame of 10 bytes announces 9 bytes on the wire");
    refused({FrameKind::zstd, 0, 10}, 99, 0, "a zstd frame announces 0 bytes on the wire");
}

BOOST_AUTO_TEST_CASE(ct_like_data_round_trips_compressed_and_shrinks)
{
    const auto ct = ct_like(3 * kMaxFrame + 12345);
    std::vector<std::vector<std::uint8_t>> frames;
    for (std::size_t at = 0; at < ct.size(); at += kMaxFrame)
        frames.emplace_back(ct.begin() + static_cast<long>(at),
                            ct.begin() + static_cast<long>(std::min(ct.size(), at + kMaxFrame)));
    const std::string wire = encode_body(frames, true);
    BOOST_TEST_MESSAGE("CT-like: " << ct.size() << " bytes, " << wire.size() << " on the wire");
    BOOST_TEST(wire.size() * 3 < ct.size() * 2);  // at least 1.5x
    for (std::size_t window : {std::size_t{1000}, std::size_t{1} << 20}) {
        const Decoded d = decode_body(wire, ct.size(), window);
        BOOST_TEST(d.last.done());
        BOOST_TEST(d.wire == wire.size());
        BOOST_TEST((d.bytes == ct));
    }
}

BOOST_AUTO_TEST_CASE(bytes_zstd_cannot_shrink_go_raw_and_mix_with_zstd_frames)
{
    const auto noise = random_bytes(70000);
    const auto ct = ct_like(90000);
    const std::string wire = encode_body({noise, ct}, true);
    BOOST_TEST(wire[0] == static_cast<char>(FrameKind::raw));
    BOOST_TEST(wire_length_at(wire, 0) == noise.size());
    BOOST_TEST(wire[kFrameHeaderSize + noise.size()] == static_cast<char>(FrameKind::zstd));
    const Decoded d = decode_body(wire, noise.size() + ct.size(), 4096);
    BOOST_TEST(d.last.done());
    std::vector<std::uint8_t> both(noise);
    both.insert(both.end(), ct.begin(), ct.end());
    BOOST_TEST((d.bytes == both));
}

BOOST_AUTO_TEST_CASE(uncompressed_frames_are_raw)
{
    const auto ct = ct_like(5000);
    const std::string wire = encode_body({ct}, false);
    BOOST_TEST(wire.size() == kFrameHeaderSize + ct.size());
    BOOST_TEST(wire[0] == static_cast<char>(FrameKind::raw));
    BOOST_TEST((decode_body(wire, ct.size()).bytes == ct));
}

BOOST_AUTO_TEST_CASE(a_zstd_frame_with_damaged_bytes_is_corrupt)
{
    const auto ct = ct_like(200000);
    std::string wire = encode_body({ct}, true);
    BOOST_REQUIRE(wire[0] == static_cast<char>(FrameKind::zstd));
    // Damage inside the data may decode to other bytes (no zstd checksum:
    // the end-to-end checksum catches that); damage to its frame does not.
    wire[kFrameHeaderSize] = static_cast<char>(wire[kFrameHeaderSize] ^ 0x5a);
    check_corrupt(decode_body(wire, ct.size()), "a zstd frame does not decompress: ");
}

BOOST_AUTO_TEST_CASE(a_zstd_frame_that_holds_fewer_bytes_than_announced_is_corrupt)
{
    const auto ct = ct_like(200000);
    std::string wire = encode_body({ct}, true);
    // The header says 1000 bytes more than the zstd frame holds.
    le::put<std::uint32_t>(reinterpret_cast<std::uint8_t*>(wire.data()) + 8,
                           static_cast<std::uint32_t>(ct.size() + 1000));
    check_corrupt(decode_body(wire, ct.size() + 1000), "a zstd frame announced as 201000 bytes ends after 200000");
}

BOOST_AUTO_TEST_CASE(a_zstd_frame_that_holds_more_bytes_than_announced_is_corrupt)
{
    const auto ct = ct_like(200000);
    std::string wire = encode_body({ct}, true);
    le::put<std::uint32_t>(reinterpret_cast<std::uint8_t*>(wire.data()) + 8, 199000);
    check_corrupt(decode_body(wire, 199000), "a zstd frame announced as 199000 bytes holds more");
}

BOOST_AUTO_TEST_CASE(a_frame_past_the_end_of_the_body_is_corrupt)
{
    const auto ct = ct_like(20000);
    const std::string wire = encode_body({ct}, true);
    check_corrupt(decode_body(wire, 10000), "a compressed frame of 20000 bytes goes past the end of the body (10000 "
                                            "bytes left)");
}

BOOST_AUTO_TEST_CASE(a_truncated_body_is_an_early_end_not_corruption)
{
    const auto ct = ct_like(200000);
    const std::string wire = encode_body({ct}, true);
    const Decoded d = decode_body(wire.substr(0, wire.size() / 2), ct.size());
    BOOST_TEST(d.last.eof());
    BOOST_TEST(d.bytes.empty());  // a zstd frame is decoded only once it is all in
}

BOOST_AUTO_TEST_CASE(the_policy_follows_its_mode_and_measures)
{
    CompressionPolicy none(CompressMode::none), zstd(CompressMode::zstd), automatic(CompressMode::automatic);
    BOOST_TEST(!none.compress_next(-1));
    BOOST_TEST(zstd.compress_next(-1));
    BOOST_TEST(automatic.compress_next(-1));  // the first frame: to measure it
    // Incompressible: a ratio of 1 is not worth the time.
    automatic.encoded(1000000, 1000000, 0.002, true);
    BOOST_TEST(!automatic.compress_next(-1));
    BOOST_TEST(automatic.ratio() == 1.0);
    // A compressible stream, no link rate known (no socket): compress.
    CompressionPolicy ct(CompressMode::automatic);
    ct.encoded(1000000, 400000, 0.002, true);
    BOOST_TEST(ct.compress_next(-1));
}

BOOST_AUTO_TEST_CASE(loopback_peers_and_hosts_are_told_apart)
{
    BOOST_TEST(host_is_loopback("127.0.0.1"));
    BOOST_TEST(host_is_loopback("127.3.2.1"));
    BOOST_TEST(host_is_loopback("::1"));
    BOOST_TEST(!host_is_loopback("192.0.2.1"));
    BOOST_TEST(!host_is_loopback("10.200.1.2"));
    // A TCP connection to 127.0.0.1.
    UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    BOOST_REQUIRE(::listen(listener.get(), 1) == 0);
    socklen_t size = sizeof address;
    BOOST_REQUIRE(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address), &size) == 0);
    UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    BOOST_REQUIRE(::connect(client.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    BOOST_TEST(peer_is_loopback(client.get()));
    BOOST_TEST(delivery_rate(client.get()) >= 0.0);
    test::SocketPair pair;  // not an IP peer
    BOOST_TEST(!peer_is_loopback(pair.a.get()));
}
