#include "server/PullTransfer.h"

#define BOOST_TEST_MODULE PullTransfer
#include <boost/test/unit_test.hpp>

#include "TransferTestSupport.h"

#include <algorithm>
#include <thread>

using namespace blobstreaming;
using namespace blobstreaming::server;
using namespace blobstreaming::server::test;

namespace {

struct Fixture : TransferFixture {
    PullTransfer pull(const std::string& name, std::uint64_t offset, std::uint64_t length,
                      std::optional<BlobInfo> version = std::nullopt)
    {
        TicketBinding b = pull_binding(name, offset, length);
        b.version = std::move(version);
        return PullTransfer(server, link, request(protocol::FrameType::pull, offset, length), b);
    }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(the_range_of_the_tickets_version_is_answered_then_sent, Fixture)
{
    const auto data = pattern(100000);
    const BlobInfo info = commit("CT.1", data);
    PullTransfer t = pull("CT.1", 1000, 5000, info);

    BOOST_CHECK(t.start() == Step::respond);
    const RecordingLink::Answer& a = link.answer();
    BOOST_CHECK(a.response.status == Errc::ok);
    BOOST_CHECK(a.after == AfterResponse::body);
    BOOST_CHECK_EQUAL(a.response.length, 5000u);
    BOOST_CHECK_EQUAL(a.response.blob_size, data.size());
    BOOST_CHECK(a.response.checksum == info.checksum);
    BOOST_CHECK(!t.ended());

    BOOST_CHECK(t.on_writable() == Step::done);
    const auto sent = sockets.receive(5000);
    BOOST_CHECK(std::equal(sent.begin(), sent.end(), data.begin() + 1000));
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(t.bytes_done(), 5000u);
    BOOST_CHECK_EQUAL(server.active.load(), 0u);
}

BOOST_FIXTURE_TEST_CASE(a_full_socket_asks_for_writable_and_goes_on, Fixture)
{
    const auto data = pattern(4u << 20);
    commit("CT.2", data);
    PullTransfer t = pull("CT.2", 0, data.size());
    BOOST_CHECK(t.start() == Step::respond);

    std::vector<std::uint8_t> received;
    std::thread reader([&] { received = sockets.receive(data.size()); });
    int writes = 0;
    Step step = Step::write;
    while ((step = t.on_writable()) == Step::write) {
        ++writes;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    reader.join();
    BOOST_CHECK(step == Step::done);
    BOOST_CHECK_GT(writes, 0);  // 4 MiB do not fit a socket pair's buffers
    BOOST_CHECK(received == data);
}

BOOST_FIXTURE_TEST_CASE(a_blob_replaced_since_the_ticket_is_refused_with_blob_changed, Fixture)
{
    const auto data = pattern(1000);
    BlobInfo issued_for = commit("CT.3", data);
    issued_for.size = 999;  // another version than the store's
    PullTransfer t = pull("CT.3", 0, 10, issued_for);

    BOOST_CHECK(t.start() == Step::respond);
    const RecordingLink::Answer& a = link.answer();
    BOOST_CHECK(a.response.status == Errc::blob_changed);
    BOOST_CHECK(a.after == AfterResponse::next_request);  // refused without draining
    BOOST_CHECK(a.response.message.find("pull \"CT.3\": the Blob changed since ticket") == 0);
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(server.active.load(), 0u);
}

BOOST_FIXTURE_TEST_CASE(a_pull_cancelled_on_the_control_plane_stops_sending, Fixture)
{
    commit("CT.4", pattern(1000));
    TicketBinding b = pull_binding("CT.4", 0, 1000);
    b.control = std::make_shared<TransferControl>();
    PullTransfer t(server, link, request(protocol::FrameType::pull, 0, 1000), b);
    BOOST_CHECK(t.start() == Step::respond);
    b.control->cancelled = true;
    BOOST_CHECK(t.cancelled());
    BOOST_CHECK(t.on_writable() == Step::close);
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(t.bytes_done(), 0u);
}
