#include <blobstreaming/transporter/client/Streams.h>

#define BOOST_TEST_MODULE ChunkedSource
#include "SocketPair.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/LittleEndian.h>
#include <blobstreaming/transporter/Protocol.h>

#include <cstring>
#include <deque>
#include <vector>

#include <unistd.h>

using namespace blobstreaming;
using namespace blobstreaming::dataplane;

// The body of a push of unknown length as the sender writes it: one chunk
// per producer call, a chunk of length 0 at the end (docs/PROTOCOL.md).

#define BS_CHECK_ERROR_IN(statement, errc, text)                                                                       \
    do {                                                                                                               \
        try {                                                                                                          \
            statement;                                                                                                 \
            BOOST_ERROR("expected Error(" #errc ") from: " #statement);                                                \
        } catch (const Error& e_) {                                                                                    \
            BOOST_TEST((e_.code() == (errc)));                                                                         \
            BOOST_TEST_MESSAGE(e_.what());                                                                             \
            BOOST_TEST(std::string(e_.what()).find(text) != std::string::npos, "message: " << e_.what());              \
        }                                                                                                              \
    } while (false)

namespace {

/// Sends everything `source` has through a socket pair, reading the other
/// end as it goes (the socket buffers are small: writes stop part way);
/// returns the wire bytes.
std::vector<std::uint8_t> drain(ChunkedSource& source, HashPipeline& hash)
{
    test::SocketPair pair(16 << 10);
    Channel channel(pair.a.get());
    std::vector<std::uint8_t> wire;
    std::uint8_t buffer[64 << 10];
    for (int rounds = 0; !source.ended(); ++rounds) {
        BOOST_REQUIRE(rounds < 100000);
        const long n = source.send(channel, 1 << 20, hash);
        BOOST_REQUIRE(n >= 0);
        for (;;) {
            const ssize_t r = ::read(pair.b.get(), buffer, sizeof buffer);
            if (r <= 0) break;
            wire.insert(wire.end(), buffer, buffer + r);
        }
    }
    return wire;
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_call_of_the_producer_is_a_chunk_and_zero_ends_the_body)
{
    std::deque<std::vector<std::uint8_t>> pieces = {
        std::vector<std::uint8_t>(1, 7), std::vector<std::uint8_t>(300000, 1), std::vector<std::uint8_t>(5, 2)};
    std::vector<std::uint8_t> all;
    for (const auto& p : pieces) all.insert(all.end(), p.begin(), p.end());
    std::size_t calls = 0;
    ChunkedSource source(
        [&](std::uint8_t* buffer, std::size_t capacity) -> std::size_t {
            ++calls;
            BOOST_TEST(capacity == 65536u - protocol::kChunkHeaderSize);  // the frame holds its header
            if (pieces.empty()) return 0;
            std::vector<std::uint8_t>& p = pieces.front();
            const std::size_t n = std::min(capacity, p.size());
            std::memcpy(buffer, p.data(), n);
            p.erase(p.begin(), p.begin() + static_cast<long>(n));
            if (p.empty()) pieces.pop_front();
            return n;
        },
        "push \"US.1\"", 65536);
    BOOST_TEST(source.streamed());
    BOOST_TEST(source.size() == 0u);
    HashPipeline hash(ChecksumState(ChecksumAlgorithm::crc32c));
    const std::vector<std::uint8_t> wire = drain(source, hash);
    BOOST_TEST(source.produced() == all.size());
    BOOST_TEST((hash.finish() == ChecksumState::of(ChecksumAlgorithm::crc32c, all.data(), all.size())));
    // Parse it back: headers, bytes, the final 0.
    std::vector<std::uint8_t> body;
    std::size_t at = 0, chunks = 0;
    for (;;) {
        BOOST_REQUIRE(at + protocol::kChunkHeaderSize <= wire.size());
        const auto length = le::get<std::uint32_t>(wire.data() + at);
        at += protocol::kChunkHeaderSize;
        if (length == 0) break;
        BOOST_REQUIRE(at + length <= wire.size());
        body.insert(body.end(), wire.begin() + static_cast<long>(at), wire.begin() + static_cast<long>(at + length));
        at += length;
        ++chunks;
    }
    BOOST_TEST(at == wire.size());  // nothing after the chunk of length 0
    BOOST_TEST((body == all));
    BOOST_TEST(chunks + 1 == calls);  // one chunk per call, the last call the end
    BOOST_TEST(chunks == 7u);         // 1 + 5 (300000 in 65532-byte pieces) + 1
}

BOOST_AUTO_TEST_CASE(an_empty_stream_is_one_chunk_of_length_zero)
{
    ChunkedSource source([](std::uint8_t*, std::size_t) -> std::size_t { return 0; }, "push \"US.0\"");
    HashPipeline hash(ChecksumState(ChecksumAlgorithm::crc32c));
    const std::vector<std::uint8_t> wire = drain(source, hash);
    BOOST_TEST(wire.size() == protocol::kChunkHeaderSize);
    BOOST_TEST(le::get<std::uint32_t>(wire.data()) == 0u);
    BOOST_TEST(source.ended());
}

BOOST_AUTO_TEST_CASE(a_producer_that_overruns_or_throws_fails_the_push)
{
    test::SocketPair pair;
    Channel channel(pair.a.get());
    HashPipeline hash(ChecksumState(ChecksumAlgorithm::crc32c));
    ChunkedSource overrun([](std::uint8_t*, std::size_t capacity) { return capacity + 1; }, "push \"US.2\"", 4096);
    BS_CHECK_ERROR_IN(overrun.send(channel, 1 << 20, hash), Errc::io_error,
                      "push \"US.2\": the producer returned 4093 bytes after 0 (asked for up to 4092)");
    ChunkedSource throws([](std::uint8_t*, std::size_t) -> std::size_t { throw std::runtime_error("camera gone"); },
                         "push \"US.3\"");
    BS_CHECK_ERROR_IN(throws.send(channel, 1 << 20, hash), Errc::io_error,
                      "push \"US.3\": the producer threw: camera gone");
    ChecksumState state(ChecksumAlgorithm::crc32c);
    BS_CHECK_ERROR_IN(throws.skip(10, state), Errc::invalid_argument,
                      "push \"US.3\": a push of unknown length cannot resume");
}
