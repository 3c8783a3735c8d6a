#include <blobstreaming/transporter/Protocol.h>

#define BOOST_TEST_MODULE Protocol
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace blobstreaming;
using namespace blobstreaming::protocol;

BOOST_AUTO_TEST_CASE(request_round_trip)
{
    Request in;
    in.type = FrameType::push;
    in.ticket = random_ticket();
    in.offset = 1ULL << 40;
    in.length = (1ULL << 33) + 5;
    std::uint8_t wire[kRequestSize];
    encode(in, wire);
    BOOST_TEST(std::memcmp(wire, "BSD1", 4) == 0);
    Request out;
    std::string why;
    BOOST_TEST(!decode(wire, out, why));
    BOOST_TEST((out.type == FrameType::push));
    BOOST_TEST((out.ticket == in.ticket));
    BOOST_TEST(out.offset == in.offset);
    BOOST_TEST(out.length == in.length);
}

BOOST_AUTO_TEST_CASE(garbage_requests_are_rejected_with_a_reason)
{
    std::uint8_t wire[kRequestSize];
    std::memcpy(wire, "GET / HTTP/1.1\r\nHost: x\r\n\r\n.............", kRequestSize);
    Request out;
    std::string why;
    BOOST_TEST(decode(wire, out, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "not a Blob Streaming data connection (bad magic)");

    encode(Request{}, wire);
    wire[4] = 9;
    BOOST_TEST(decode(wire, out, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "unsupported protocol version 9 (this store speaks 2)");

    encode(Request{}, wire);
    wire[5] = 3;
    BOOST_TEST(decode(wire, out, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "unknown request type 3 (allowed: 1 push, 2 pull)");
}

BOOST_AUTO_TEST_CASE(response_round_trip_and_message_limit)
{
    Response in;
    in.status = Errc::digest_mismatch;
    in.length = 7;
    in.blob_size = 9;
    in.checksum = ChecksumState::of(ChecksumAlgorithm::sha256, "abc", 3);
    in.message = std::string(kMaxMessageSize + 100, 'm');
    const std::string wire = encode(in);
    BOOST_TEST(wire.size() == kResponseHeaderSize + kMaxMessageSize);
    std::uint8_t header[kResponseHeaderSize];
    std::memcpy(header, wire.data(), sizeof header);
    Response out;
    std::size_t message_size = 0;
    std::string why;
    BOOST_TEST(!decode(header, out, message_size, why));
    BOOST_TEST((out.status == Errc::digest_mismatch));
    BOOST_TEST(out.length == 7u);
    BOOST_TEST(out.blob_size == 9u);
    BOOST_TEST(message_size == kMaxMessageSize);
    BOOST_TEST(out.checksum.value().text() == in.checksum.value().text());

    // An error Response carries no checksum; a CRC32C one only its 4 bytes.
    Response none;
    none.status = Errc::blob_changed;
    std::memcpy(header, encode(none).data(), sizeof header);
    BOOST_TEST(!decode(header, out, message_size, why));
    BOOST_TEST(!out.checksum);
    Response crc;
    crc.checksum = Checksum::crc32c(0xE3069283u);
    std::memcpy(header, encode(crc).data(), sizeof header);
    BOOST_TEST(!decode(header, out, message_size, why));
    BOOST_TEST(out.checksum.value().text() == "crc32c:e3069283");
    header[12] = 7;
    BOOST_TEST(decode(header, out, message_size, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "unknown checksum algorithm 7 in a response");
}

BOOST_AUTO_TEST_CASE(trailer_round_trip_and_checks)
{
    std::uint8_t wire[kTrailerSize];
    Trailer in{ChecksumState::of(ChecksumAlgorithm::crc32c, "123456789", 9)}, out;
    encode(in, wire);
    std::string why;
    BOOST_TEST(!decode(wire, out, why));
    BOOST_TEST((out.checksum == in.checksum));
    in.checksum = ChecksumState::of(ChecksumAlgorithm::sha256, "abc", 3);
    encode(in, wire);
    BOOST_TEST(!decode(wire, out, why));
    BOOST_TEST((out.checksum == in.checksum));

    wire[0] = 0;
    BOOST_TEST(decode(wire, out, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "unknown checksum algorithm 0 in the push trailer (allowed: 1 sha256, 2 crc32c)");
    encode(Trailer{Checksum::crc32c(1)}, wire);
    wire[20] = 1;  // beyond CRC32C's 4 bytes
    BOOST_TEST(decode(wire, out, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "reserved bytes of the push trailer are set");
}

BOOST_AUTO_TEST_CASE(tickets_are_random_and_tags_are_short)
{
    const TicketId a = random_ticket(), b = random_ticket();
    BOOST_TEST((a != b));
    BOOST_TEST(ticket_tag(a).size() == 8u);
}

BOOST_AUTO_TEST_CASE(tickets_drawn_in_batches_never_repeat_across_batches_threads_or_a_fork)
{
    // Several batches of 256 on this thread and on another, and a forked
    // child's: all distinct, none all-zero.
    std::set<TicketId> seen;
    const TicketId zero{};
    for (int i = 0; i < 1000; ++i) seen.insert(random_ticket());
    std::thread other([&seen] {
        std::vector<TicketId> mine;
        for (int i = 0; i < 600; ++i) mine.push_back(random_ticket());
        seen.insert(mine.begin(), mine.end());  // joined before the main thread reads it again
    });
    other.join();
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        const TicketId t = random_ticket();  // the parent's batch is half used: the child must not reuse it
        const bool written = ::write(fds[1], t.data(), t.size()) == static_cast<ssize_t>(t.size());
        ::_exit(written ? 0 : 1);
    }
    ::close(fds[1]);
    TicketId from_child{};
    BOOST_TEST(::read(fds[0], from_child.data(), from_child.size()) == static_cast<ssize_t>(from_child.size()));
    ::close(fds[0]);
    int status = 0;
    BOOST_TEST(::waitpid(child, &status, 0) == child);
    seen.insert(from_child);
    for (int i = 0; i < 10; ++i) seen.insert(random_ticket());  // the parent's next ones
    BOOST_TEST(seen.size() == 1000u + 600u + 1u + 10u);
    BOOST_TEST(seen.count(zero) == 0u);
}

BOOST_AUTO_TEST_CASE(streamed_push_request_round_trip)
{
    Request in;
    in.type = FrameType::push;
    in.ticket = random_ticket();
    in.length = 1ULL << 36;  // the maximum the ticket allows
    in.streamed = true;
    std::uint8_t wire[kRequestSize];
    encode(in, wire);
    BOOST_TEST(wire[6] == 1);  // flag bit 0
    BOOST_TEST(wire[7] == 0);
    Request out;
    std::string why;
    BOOST_TEST(!decode(wire, out, why));
    BOOST_TEST(out.streamed);
    BOOST_TEST(out.length == in.length);

    in.streamed = false;
    encode(in, wire);
    BOOST_TEST(!decode(wire, out, why));
    BOOST_TEST(!out.streamed);
}

BOOST_AUTO_TEST_CASE(streamed_requests_other_than_a_whole_push_are_refused)
{
    Request in;
    in.type = FrameType::pull;
    in.streamed = true;
    std::uint8_t wire[kRequestSize];
    encode(in, wire);
    Request out;
    std::string why;
    BOOST_TEST(decode(wire, out, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "only a push from offset 0 can be streamed");

    in.type = FrameType::push;
    in.offset = 5;
    encode(in, wire);
    BOOST_TEST(decode(wire, out, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "only a push from offset 0 can be streamed");

    // Flag bits other than 0 (streamed), 1 and 2 (compression) stay reserved.
    in.offset = 0;
    encode(in, wire);
    wire[6] = 8;
    BOOST_TEST(decode(wire, out, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "reserved request bits are set");
}

BOOST_AUTO_TEST_CASE(compression_flags_round_trip_and_are_checked)
{
    Request in;
    in.type = FrameType::pull;
    in.compress = true;
    in.compress_auto = true;
    std::uint8_t wire[kRequestSize];
    encode(in, wire);
    BOOST_TEST(wire[6] == 6);
    Request out;
    std::string why;
    BOOST_TEST(!decode(wire, out, why));
    BOOST_TEST(out.compress);
    BOOST_TEST(out.compress_auto);

    in.type = FrameType::push;  // auto is the store's choice on a pull only
    encode(in, wire);
    BOOST_TEST(decode(wire, out, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "the compress-auto request bit is for a compressed pull only");

    in.compress_auto = false;
    in.streamed = true;
    encode(in, wire);
    BOOST_TEST(decode(wire, out, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "a push of unknown length cannot be compressed (flags streamed and compress together)");

    in.streamed = false;
    encode(in, wire);
    BOOST_TEST(!decode(wire, out, why));
    BOOST_TEST(out.compress);
    BOOST_TEST(!out.compress_auto);
}

BOOST_AUTO_TEST_CASE(a_response_says_whether_compressed_frames_follow)
{
    Response in;
    in.length = 10;
    in.compressed = true;
    std::string frame = encode(in);
    BOOST_TEST(static_cast<int>(frame[13]) == 1);
    Response out;
    std::size_t message_size = 0;
    std::string why;
    const auto header = [&frame]() -> const std::uint8_t(&)[kResponseHeaderSize] {
        return *reinterpret_cast<const std::uint8_t(*)[kResponseHeaderSize]>(frame.data());
    };
    BOOST_TEST(!decode(header(), out, message_size, why));
    BOOST_TEST(out.compressed);
    frame[13] = 0;  // a store of an earlier release: raw bytes
    BOOST_TEST(!decode(header(), out, message_size, why));
    BOOST_TEST(!out.compressed);
    frame[13] = 2;
    BOOST_TEST(decode(header(), out, message_size, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "unknown body encoding 2 in a response (allowed: 0 raw, 1 compressed frames)");
}

BOOST_AUTO_TEST_CASE(chunk_headers_round_trip_and_are_bounded)
{
    std::uint8_t wire[kChunkHeaderSize];
    std::uint32_t length = 1;
    std::string why;
    encode_chunk_header(0, wire);
    BOOST_TEST(!decode_chunk_header(wire, length, why));
    BOOST_TEST(length == 0u);  // the end of the body

    encode_chunk_header(0x01020304, wire);
    BOOST_TEST(wire[0] == 4);  // little-endian
    BOOST_TEST(wire[3] == 1);
    BOOST_TEST(!decode_chunk_header(wire, length, why));
    BOOST_TEST(length == 0x01020304u);

    encode_chunk_header(kMaxChunk, wire);
    BOOST_TEST(!decode_chunk_header(wire, length, why));
    encode_chunk_header(kMaxChunk + 1, wire);
    BOOST_TEST(decode_chunk_header(wire, length, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "chunk of 1073741825 bytes in a streamed push exceeds 1073741824");
}

// ---- Named requests (docs/PROTOCOL.md, "Named requests")
namespace {
NamedRequest decoded_named(const std::string& wire, std::error_code& ec, std::string& why)
{
    std::uint8_t header[kRequestSize];
    std::memcpy(header, wire.data(), kRequestSize);
    NamedRequest out;
    std::size_t name_size = 0;
    ec = decode_named(header, out, name_size, why);
    if (!ec) out.name = wire.substr(kRequestSize, name_size);
    return out;
}
}  // namespace

BOOST_AUTO_TEST_CASE(named_requests_round_trip_and_are_checked)
{
    NamedRequest push;
    push.type = FrameType::push;
    push.name = "CT.1.2.3";
    push.length = 524288;
    push.overwrite = true;
    push.checksum = ChecksumAlgorithm::sha256;
    std::string wire = encode(push);
    BOOST_TEST(wire.size() == kRequestSize + push.name.size());
    std::uint8_t header[kRequestSize];
    std::memcpy(header, wire.data(), kRequestSize);
    BOOST_TEST(is_named(header));
    std::error_code ec;
    std::string why;
    NamedRequest out = decoded_named(wire, ec, why);
    BOOST_TEST(!ec);
    BOOST_TEST((out.type == FrameType::push && out.name == push.name && out.length == push.length &&
                out.overwrite && out.checksum == ChecksumAlgorithm::sha256));

    NamedRequest pull;
    pull.name = "MG.1";
    pull.offset = 10;
    pull.length = 0;
    out = decoded_named(encode(pull), ec, why);
    BOOST_TEST(!ec);
    BOOST_TEST((out.type == FrameType::pull && out.offset == 10u && out.length == 0u && !out.overwrite));

    // A ticket Request is not named; a named one is refused by the ticket decoder.
    Request plain;
    std::uint8_t ticket_wire[kRequestSize];
    encode(plain, ticket_wire);
    BOOST_TEST(!is_named(ticket_wire));
    Request as_ticket;
    BOOST_TEST(decode(header, as_ticket, why) == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "unknown request type 4 (allowed: 1 push, 2 pull)");

    std::string bad = encode(pull);
    bad[6] = 1;  // overwrite on a pull
    decoded_named(bad, ec, why);
    BOOST_TEST(why == "reserved bits of a named request are set");
    bad = encode(pull);
    bad[12] = 0;  // a name of 0 bytes
    bad[13] = 0;
    decoded_named(bad, ec, why);
    BOOST_TEST(why == "named request with a name of 0 bytes (allowed: 1 to 1024)");
    bad = encode(push);
    bad[8] = 9;
    decoded_named(bad, ec, why);
    BOOST_TEST(why == "unknown checksum algorithm 9 in a named push (allowed: 1 sha256, 2 crc32c)");
    NamedRequest late = push;
    late.offset = 5;
    decoded_named(encode(late), ec, why);
    BOOST_TEST(ec == make_error_code(Errc::protocol_error));
    BOOST_TEST(why == "a named push starts at offset 0, not 5");
}

BOOST_AUTO_TEST_CASE(responses_advertise_named_requests_in_reserved_bytes)
{
    Response r;
    r.length = 3;
    r.compressed = true;  // byte 13: the advertisement leaves it alone
    std::string wire = encode(r);
    std::uint8_t header[kResponseHeaderSize];
    std::memcpy(header, wire.data(), kResponseHeaderSize);
    BOOST_TEST(!advertised(header).named_requests);  // as an earlier store sends it
    BOOST_TEST(!advertised(header).default_checksum.has_value());

    advertise(wire, Advertisement{true, ChecksumAlgorithm::sha256});
    std::memcpy(header, wire.data(), kResponseHeaderSize);
    const Advertisement got = advertised(header);
    BOOST_TEST(got.named_requests);
    BOOST_TEST((got.default_checksum == ChecksumAlgorithm::sha256));
    // The Response itself decodes as before (earlier clients ignore the bytes).
    Response back;
    std::size_t message_size = 0;
    std::string why;
    BOOST_TEST(!decode(header, back, message_size, why));
    BOOST_TEST(back.length == 3u);
    BOOST_TEST(back.compressed);

    BOOST_TEST(decode_commit_time(encode_commit_time(1234567890123456789)) == 1234567890123456789);
    BOOST_TEST(decode_commit_time("short") == 0);
}
