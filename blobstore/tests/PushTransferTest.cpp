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
