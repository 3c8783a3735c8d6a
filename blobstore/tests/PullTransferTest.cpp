#include "server/PullTransfer.h"

#define BOOST_TEST_MODULE PullTransfer
#include <boost/test/unit_test.hpp>

#include "TestSupport.h"
#include "TransferTestSupport.h"

#include <blobstreaming/blobstore/BlobInFlight.h>
#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/blobstore/ReadThroughStore.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include <unistd.h>

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
    BOOST_CHECK(a.after == AfterResponse::body_at_once);  // the header goes out with the first bytes (MSG_MORE)
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

namespace {

/// A FileStore holding `data` as CT.1, its file kept open and mapped.
struct KeptFileFixture {
    blobstreaming::test::TempDir dir;
    FileStore store{dir.path()};
    TicketRegistry tickets{std::chrono::seconds(30)};
    ReservationTable reservations{std::chrono::seconds(60)};
    DataServer::Impl server{store, tickets, reservations, DataServerConfig{}};
    std::vector<std::uint8_t> data = pattern((std::size_t{8} << 20) + 1500000);
    BlobInfo info;

    KeptFileFixture()
    {
        auto r = store.reserve("CT.1", data.size());
        BOOST_REQUIRE(!r->write(data.data(), data.size()));
        info = r->commit();
        // Kept once its last change is a few clock ticks old (OpenFiles.h).
        for (int i = 0; i < 400 && store.open_files() == 0; ++i) {
            if (store.read_all("CT.1").size() == data.size() && store.open_files() == 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        BOOST_REQUIRE_EQUAL(store.open_files(), 1u);
        BOOST_REQUIRE(store.read_all("CT.1").mapped());
    }
    PullTransfer pull(TransferLink& link, std::uint64_t offset, std::uint64_t length)
    {
        TicketBinding b = pull_binding("CT.1", offset, length);
        b.version = info;
        return PullTransfer(server, link, TransferFixture::request(protocol::FrameType::pull, offset, length), b);
    }
    std::filesystem::path file() const
    {
        for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path() / "blobs"))
            if (e.path().filename() == "CT.1") return e.path();
        BOOST_FAIL("no file of CT.1 under " + (dir.path() / "blobs").string());
        return {};
    }
};

}  // namespace

// A FileStore's file kept open is mapped: a range of up to 8 MiB goes from
// the mapping (send), a larger one by sendfile; both are the version's bytes.
BOOST_FIXTURE_TEST_CASE(a_kept_file_store_blob_is_sent_from_its_mapping_or_by_sendfile, KeptFileFixture)
{
    struct Case {
        std::uint64_t offset, length;
        const char* method;
    };
    for (const Case& c : {Case{4097, 5000, "from memory"}, Case{0, std::uint64_t{1} << 20, "from memory"},
                          Case{100, 1500000, "from memory"}, Case{7, std::uint64_t{8} << 20, "from memory"},
                          Case{100, data.size() - 100, "sendfile"}}) {
        BOOST_TEST_CONTEXT("[" << c.offset << ", +" << c.length << ")")
        {
            SocketPair sockets;
            RecordingLink link{sockets.server.get()};
            PullTransfer t = pull(link, c.offset, c.length);
            BOOST_REQUIRE(t.start() == Step::respond);
            BOOST_CHECK(link.answer().response.status == Errc::ok);
            BOOST_CHECK_EQUAL(std::string(t.method()), c.method);
            std::vector<std::uint8_t> sent;
            std::thread reader([&] { sent = sockets.receive(static_cast<std::size_t>(c.length)); });
            Step step = Step::write;
            for (int i = 0; i < 100000 && step == Step::write; ++i) step = t.on_writable();
            reader.join();
            BOOST_CHECK(step == Step::done);
            BOOST_CHECK(std::equal(sent.begin(), sent.end(), data.begin() + static_cast<std::ptrdiff_t>(c.offset)));
        }
    }
}

