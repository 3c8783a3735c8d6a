#include "server/PushTransfer.h"

#define BOOST_TEST_MODULE PushTransfer
#include <boost/test/unit_test.hpp>

#include "TransferTestSupport.h"

#include <sys/socket.h>

using namespace blobstreaming;
using namespace blobstreaming::server;
using namespace blobstreaming::server::test;

namespace {

struct Fixture : TransferFixture {
    /// A push transfer of a new reservation of `size` bytes as `name`, from `offset`.
    PushTransfer push(const std::string& name, std::uint64_t size, std::uint64_t offset = 0)
    {
        TicketBinding b;
        b.direction = protocol::FrameType::push;
        b.blob = name;
        b.reservation = reservations.add(store.reserve(name, size));
        b.length = size - offset;
        return PushTransfer(server, link, request(protocol::FrameType::push, offset, size - offset), b);
    }
    /// A push of unknown length of at most `max` bytes as `name`: an
    /// open-ended reservation and a streamed Request.
    PushTransfer stream(const std::string& name, std::uint64_t max)
    {
        auto r = store.reserve(name, std::min(Reservation::kGrowStep, max));
        std::string why;
        BOOST_REQUIRE(r->make_open_ended(max, why));
        TicketBinding b;
        b.direction = protocol::FrameType::push;
        b.blob = name;
        b.reservation = reservations.add(std::move(r));
        b.length = max;
        b.streamed = true;
        protocol::Request q = request(protocol::FrameType::push, 0, max);
        q.streamed = true;
        return PushTransfer(server, link, q, b);
    }
    void send_chunk(const std::uint8_t* data, std::uint32_t size) const
    {
        std::uint8_t header[protocol::kChunkHeaderSize];
        protocol::encode_chunk_header(size, header);
        sockets.send(header, sizeof header);
        if (size > 0) sockets.send(data, size);
    }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(a_whole_push_is_committed_then_acknowledged, Fixture)
{
    const auto data = pattern(64u << 10);
    sockets.send(data.data(), data.size());
    sockets.send_trailer(crc_of(data));
    PushTransfer t = push("CT.1", data.size());
    BOOST_CHECK_EQUAL(server.active.load(), 1u);

    BOOST_CHECK(t.start() == Step::respond);
    const RecordingLink::Answer& a = link.answer();
    BOOST_CHECK(a.response.status == Errc::ok);
    BOOST_CHECK(a.after == AfterResponse::next_request);
    BOOST_CHECK_EQUAL(a.response.length, data.size());
    BOOST_CHECK_EQUAL(a.response.blob_size, data.size());
    BOOST_CHECK(a.response.checksum == crc_of(data));
    BOOST_CHECK(store.contains("CT.1"));
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(t.bytes_done(), data.size());
    BOOST_CHECK_EQUAL(server.active.load(), 0u);
    BOOST_CHECK_EQUAL(reservations.open(), 0u);
    BOOST_CHECK_GT(link.progressed, 0);
}

BOOST_FIXTURE_TEST_CASE(a_trailer_that_does_not_match_stores_nothing, Fixture)
{
    const auto data = pattern(10000);
    sockets.send(data.data(), data.size());
    sockets.send_trailer(crc_of(data, 1));
    PushTransfer t = push("CT.2", data.size());

    BOOST_CHECK(t.start() == Step::respond);
    BOOST_CHECK(link.answer().response.status == Errc::digest_mismatch);
    BOOST_CHECK(link.answer().after == AfterResponse::next_request);
    BOOST_CHECK(!store.contains("CT.2"));
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(reservations.open(), 0u);
}

BOOST_FIXTURE_TEST_CASE(the_body_arrives_across_several_readable_events, Fixture)
{
    const auto data = pattern(30000);
    PushTransfer t = push("CT.3", data.size());
    BOOST_CHECK(t.start() == Step::read);  // nothing sent yet
    sockets.send(data.data(), 12345);
    BOOST_CHECK(t.on_readable() == Step::read);
    BOOST_CHECK_EQUAL(t.bytes_done(), 12345u);
    sockets.send(data.data() + 12345, data.size() - 12345);
    BOOST_CHECK(t.on_readable() == Step::read);  // the trailer is missing
    BOOST_CHECK(!t.ended());
    sockets.send_trailer(crc_of(data));
    BOOST_CHECK(t.on_readable() == Step::respond);
    BOOST_CHECK(link.answer().response.status == Errc::ok);
    BOOST_CHECK(store.contains("CT.3"));
}

BOOST_FIXTURE_TEST_CASE(a_push_cut_by_the_peer_keeps_its_reservation_for_a_resume, Fixture)
{
    const auto data = pattern(20000);
    sockets.send(data.data(), 5000);
    ::shutdown(sockets.client.get(), SHUT_WR);
    PushTransfer t = push("CT.4", data.size());

    BOOST_CHECK(t.start() == Step::close);
    BOOST_CHECK(link.answers.empty());  // broken: nobody to tell
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(t.bytes_done(), 5000u);
    BOOST_CHECK(!store.contains("CT.4"));
    BOOST_CHECK_EQUAL(reservations.open(), 1u);  // parked with its 5000 bytes
    BOOST_CHECK_EQUAL(server.active.load(), 0u);
}

BOOST_FIXTURE_TEST_CASE(a_ticket_whose_reservation_moved_on_is_refused, Fixture)
{
    PushTransfer t = push("CT.5", 1000, 400);  // the reservation holds 0 bytes, not 400
    BOOST_CHECK(t.start() == Step::respond);
    const RecordingLink::Answer& a = link.answer();
    BOOST_CHECK(a.refusal);
    BOOST_CHECK(a.response.status == Errc::refused);
    BOOST_CHECK_EQUAL(a.response.message, "push \"CT.5\" at byte 400: the reservation now holds 0 bytes");
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(reservations.open(), 1u);  // parked again for the push that holds it
}

BOOST_FIXTURE_TEST_CASE(a_streamed_push_ends_at_its_chunk_of_length_zero, Fixture)
{
    const auto data = pattern(70000);
    PushTransfer t = stream("US.1", 8u << 20);
    BOOST_CHECK(t.start() == Step::read);
    send_chunk(data.data(), 30000);
    // A chunk header split across readable events.
    std::uint8_t header[protocol::kChunkHeaderSize];
    protocol::encode_chunk_header(40000, header);
    sockets.send(header, 2);
    BOOST_CHECK(t.on_readable() == Step::read);
    BOOST_CHECK_EQUAL(t.bytes_done(), 30000u);
    sockets.send(header + 2, 2);
    sockets.send(data.data() + 30000, 40000);
    send_chunk(nullptr, 0);
    BOOST_CHECK(t.on_readable() == Step::read);  // the trailer is missing
    BOOST_CHECK(!store.contains("US.1"));
    sockets.send_trailer(crc_of(data));
    BOOST_CHECK(t.on_readable() == Step::respond);
    const RecordingLink::Answer& a = link.answer();
    BOOST_CHECK(a.response.status == Errc::ok);
    BOOST_CHECK_EQUAL(a.response.length, data.size());
    BOOST_CHECK_EQUAL(a.response.blob_size, data.size());
    BOOST_CHECK(a.response.checksum == crc_of(data));
    BOOST_CHECK_EQUAL(store.stat("US.1").size, data.size());
    BOOST_CHECK_EQUAL(store.usage().reserved, 0u);
    BOOST_CHECK_EQUAL(reservations.open(), 0u);
}

BOOST_FIXTURE_TEST_CASE(a_streamed_push_cut_by_the_peer_leaves_nothing, Fixture)
{
    const auto data = pattern(20000);
    send_chunk(data.data(), 20000);
    ::shutdown(sockets.client.get(), SHUT_WR);
    PushTransfer t = stream("US.2", 8u << 20);

    BOOST_CHECK(t.start() == Step::close);
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(t.bytes_done(), 20000u);
    BOOST_CHECK(!store.contains("US.2"));
    BOOST_CHECK_EQUAL(reservations.open(), 0u);  // not parked: nothing can resume it
    BOOST_CHECK_EQUAL(store.usage().reserved, 0u);
}

BOOST_FIXTURE_TEST_CASE(a_streamed_push_past_its_maximum_or_with_a_bad_chunk_stores_nothing, Fixture)
{
    const auto data = pattern(5000);
    send_chunk(data.data(), 5000);
    PushTransfer t = stream("US.3", 4096);
    BOOST_CHECK(t.start() == Step::close);
    BOOST_CHECK(t.ended());
    BOOST_CHECK(!store.contains("US.3"));
    BOOST_CHECK_EQUAL(reservations.open(), 0u);
    BOOST_CHECK_EQUAL(store.usage().reserved, 0u);

    Fixture other;
    std::uint8_t header[protocol::kChunkHeaderSize];
    protocol::encode_chunk_header(protocol::kMaxChunk + 1, header);
    other.sockets.send(header, sizeof header);
    PushTransfer u = other.stream("US.4", 1u << 20);
    BOOST_CHECK(u.start() == Step::close);
    BOOST_CHECK(u.ended());
    BOOST_CHECK(!other.store.contains("US.4"));
    BOOST_CHECK_EQUAL(other.reservations.open(), 0u);
}
