#include <blobstreaming/transporter/DataIo.h>

#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/Protocol.h>

#define BOOST_TEST_MODULE DataIoTest
#include <boost/test/unit_test.hpp>

#include "SocketPair.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

using namespace blobstreaming;
using Status = IoResult::Status;

namespace {

using Pair = test::SocketPair;

void put(int fd, const void* data, std::size_t size)
{
    BOOST_REQUIRE_EQUAL(::send(fd, data, size, MSG_NOSIGNAL), static_cast<ssize_t>(size));
}

std::vector<std::uint8_t> pattern(std::size_t size)
{
    std::vector<std::uint8_t> v(size);
    for (std::size_t i = 0; i < size; ++i) v[i] = static_cast<std::uint8_t>(i * 13 + (i >> 10));
    return v;
}

protocol::Request sample_request()
{
    protocol::Request r;
    r.type = protocol::FrameType::push;
    r.ticket[0] = 0xab;
    r.offset = 7;
    r.length = 123456789;
    return r;
}

}  // namespace

BOOST_AUTO_TEST_CASE(read_some_says_done_want_read_and_eof)
{
    Pair pair;
    Channel channel(pair.b.get());
    char buf[8];
    IoResult r = read_some(channel, buf, sizeof buf);
    BOOST_CHECK(r.status() == Status::want_read);
    BOOST_CHECK(r.blocked() && !r.done() && !r.eof() && !r.failed());
    BOOST_CHECK_EQUAL(r.bytes(), 0u);

    put(pair.a.get(), "abc", 3);
    r = read_some(channel, buf, sizeof buf);
    BOOST_CHECK(r.done());
    BOOST_CHECK_EQUAL(r.bytes(), 3u);
    BOOST_CHECK_EQUAL(std::string(buf, 3), "abc");

    pair.a.reset();
    r = read_some(channel, buf, sizeof buf);
    BOOST_CHECK(r.eof());
    BOOST_CHECK_EQUAL(r.error_number(), 0);
    BOOST_CHECK_EQUAL(r.text(), "");
}

BOOST_AUTO_TEST_CASE(write_some_to_a_closed_peer_is_an_error_with_its_text)
{
    Pair pair;
    Channel channel(pair.a.get());
    BOOST_CHECK(write_some(channel, "", 0).done());
    pair.b.reset();
    const IoResult r = write_some(channel, "xyz", 3);
    BOOST_CHECK(r.failed());
    BOOST_CHECK_EQUAL(r.error_number(), EPIPE);
    BOOST_CHECK_EQUAL(r.text(), std::strerror(EPIPE));
}

BOOST_AUTO_TEST_CASE(a_frame_is_gathered_across_partial_reads_and_nothing_after_it_is_read)
{
    Pair pair;
    Channel channel(pair.b.get());
    std::uint8_t wire[protocol::kRequestSize];
    protocol::encode(sample_request(), wire);

    FrameReader reader(protocol::kRequestSize);
    reader.expect(protocol::kRequestSize);
    IoResult r = reader.fill(channel);
    BOOST_CHECK(r.status() == Status::want_read);
    BOOST_CHECK_EQUAL(reader.got(), 0u);

    put(pair.a.get(), wire, 1);
    r = reader.fill(channel);
    BOOST_CHECK(r.blocked());
    BOOST_CHECK_EQUAL(r.bytes(), 1u);  // what arrived, also when it then waits
    put(pair.a.get(), wire + 1, 10);
    r = reader.fill(channel);
    BOOST_CHECK_EQUAL(r.bytes(), 10u);
    BOOST_CHECK_EQUAL(reader.got(), 11u);
    BOOST_CHECK(!reader.complete());

    // The rest of the frame and the first bytes of a push body in one go.
    put(pair.a.get(), wire + 11, sizeof wire - 11);
    put(pair.a.get(), "BODY", 4);
    r = reader.fill(channel);
    BOOST_CHECK(r.done());
    BOOST_CHECK_EQUAL(r.bytes(), sizeof wire - 11);
    BOOST_CHECK(reader.complete());
    BOOST_CHECK(reader.fill(channel).done());  // complete: nothing more is read

    protocol::Request decoded;
    std::string why;
    BOOST_REQUIRE(!protocol::decode(reader.first<protocol::kRequestSize>(), decoded, why));
    BOOST_CHECK(decoded.type == protocol::FrameType::push);
    BOOST_CHECK_EQUAL(decoded.ticket[0], 0xab);
    BOOST_CHECK_EQUAL(decoded.offset, 7u);
    BOOST_CHECK_EQUAL(decoded.length, 123456789u);

    char body[8];
    r = read_some(channel, body, sizeof body);
    BOOST_REQUIRE(r.done());
    BOOST_CHECK_EQUAL(std::string(body, r.bytes()), "BODY");

    reader.expect(protocol::kRequestSize);  // the next frame starts empty
    BOOST_CHECK_EQUAL(reader.got(), 0u);
}