// The daemon never reads a mapped range itself: a file truncated behind the
// store while its range is sent from the mapping fails that pull (the send
// reports EFAULT), as sendfile's would end early, and nothing else; no
// SIGBUS.
BOOST_FIXTURE_TEST_CASE(a_kept_file_truncated_while_it_is_sent_fails_the_pull_only, KeptFileFixture)
{
    SocketPair sockets;
    RecordingLink link{sockets.server.get()};
    const std::uint64_t length = std::uint64_t{4} << 20;
    PullTransfer t = pull(link, 0, length);
    BOOST_REQUIRE(t.start() == Step::respond);
    BOOST_REQUIRE_EQUAL(std::string(t.method()), "from memory");
    std::filesystem::permissions(file(), std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
    BOOST_REQUIRE(::truncate(file().c_str(), FileStore::kHeaderSize + 100000) == 0);

    std::uint64_t got = 0;
    std::thread reader([&] {
        std::vector<std::uint8_t> buffer(1 << 16);
        for (ssize_t n; (n = ::recv(sockets.client.get(), buffer.data(), buffer.size(), 0)) > 0;)
            got += static_cast<std::uint64_t>(n);
    });
    Step step = Step::write;
    for (int i = 0; i < 100000 && step == Step::write; ++i) step = t.on_writable();
    sockets.server.reset();  // the connection closes: the reader sees its end
    reader.join();
    BOOST_CHECK(step == Step::close);
    BOOST_CHECK(t.ended());
    BOOST_CHECK_LT(got, length);
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

namespace {

/// A Blob being received into a ReadThroughStore (a copy to it, or
/// read-through: a flight of its table) and pulls bound to that version:
/// the store's read follows the fill.
struct FollowFixture {
    ReadThroughStore store{std::make_unique<MemoryStore>(MemoryStore::Options{16u << 20})};
    TicketRegistry tickets{std::chrono::seconds(30)};
    ReservationTable reservations{std::chrono::seconds(60)};
    DataServer::Impl server{store, tickets, reservations, DataServerConfig{}};
    SocketPair sockets;
    RecordingLink link{sockets.server.get()};

    const std::vector<std::uint8_t> data = pattern(1000);
    std::unique_ptr<Reservation> reservation = store.reserve("F.1", data.size());
    std::shared_ptr<FlightTable::Flight> flight;
    std::shared_ptr<BlobInFlight> progress;

    FollowFixture()
    {
        bool first = false;
        flight = store.flights().join("F.1", first);
        progress = std::make_shared<BlobInFlight>(BlobInfo{"F.1", data.size(), crc_of(data), {}});
        progress->attach(reservation.get());
        store.flights().begun(*flight, progress);
    }
    ~FollowFixture() { store.stop(); }
    /// A pull of the whole Blob, its ticket issued while it arrives.
    PullTransfer pull()
    {
        TicketBinding b = pull_binding("F.1", 0, data.size());
        b.version = store.holding("F.1").version;
        return PullTransfer(server, link, TransferFixture::request(protocol::FrameType::pull, 0, data.size()), b);
    }
    void land(std::size_t from, std::size_t size)
    {
        BOOST_REQUIRE(!reservation->write(data.data() + from, size));
        progress->landed(from + size);
    }
    void commit()
    {
        progress->detach();
        const BlobInfo info = reservation->commit();
        progress->finish(info);
        store.flights().land("F.1", *flight, info, nullptr);
    }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(bytes_being_filled_are_sent_as_they_land_then_from_the_committed_blob, FollowFixture)
{
    BOOST_REQUIRE(store.holding("F.1").in_flight);
    land(0, 400);
    PullTransfer t = pull();
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
    commit();
    BOOST_CHECK(t.on_writable() == Step::done);
    const auto rest = sockets.receive(600);
    BOOST_CHECK(std::equal(rest.begin(), rest.end(), data.begin() + 400));
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(t.bytes_done(), data.size());
    BOOST_CHECK_EQUAL(server.active.load(), 0u);
}

BOOST_FIXTURE_TEST_CASE(a_fill_that_fails_fails_its_followers, FollowFixture)
{
    land(0, 100);
    PullTransfer t = pull();
    BOOST_CHECK(t.start() == Step::respond);
    BOOST_CHECK(t.on_writable() == Step::wait);
    progress->fail(Errc::unreachable, "the source store is gone");
    BOOST_CHECK(t.on_writable() == Step::close);
    BOOST_CHECK(t.ended());
    BOOST_CHECK_EQUAL(t.bytes_done(), 100u);
    BOOST_CHECK_EQUAL(server.active.load(), 0u);
}

BOOST_FIXTURE_TEST_CASE(a_ticket_issued_during_the_fill_is_served_from_its_commit, FollowFixture)
{
    PullTransfer t = pull();
    land(0, 1000);
    commit();
    BOOST_CHECK(t.start() == Step::respond);
    BOOST_CHECK(link.answer().response.status == Errc::ok);
    BOOST_CHECK(t.on_writable() == Step::done);
    BOOST_CHECK(sockets.receive(1000) == data);
}

BOOST_FIXTURE_TEST_CASE(a_ticket_issued_during_a_fill_that_failed_since_gets_its_error, FollowFixture)
{
    PullTransfer t = pull();
    land(0, 10);
    progress->detach();
    progress->fail(Errc::unreachable, "the source store is gone");
    reservation.reset();
    store.flights().land("F.1", *flight, std::nullopt,
                         std::make_exception_ptr(Error(Errc::unreachable, "the source store is gone")));
    BOOST_CHECK(t.start() == Step::respond);
    BOOST_CHECK(link.answer().response.status == Errc::unreachable);
    BOOST_CHECK(link.answer().response.message.find("the source store is gone") != std::string::npos);
    BOOST_CHECK(t.ended());
}

BOOST_FIXTURE_TEST_CASE(a_ticket_for_the_committed_version_is_served_while_a_newer_one_arrives, FollowFixture)
{
    const auto old_bytes = pattern(300);
    BlobInfo old_version;
    {
        auto r = store.reserve("F.2", old_bytes.size());
        BOOST_REQUIRE(!r->write(old_bytes.data(), old_bytes.size()));
        old_version = r->commit();
    }
    TicketBinding b = pull_binding("F.2", 0, old_bytes.size());
    b.version = store.holding("F.2").version;
    PullTransfer t(server, link, TransferFixture::request(protocol::FrameType::pull, 0, old_bytes.size()), b);

    // A copy replacing it begins: reads follow the new version from now on.
    auto replacing = store.reserve("F.2", 5000, ReserveMode::replace);
    bool first = false;
    const auto copy = store.flights().join("F.2", first);
    const auto arriving = std::make_shared<BlobInFlight>(BlobInfo{"F.2", 5000, crc_of(pattern(5000)), {}});
    arriving->attach(replacing.get());
    store.flights().begun(*copy, arriving);
    BOOST_REQUIRE(store.holding("F.2").in_flight);

    BOOST_CHECK(t.start() == Step::respond);
    BOOST_CHECK(link.answer().response.status == Errc::ok);
    BOOST_CHECK(link.answer().response.checksum == old_version.checksum);
    BOOST_CHECK(t.on_writable() == Step::done);
    BOOST_CHECK(sockets.receive(old_bytes.size()) == old_bytes);
    arriving->detach();
    arriving->fail(Errc::cancelled, "the test ends");
    store.flights().land("F.2", *copy, std::nullopt, std::make_exception_ptr(Error(Errc::cancelled, "the test ends")));
}
