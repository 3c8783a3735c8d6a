// User callbacks that throw, against a real blobstored and omniNames: a
// producer, a consumer and a progress callback that throw something other
// than blobstreaming::Error fail their own transfer with a Result naming the
// callback (never std::terminate on the reactor thread, never a Session that
// hangs), in Mode::Sync and Mode::Async, with the library's reactor thread
// and with the caller's. A failed push leaves nothing in the store.
#include <blobstreaming/client/Session.h>

#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE CallbackTest
#include <boost/test/unit_test.hpp>

#include "TestProcesses.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::client;
using namespace blobstreaming::client::test;

namespace {

/// omniNames and a FileStore "ws" (local fast path possible), shared by all cases.
struct Stores {
    NameServer ns;
    StoreDaemon ws{ns, "ws", "file:" + ns.dir() + "/ws"};
};

Stores& stores()
{
    static Stores s;
    return s;
}

Session::Options options(ReactorMode reactor, bool local_fast_path = true)
{
    auto o = options_for(stores().ns.url());
    o.default_store = "ws";
    o.reactor = reactor;
    o.local_fast_path = local_fast_path;
    return o;
}

/// Every combination the cases run: both modes, both reactors.
struct Variant {
    ReactorMode reactor;
    Mode mode;
    std::string label() const
    {
        return std::string(reactor == ReactorMode::Thread ? "thread" : "caller") + "." +
               (mode == Mode::Sync ? "sync" : "async");
    }
};

const std::vector<Variant> kVariants = {{ReactorMode::Thread, Mode::Sync},
                                        {ReactorMode::Thread, Mode::Async},
                                        {ReactorMode::Caller, Mode::Sync},
                                        {ReactorMode::Caller, Mode::Async}};

/// Starts one operation with `start(mode, completion)` and returns its
/// Result, waiting at most 30 s (ReactorMode::Caller: driving run_once).
template <class Start>
Result outcome_of(Session& session, Mode mode, Start start)
{
    std::mutex mutex;
    std::condition_variable cv;
    std::optional<Result> out;
    int completions = 0;
    start(mode, [&](const Result& r) {
        std::lock_guard<std::mutex> lock(mutex);
        out = r;
        ++completions;
        cv.notify_all();
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::unique_lock<std::mutex> lock(mutex);
    while (!out && std::chrono::steady_clock::now() < deadline) {
        if (session.options().reactor == ReactorMode::Caller) {
            lock.unlock();
            session.run_once(std::chrono::milliseconds(100));
            lock.lock();
        } else {
            cv.wait_until(lock, deadline, [&] { return out.has_value(); });
        }
    }
    BOOST_REQUIRE_MESSAGE(out.has_value(), "no completion within 30 s");
    BOOST_TEST(completions == 1);
    return *out;
}

/// A producer of `size` bytes that throws `std::runtime_error(why)` on its
/// second call (after its first bytes went out).
PushSource::Producer throwing_producer(const std::string& why)
{
    auto calls = std::make_shared<int>(0);
    return [calls, why](std::uint8_t* buffer, std::size_t capacity) -> std::size_t {
        if (++*calls > 1) throw std::runtime_error(why);
        std::fill(buffer, buffer + capacity, 0x42);
        return capacity;
    };
}

constexpr std::uint64_t kSize = 3 * 1024 * 1024;  // more than one producer call / consumer piece

/// The push of `name` failed and left nothing: not listed, and its
/// reservation released (the daemon drops it when its data connection sees
/// the end, which may come just after the completion: polled for 10 s).
void check_nothing_stored(Session& session, const std::string& name)
{
    for (const auto& blob : session.list("ws")) BOOST_TEST(blob.info.name != name);
    BOOST_TEST(reserved_once_settled(session) == 0u, name << ": bytes still reserved");
}

/// A Blob of kSize bytes to pull.
void put(Session& session, const std::string& name)
{
    PushOptions replace;
    replace.replace = true;
    session.push_memory(std::vector<std::uint8_t>(kSize, 0x17).data(), kSize, name, replace);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_producer_that_throws_fails_its_push, *boost::unit_test::timeout(120))
{
    for (const auto& v : kVariants) {
        Session session(options(v.reactor));
        const std::string name = "producer." + v.label();
        const Result r = outcome_of(session, v.mode, [&](Mode mode, Completion done) {
            session.push(PushSource::producer(kSize, throwing_producer("the scanner went away")), name, PushOptions{},
                         mode, done);
        });
        BOOST_TEST(r.errc() == Errc::io_error, v.label() << ": " << r.message);
        BOOST_TEST(r.message == "push \"" + name + "\": the producer threw: the scanner went away", v.label());
        check_nothing_stored(session, name);
    }

    // Something that is not a std::exception is named as such.
    Session session(options(ReactorMode::Thread));
    const Result r = outcome_of(session, Mode::Async, [&](Mode mode, Completion done) {
        session.push(PushSource::producer(kSize, [](std::uint8_t*, std::size_t) -> std::size_t { throw 42; }),
                     "producer.int", PushOptions{}, mode, done);
    });
    BOOST_TEST(r.errc() == Errc::io_error, r.message);
    BOOST_TEST(r.message == "push \"producer.int\": the producer threw an exception that is not a std::exception");
    check_nothing_stored(session, "producer.int");
}

BOOST_AUTO_TEST_CASE(a_consumer_that_throws_fails_its_pull, *boost::unit_test::timeout(120))
{
    {
        Session session(options(ReactorMode::Thread));
        put(session, "consumed.1");
    }
    for (bool local : {true, false}) {
        for (const auto& v : kVariants) {
            Session session(options(v.reactor, local));
            int calls = 0;
            const Result r = outcome_of(session, v.mode, [&](Mode mode, Completion done) {
                session.pull("consumed.1",
                             PullSink::consumer([&calls](const std::uint8_t*, std::size_t, std::uint64_t) {
                                 if (++calls > 1) throw std::runtime_error("the viewer closed");
                             }),
                             PullOptions{}, mode, done);
            });
            const std::string label = v.label() + (local ? ".local" : ".network");
            BOOST_TEST(r.errc() == Errc::io_error, label << ": " << r.message);
            BOOST_TEST(r.message == "pull \"consumed.1\": store \"ws\": the consumer threw: the viewer closed", label);
            BOOST_TEST(r.local == local, label);
            BOOST_TEST(calls == 2, label);  // never called again after it threw
            // The Session goes on: the next pull works.
            BOOST_TEST(session.pull_memory("consumed.1").size() == kSize, label);
        }
    }
}

BOOST_AUTO_TEST_CASE(a_progress_callback_that_throws_fails_its_transfer, *boost::unit_test::timeout(120))
{
    const Progress throwing = [](std::uint64_t, std::uint64_t) { throw std::logic_error("the bar is gone"); };
    for (const auto& v : kVariants) {
        Session session(options(v.reactor, false));
        const std::string name = "progress." + v.label();
        PushOptions push;
        push.progress = throwing;
        const std::vector<std::uint8_t> bytes(kSize, 0x33);
        const Result pushed = outcome_of(session, v.mode, [&](Mode mode, Completion done) {
            session.push(PushSource::memory(bytes.data(), bytes.size()), name, push, mode, done);
        });
        BOOST_TEST(pushed.errc() == Errc::io_error, v.label() << ": " << pushed.message);
        BOOST_TEST(pushed.message ==
                       "push \"" + name + "\": store \"ws\": the progress callback threw: the bar is gone",
                   v.label());
        check_nothing_stored(session, name);
    }

    {
        Session session(options(ReactorMode::Thread));
        put(session, "progress.pulled");
    }
    for (bool local : {true, false}) {
        for (const auto& v : kVariants) {
            Session session(options(v.reactor, local));
            PullOptions pull;
            pull.progress = throwing;
            std::vector<std::uint8_t> out;
            const Result r = outcome_of(session, v.mode, [&](Mode mode, Completion done) {
                session.pull("progress.pulled", PullSink::memory(&out), pull, mode, done);
            });
            const std::string label = v.label() + (local ? ".local" : ".network");
            BOOST_TEST(r.errc() == Errc::io_error, label << ": " << r.message);
            BOOST_TEST(r.message ==
                           "pull \"progress.pulled\": store \"ws\": the progress callback threw: the bar is gone",
                       label);
            BOOST_TEST(r.local == local, label);
        }
    }
}