BOOST_AUTO_TEST_CASE(eof_mid_frame_says_how_much_arrived)
{
    Pair pair;
    Channel channel(pair.b.get());
    FrameReader reader(protocol::kTrailerSize);
    reader.expect(protocol::kTrailerSize);
    put(pair.a.get(), "12345", 5);
    pair.a.reset();
    const IoResult r = reader.fill(channel);
    BOOST_CHECK(r.eof());
    BOOST_CHECK_EQUAL(r.bytes(), 5u);
    BOOST_CHECK_EQUAL(reader.got(), 5u);
    BOOST_CHECK(!reader.complete());
}

BOOST_AUTO_TEST_CASE(a_response_header_is_extended_by_its_message)
{
    Pair pair;
    Channel channel(pair.b.get());
    protocol::Response response;
    response.status = Errc::refused;
    response.length = 42;
    response.message = "unknown ticket 12345678";
    const std::string wire = protocol::encode(response);
    put(pair.a.get(), wire.data(), protocol::kResponseHeaderSize + 3);

    FrameReader reader(protocol::kResponseHeaderSize + protocol::kMaxMessageSize);
    reader.expect(protocol::kResponseHeaderSize);
    BOOST_REQUIRE(reader.fill(channel).done());
    protocol::Response decoded;
    std::size_t message_size = 0;
    std::string why;
    BOOST_REQUIRE(!protocol::decode(reader.first<protocol::kResponseHeaderSize>(), decoded, message_size, why));
    BOOST_CHECK_EQUAL(message_size, response.message.size());
    reader.extend(message_size);
    BOOST_CHECK_EQUAL(reader.got(), protocol::kResponseHeaderSize);  // the header stays
    IoResult r = reader.fill(channel);
    BOOST_CHECK(r.blocked());
    BOOST_CHECK_EQUAL(r.bytes(), 3u);
    put(pair.a.get(), wire.data() + protocol::kResponseHeaderSize + 3, wire.size() - protocol::kResponseHeaderSize - 3);
    BOOST_REQUIRE(reader.fill(channel).done());
    BOOST_CHECK_EQUAL(std::string(reinterpret_cast<const char*>(reader.data()) + protocol::kResponseHeaderSize,
                                  reader.size() - protocol::kResponseHeaderSize),
                      response.message);
    BOOST_CHECK_THROW(reader.extend(protocol::kMaxMessageSize), std::length_error);
    BOOST_CHECK_THROW(FrameReader(8).expect(9), std::length_error);
}

