#include <blobstreaming/transporter/Protocol.h>

#define BOOST_TEST_MODULE Protocol
#include <boost/test/unit_test.hpp>

#include <cstring>

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
