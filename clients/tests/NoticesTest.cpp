// Transfer notices end to end (PushOptions/PullOptions::notices) against real
// blobstored daemons and omniNames: send notices reach SessionOptions::on_notice
// through the Session's callback object, queued ones are taken by
// poll_notices(), none come without a mode, and a failed transfer's notice
// says why.
#include <blobstreaming/client/Session.h>

#include "ErrorOf.h"

#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE NoticesTest
#include <boost/test/unit_test.hpp>

#include "TestProcesses.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::client;
using namespace blobstreaming::client::test;

namespace {

/// The stores connect back to this process's callback object: on loopback only.
struct LoopbackOrb {
    LoopbackOrb() { ::setenv("ORBendPoint", "giop:tcp:127.0.0.1:", 1); }
};
BOOST_TEST_GLOBAL_FIXTURE(LoopbackOrb);

constexpr auto kBound = std::chrono::seconds(10);

std::vector<std::uint8_t> pattern(std::size_t size)
{
    std::vector<std::uint8_t> v(size);
    for (std::size_t i = 0; i < size; ++i) v[i] = static_cast<std::uint8_t>(i * 7 + 3);
    return v;
}

/// What on_notice received, and a bounded wait for it.
class Received {
public:
    NoticeCallback callback()
    {
        return [this](const TransferNotice& n) {
            std::lock_guard lock(mutex_);
            notices_.push_back(n);
            changed_.notify_all();
        };
    }
    /// The notices once there are at least `count` (or after kBound).
    std::vector<TransferNotice> wait_for(std::size_t count)
    {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, kBound, [&] { return notices_.size() >= count; });
        return notices_;
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<TransferNotice> notices_;
};

Session::Options options(const std::string& store, NoticeCallback on_notice = {})
{
    auto o = options_for(shared_stores().ns.url());
    o.default_store = store;
    o.on_notice = std::move(on_notice);
    return o;
}

/// poll_notices(store) until it returns some (or after kBound): the store
/// queues a notice as its data connection ends, which may come just after
/// the client's completion.
std::vector<TransferNotice> poll_until_some(Session& session, const std::string& store)
{
    const auto deadline = std::chrono::steady_clock::now() + kBound;
    for (;;) {
        auto got = session.poll_notices(store);
        if (!got.empty() || std::chrono::steady_clock::now() > deadline) return got;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

void check_success(const TransferNotice& n, const std::string& store, const std::string& blob,
                   TransferDirection direction, std::uint64_t bytes)
{
    BOOST_TEST(n.store == store);
    BOOST_TEST(n.blob == blob);
    BOOST_TEST(to_string(n.direction) == to_string(direction));
    BOOST_TEST(n.succeeded);
    BOOST_TEST(n.bytes == bytes);
    BOOST_TEST(n.reason.empty());
    BOOST_TEST(n.ticket.size() == 32u);
    BOOST_TEST(n.received.time_since_epoch().count() > 0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(send_notices_for_a_push_and_a_pull_and_none_without_a_mode)
{
    Received received;
    Session session(options("ws", received.callback()));
    const auto bytes = pattern(300 * 1024 + 5);
    PushOptions push;
    push.replace = true;
    // Without a mode first: the store sends notices of one Session in
    // order, so had this one been sent it would be the first received.
    session.push_memory(bytes.data(), bytes.size(), "notice.none", push);
    BOOST_TEST(session.pull_memory("notice.none") == bytes);

    push.notices = NoticeMode::send;
    const BlobInfo info = session.push_memory(bytes.data(), bytes.size(), "notice.send", push);
    BOOST_TEST(info.size == bytes.size());
    auto got = received.wait_for(1);
    BOOST_REQUIRE_EQUAL(got.size(), 1u);
    check_success(got[0], "ws", "notice.send", TransferDirection::push, bytes.size());
    BOOST_TEST(got[0].offset == 0u);

    // "ws" is a file store on this host: with a notice the pull still goes
    // over the data connection, where the store sees it.
    PullOptions pull;
    pull.notices = NoticeMode::send;
    pull.offset = 1000;
    pull.length = 5000;
    std::vector<std::uint8_t> part;
    session.pull("notice.send", PullSink::memory(&part), pull, Mode::Sync,
                 [](const Result& r) { BOOST_TEST(r.ok(), r.message); });
    BOOST_TEST((part == std::vector<std::uint8_t>(bytes.begin() + 1000, bytes.begin() + 6000)));
    got = received.wait_for(2);
    BOOST_REQUIRE_EQUAL(got.size(), 2u);
    check_success(got[1], "ws", "notice.send", TransferDirection::pull, 5000);
    BOOST_TEST(got[1].offset == 1000u);
    BOOST_TEST(got[1].length == 5000u);
    BOOST_TEST(got[0].ticket != got[1].ticket);
    // Send notices are not kept for a poll.
    BOOST_TEST(session.poll_notices("ws").empty());
}

BOOST_AUTO_TEST_CASE(queued_notices_are_taken_by_poll_once)
{
    Received received;
    Session session(options("mem", received.callback()));
    const auto bytes = pattern(200 * 1024);
    // Nothing before a transfer: no transporter, then none asked for.
    BOOST_TEST(session.poll_notices("mem").empty());
    BOOST_TEST(session.poll_notices().empty());
    PushOptions push;
    push.replace = true;
    session.push_memory(bytes.data(), bytes.size(), "queue.none", push);
    BOOST_TEST(session.poll_notices("mem").empty());

    push.notices = NoticeMode::queue;
    session.push_memory(bytes.data(), bytes.size(), "queue.push", push);
    auto got = poll_until_some(session, "mem");
    BOOST_REQUIRE_EQUAL(got.size(), 1u);
    check_success(got[0], "mem", "queue.push", TransferDirection::push, bytes.size());
    BOOST_TEST(session.poll_notices("mem").empty());  // each once

    PullOptions pull;
    pull.notices = NoticeMode::queue;
    BOOST_TEST(session.pull_memory("queue.push", pull) == bytes);
    session.pull_memory("queue.none");  // no mode: no notice
    got = poll_until_some(session, "mem");
    BOOST_REQUIRE_EQUAL(got.size(), 1u);
    check_success(got[0], "mem", "queue.push", TransferDirection::pull, bytes.size());

    // Across every store this Session used.
    session.push_memory(bytes.data(), bytes.size(), "queue.all", push);
    const auto deadline = std::chrono::steady_clock::now() + kBound;
    std::vector<TransferNotice> all;
    while (all.empty() && std::chrono::steady_clock::now() < deadline) all = session.poll_notices();
    BOOST_REQUIRE_EQUAL(all.size(), 1u);
    check_success(all[0], "mem", "queue.all", TransferDirection::push, bytes.size());

    // Queued notices are not sent to the callback.
    BOOST_TEST(received.wait_for(0).empty());
}

BOOST_AUTO_TEST_CASE(a_failed_transfer_is_noticed_with_its_reason)
{
    Received received;
    Session session(options("mem", received.callback()));
    constexpr std::uint64_t size = 4 * 1024 * 1024;
    bool produced = false;
    // Some bytes, then the source fails: the client drops the data connection.
    auto source = PushSource::producer(size, [&produced](std::uint8_t* buffer, std::size_t capacity) -> std::size_t {
        if (produced) throw Error(Errc::io_error, "the scanner went away");
        produced = true;
        const std::size_t n = std::min<std::size_t>(capacity, 64 * 1024);
        std::memset(buffer, 0x5a, n);
        return n;
    });
    PushOptions push;
    push.replace = true;
    push.notices = NoticeMode::send;
    Result result;
    session.push(source, "notice.failed", push, Mode::Sync, [&](const Result& r) { result = r; });
    BOOST_TEST(!result.ok());
    const auto got = received.wait_for(1);
    BOOST_REQUIRE_EQUAL(got.size(), 1u);
    BOOST_TEST(got[0].blob == "notice.failed");
    BOOST_TEST(got[0].store == "mem");
    BOOST_TEST(!got[0].succeeded);
    BOOST_TEST(got[0].bytes < size);
    BOOST_TEST(!got[0].reason.empty());
    BOOST_TEST_MESSAGE("the store's reason: " << got[0].reason);
    const auto missing = error_of([&] { session.stat("notice.failed", "mem"); });  // nothing partial
    BOOST_REQUIRE(missing);
    BOOST_TEST(static_cast<int>(missing->code()) == static_cast<int>(Errc::no_such_blob));
}

BOOST_AUTO_TEST_CASE(send_without_a_callback_is_refused_at_the_call)
{
    Session session(options("mem"));
    const auto bytes = pattern(1000);
    PushOptions push;
    push.replace = true;
    push.notices = NoticeMode::send;
    auto e = error_of([&] { session.push_memory(bytes.data(), bytes.size(), "notice.nocb", push); });
    BOOST_REQUIRE(e);
    BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::invalid_argument));
    BOOST_TEST(std::string(e->what()) ==
               "push \"notice.nocb\": notices send: the Session has no callback to receive them; set "
               "SessionOptions::on_notice, or use notices queue and Session::poll_notices()");

    PullOptions pull;
    pull.notices = NoticeMode::send;
    e = error_of([&] { session.pull_memory("notice.nocb", pull); });
    BOOST_REQUIRE(e);
    BOOST_TEST(std::string(e->what()).find("pull \"notice.nocb\": notices send: the Session has no callback") == 0u,
               e->what());

    push.notices = static_cast<NoticeMode>(7);
    e = error_of([&] { session.push_memory(bytes.data(), bytes.size(), "notice.nocb", push); });
    BOOST_REQUIRE(e);
    BOOST_TEST(std::string(e->what()) == "push \"notice.nocb\": notices 7: expected NoticeMode::none, send or queue");
    // Refused before anything reached a store.
    e = error_of([&] { session.stat("notice.nocb", "mem"); });
    BOOST_REQUIRE(e);
    BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::no_such_blob));
}

BOOST_AUTO_TEST_CASE(mode_names)
{
    BOOST_TEST(to_string(NoticeMode::send) == std::string("send"));
    BOOST_TEST((notice_mode_of("queue") == NoticeMode::queue));
    BOOST_TEST((notice_mode_of("none") == NoticeMode::none));
    BOOST_TEST(!notice_mode_of("SEND"));
}