BOOST_AUTO_TEST_CASE(output_buffer_drains_across_partial_writes_in_order)
{
    Pair pair(16384);
    Channel writer(pair.a.get());
    Channel reader(pair.b.get());
    const auto first = pattern(1 << 20);
    const auto second = pattern(3000);
    OutputBuffer out;
    BOOST_CHECK(out.empty());
    BOOST_CHECK(out.drain(writer).done());  // nothing waits
    out.append(first.data(), first.size());
    IoResult r = out.drain(writer);
    BOOST_REQUIRE(r.status() == Status::want_write);
    BOOST_CHECK_GT(r.bytes(), 0u);
    BOOST_CHECK_EQUAL(out.pending(), first.size() - r.bytes());
    out.append(second.data(), second.size());  // while bytes wait: after them

    std::vector<std::uint8_t> got;
    std::uint8_t buf[7000];
    for (int round = 0; round < 100000 && (!out.empty() || got.size() < first.size() + second.size()); ++round) {
        r = out.drain(writer);
        BOOST_REQUIRE(r.done() || r.status() == Status::want_write);
        for (;;) {
            const IoResult in = read_some(reader, buf, sizeof buf);
            if (!in.done()) {
                BOOST_REQUIRE(in.status() == Status::want_read);
                break;
            }
            got.insert(got.end(), buf, buf + in.bytes());
        }
    }
    BOOST_CHECK(out.empty());
    BOOST_CHECK_EQUAL(out.pending(), 0u);
    std::vector<std::uint8_t> sent = first;
    sent.insert(sent.end(), second.begin(), second.end());
    BOOST_REQUIRE_EQUAL(got.size(), sent.size());
    BOOST_CHECK(got == sent);
}

BOOST_AUTO_TEST_CASE(send_file_moves_file_bytes_and_reports_the_end_of_the_file)
{
    char path[] = "/tmp/dataio-test-XXXXXX";
    UniqueFd file(::mkstemp(path));
    BOOST_REQUIRE(file);
    ::unlink(path);
    const auto bytes = pattern(5000);
    BOOST_REQUIRE_EQUAL(::write(file.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));

    Pair pair;
    Channel channel(pair.a.get());
    IoResult r = send_file(channel, file.get(), 1000, 3000);
    BOOST_REQUIRE(r.done());
    BOOST_CHECK_EQUAL(r.bytes(), 3000u);
    std::vector<std::uint8_t> got(3000);
    BOOST_REQUIRE_EQUAL(::recv(pair.b.get(), got.data(), got.size(), MSG_WAITALL), 3000);
    BOOST_CHECK(std::equal(got.begin(), got.end(), bytes.begin() + 1000));

    r = send_file(channel, file.get(), bytes.size(), 10);  // the file ends there
    BOOST_CHECK(r.eof());
    BOOST_CHECK_EQUAL(r.bytes(), 0u);
}

BOOST_AUTO_TEST_CASE(peek_looks_without_consuming)
{
    Pair pair;
    Channel channel(pair.b.get());
    BOOST_CHECK(peek(channel).status() == Status::want_read);
    put(pair.a.get(), "q", 1);
    const IoResult r = peek(channel);
    BOOST_CHECK(r.done());
    BOOST_CHECK_EQUAL(r.bytes(), 1u);
    char c = 0;
    BOOST_REQUIRE(read_some(channel, &c, 1).done());  // still there
    BOOST_CHECK_EQUAL(c, 'q');
    pair.a.reset();
    BOOST_CHECK(peek(channel).eof());
}

BOOST_AUTO_TEST_CASE(discard_drops_up_to_its_limit)
{
    Pair pair;
    Channel writer(pair.a.get());
    Channel channel(pair.b.get());
    const auto junk = pattern(100000);
    OutputBuffer out;
    out.append(junk.data(), junk.size());
    const std::size_t sent = out.drain(writer).bytes();  // the socket buffer may take less than all
    BOOST_REQUIRE_GT(sent, 70000u);
    IoResult r = discard(channel, 70000);
    BOOST_CHECK(r.done());
    BOOST_CHECK_EQUAL(r.bytes(), 70000u);
    r = discard(channel, 1 << 20);
    BOOST_CHECK(r.status() == Status::want_read);
    BOOST_CHECK_EQUAL(r.bytes(), sent - 70000);
    pair.a.reset();
    r = discard(channel, 1 << 20);
    BOOST_CHECK(r.eof());
    BOOST_CHECK_EQUAL(r.bytes(), 0u);
}
