#include "server/PartTransfer.h"

#define BOOST_TEST_MODULE PartTransfer
#include <boost/test/unit_test.hpp>

#include "TransferTestSupport.h"

#include <blobstreaming/common/Checksum.h>

using namespace blobstreaming;
using namespace blobstreaming::server;
using namespace blobstreaming::server::test;

namespace {

struct Fixture : TransferFixture {
    std::uint64_t id = 0;
    /// A part [offset, offset + length) of a reservation of `size` bytes filled in parts.
    PartTransfer part(std::uint64_t size, std::uint64_t offset, std::uint64_t length)
    {
        if (id == 0) id = reservations.add(store.reserve("P.1", size));
        TicketBinding b;
        b.direction = protocol::FrameType::push;
        b.blob = "P.1";
        b.reservation = id;
        b.part = true;
        b.offset = offset;
        b.length = length;
        return PartTransfer(server, link, request(protocol::FrameType::push, offset, length), b);
    }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(a_part_goes_to_the_ledger_and_is_acknowledged_with_its_crc, Fixture)
{
    const auto data = pattern(100);
    sockets.send(data.data() + 60, 40);
    sockets.send_trailer(crc_of(data, 60, 40));
    PartTransfer t = part(data.size(), 60, 40);

    BOOST_CHECK(t.start() == Step::respond);
    const RecordingLink::Answer& a = link.answer();
    BOOST_CHECK(a.response.status == Errc::ok);
    BOOST_CHECK_EQUAL(a.response.length, 40u);
    BOOST_CHECK(a.response.checksum == Checksum::crc32c(crc32c(data.data() + 60, 40)));
    BOOST_CHECK(t.ended());
    BOOST_CHECK(!store.contains("P.1"));  // the control plane commits
    // The ledger holds [60, 100): a part ticket for it has nothing left to send.
    BOOST_CHECK_EQUAL(reservations.part_start(id, 60, 40).offset, 100u);
    BOOST_CHECK_EQUAL(reservations.part_start(id, 0, 60).offset, 0u);
}

BOOST_FIXTURE_TEST_CASE(a_part_whose_trailer_does_not_match_is_not_kept, Fixture)
{
    const auto data = pattern(100);
    sockets.send(data.data(), 50);
    sockets.send_trailer(crc_of(data, 1, 50));
    PartTransfer t = part(data.size(), 0, 50);

    BOOST_CHECK(t.start() == Step::respond);
    const RecordingLink::Answer& a = link.answer();
    BOOST_CHECK(a.response.status == Errc::digest_mismatch);
    BOOST_CHECK(a.after == AfterResponse::next_request);
    BOOST_CHECK(a.response.message.find("push \"P.1\" part [0, 50): the received bytes have checksum") == 0);
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(t.bytes_done(), 0u);  // nothing of it counts
    BOOST_CHECK_EQUAL(reservations.part_start(id, 0, 50).offset, 0u);
}

BOOST_FIXTURE_TEST_CASE(a_part_cut_by_the_peer_keeps_what_landed, Fixture)
{
    const auto data = pattern(100);
    sockets.send(data.data(), 30);
    ::shutdown(sockets.client.get(), SHUT_WR);
    PartTransfer t = part(data.size(), 0, 100);

    BOOST_CHECK(t.start() == Step::close);
    BOOST_CHECK(t.ended());
    // The part's next ticket starts past the 30 bytes that landed.
    BOOST_CHECK_EQUAL(reservations.part_start(id, 0, 100).offset, 30u);
}
