#include "server/FollowTransfer.h"

#define BOOST_TEST_MODULE FollowTransfer
#include <boost/test/unit_test.hpp>

#include "TransferTestSupport.h"

#include <blobstreaming/blobstore/BlobInFlight.h>

#include <algorithm>

using namespace blobstreaming;
using namespace blobstreaming::server;
using namespace blobstreaming::server::test;

namespace {

/// A Blob being received into the store (read-through) and a pull following it.
struct Fixture : TransferFixture {
    const std::vector<std::uint8_t> data = pattern(1000);
    std::unique_ptr<Reservation> reservation = store.reserve("F.1", data.size());
    std::shared_ptr<BlobInFlight> flight;

    Fixture()
    {
        BlobInfo expected;
        expected.name = "F.1";
        expected.size = data.size();
        expected.checksum = crc_of(data);
        flight = std::make_shared<BlobInFlight>(expected);
        flight->attach(reservation.get());
    }
    FollowTransfer follow()
    {
        TicketBinding b = pull_binding("F.1", 0, data.size());
        b.version = flight->expected();
        b.follow = flight;
        return FollowTransfer(server, link, request(protocol::FrameType::pull, 0, data.size()), b);
    }
    void land(std::size_t from, std::size_t size)
    {
        BOOST_REQUIRE(!reservation->write(data.data() + from, size));
        flight->landed(from + size);
    }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(bytes_are_sent_as_they_land_then_from_the_committed_blob, Fixture)
{
    land(0, 400);
    FollowTransfer t = follow();
    BOOST_CHECK(t.start() == Step::respond);
    BOOST_CHECK(link.answer().after == AfterResponse::body);
    BOOST_CHECK_EQUAL(link.answer().response.length, data.size());
    BOOST_CHECK(link.answer().response.checksum == crc_of(data));

    // The 400 bytes in, then nothing more yet: off the reactor until woken.
    BOOST_CHECK(t.on_writable() == Step::wait);
    BOOST_CHECK_EQUAL(t.bytes_done(), 400u);
    BOOST_CHECK_EQUAL(link.wakes, 0);
    const auto first = sockets.receive(400);
    BOOST_CHECK(std::equal(first.begin(), first.end(), data.begin()));

    land(400, 200);
    BOOST_CHECK_EQUAL(link.wakes, 1);
    BOOST_CHECK(t.on_writable() == Step::wait);
    BOOST_CHECK_EQUAL(t.bytes_done(), 600u);

    // Committed: the rest comes from the store's Blob, where the sent bytes end.
    land(600, 400);
    flight->detach();
    const BlobInfo info = reservation->commit();
    flight->finish(info);
    BOOST_CHECK(t.on_writable() == Step::done);
    const auto rest = sockets.receive(600);
    BOOST_CHECK(std::equal(rest.begin(), rest.end(), data.begin() + 400));
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(t.bytes_done(), data.size());
    BOOST_CHECK_EQUAL(server.active.load(), 0u);
}

BOOST_FIXTURE_TEST_CASE(a_fetch_that_fails_fails_its_followers, Fixture)
{
    land(0, 100);
    FollowTransfer t = follow();
    BOOST_CHECK(t.start() == Step::respond);
    BOOST_CHECK(t.on_writable() == Step::wait);
    flight->fail(Errc::unreachable, "the source store is gone");
    BOOST_CHECK(t.on_writable() == Step::close);
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(t.bytes_done(), 100u);
    BOOST_CHECK_EQUAL(server.active.load(), 0u);
}
