// Session transfers end to end against real blobstored daemons (a FileStore
// and a MemoryStore) and omniNames: every source and sink, ranges, the
// local fast path, connection reuse, Thread mode with several calling
// threads, and the failure paths a workstation sees.
#include <blobstreaming/client/Session.h>
#include <chrono>

#include "ErrorOf.h"

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE TransferTest
#include <boost/test/unit_test.hpp>

#include "TestProcesses.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::client;
using namespace blobstreaming::client::test;

namespace {

std::vector<std::uint8_t> pattern(std::size_t size, unsigned seed)
{
    std::vector<std::uint8_t> v(size);
    std::uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (auto& b : v) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b = static_cast<std::uint8_t>(x);
    }
    return v;
}

SharedStores& stores() { return shared_stores(); }

Session::Options options(const std::string& store, ReactorMode mode = ReactorMode::Thread)
{
    auto o = options_for(stores().ns.url());
    o.default_store = store;
    o.reactor = mode;
    return o;
}

using test::error_of;

}  // namespace

BOOST_AUTO_TEST_CASE(memory_round_trip_with_ranges)
{
    for (const char* store : {"ws", "mem"}) {
        for (bool local : {true, false}) {
            auto o = options(store);
            o.local_fast_path = local;
            Session session(o);
            const auto bytes = pattern(3 * 1024 * 1024 + 11, 1);
            PushOptions replace;
            replace.replace = true;
            const BlobInfo info = session.push_memory(bytes.data(), bytes.size(), "rt.1", replace);
            BOOST_TEST(info.size == bytes.size());
            BOOST_TEST(info.checksum.text() == ChecksumState::of(kDefaultChecksum, bytes.data(), bytes.size()).text());

            BOOST_TEST((session.pull_memory("rt.1") == bytes));

            PullOptions range;
            range.offset = 1000;
            range.length = 4096;  // a header only
            const auto part = session.pull_memory("rt.1", range);
            BOOST_TEST((part == std::vector<std::uint8_t>(bytes.begin() + 1000, bytes.begin() + 5096)));

            Result r;
            std::vector<std::uint8_t> whole;
            session.pull("rt.1", PullSink::memory(&whole), PullOptions{}, Mode::Sync, [&r](const Result& x) { r = x; });
            BOOST_TEST(r.ok(), r.message);
            BOOST_TEST(r.local == (local && std::string(store) == "ws"));
            BOOST_TEST(r.store == store);
        }
    }
}

BOOST_AUTO_TEST_CASE(same_host_pulls_to_files_memory_and_a_consumer)
{
    // 20 MiB + 5: several slices of the local path, hashed on the helper
    // thread; to a file (kernel copy), to memory, to a consumer (bounce
    // buffer), whole and as a range, with progress on the reactor thread.
    Session session(options("ws"));
    const auto bytes = pattern(20 * 1024 * 1024 + 5, 7);
    PushOptions replace;
    replace.replace = true;
    session.push_memory(bytes.data(), bytes.size(), "local.1", replace);
    const std::string out = stores().ns.dir() + "/local-out.bin";
    const auto read_back = [&out] {
        std::ifstream in(out, std::ios::binary);
        return std::vector<std::uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    std::vector<std::uint64_t> seen;
    PullOptions whole;
    whole.progress = [&seen](std::uint64_t done, std::uint64_t total) {
        BOOST_TEST(total == 20u * 1024 * 1024 + 5);
        seen.push_back(done);
    };
    const Result r = session.pull_file("local.1", out, whole);
    BOOST_TEST(r.ok(), r.message);
    BOOST_TEST(r.local);
    BOOST_TEST((read_back() == bytes));
    BOOST_REQUIRE(!seen.empty());
    BOOST_TEST(std::is_sorted(seen.begin(), seen.end()));
    BOOST_TEST(seen.back() == bytes.size());

    PullOptions range;
    range.offset = 4097;
    range.length = 9 * 1024 * 1024;
    BOOST_TEST(session.pull_file("local.1", out, range).ok());
    BOOST_TEST(
        (read_back() == std::vector<std::uint8_t>(bytes.begin() + 4097, bytes.begin() + 4097 + 9 * 1024 * 1024)));
    BOOST_TEST((session.pull_memory("local.1") == bytes));

    std::vector<std::uint8_t> consumed;
    Result c;
    session.pull("local.1",
                 PullSink::consumer([&consumed](const std::uint8_t* data, std::size_t n, std::uint64_t offset) {
                     BOOST_TEST(offset == consumed.size());
                     consumed.insert(consumed.end(), data, data + n);
                 }),
                 PullOptions{}, Mode::Sync, [&c](const Result& x) { c = x; });
    BOOST_TEST(c.ok(), c.message);
    BOOST_TEST(c.local);
    BOOST_TEST((consumed == bytes));
}

BOOST_AUTO_TEST_CASE(file_producer_and_consumer)
{
    Session session(options("ws"));
    const auto bytes = pattern(5 * 1024 * 1024, 2);
    const std::string in = stores().ns.dir() + "/in.bin";
    const std::string out = stores().ns.dir() + "/out.bin";
    std::ofstream(in, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    PushOptions replace;
    replace.replace = true;
    session.push_file(in, "file.1", replace);
    PullOptions remote;
    session.pull_file("file.1", out, remote);
    std::ifstream back(out, std::ios::binary);
    std::vector<std::uint8_t> got((std::istreambuf_iterator<char>(back)), std::istreambuf_iterator<char>());
    BOOST_TEST((got == bytes));

    std::size_t produced = 0;
    Result pushed;
    session.push(PushSource::producer(bytes.size(),
                                      [&](std::uint8_t* buf, std::size_t cap) {
                                          std::copy(bytes.begin() + static_cast<long>(produced),
                                                    bytes.begin() + static_cast<long>(produced + cap), buf);
                                          produced += cap;
                                          return cap;
                                      }),
                 "gen.1", replace, Mode::Sync, [&](const Result& r) { pushed = r; });
    BOOST_TEST(pushed.ok(), pushed.message);
    BOOST_TEST(produced == bytes.size());

    std::vector<std::uint8_t> streamed;
    std::uint64_t expected_offset = 0;
    bool in_order = true;
    Result pulled;
    session.pull("gen.1", PullSink::consumer([&](const std::uint8_t* data, std::size_t size, std::uint64_t offset) {
                     in_order = in_order && offset == expected_offset;
                     expected_offset += size;
                     streamed.insert(streamed.end(), data, data + size);
                 }),
                 PullOptions{}, Mode::Sync, [&](const Result& r) { pulled = r; });
    BOOST_TEST(pulled.ok(), pulled.message);
    BOOST_TEST(in_order);
    BOOST_TEST((streamed == bytes));
}

BOOST_AUTO_TEST_CASE(a_series_reuses_connections_from_several_threads)
{
    auto o = options("mem");
    o.local_fast_path = false;
    Session session(o);
    constexpr int kThreads = 4, kEach = 25;
    std::atomic<int> ok{0}, completions{0};
    std::mutex mutex;
    std::condition_variable all_done;
    std::vector<std::thread> threads;
    const auto bytes = pattern(64 * 1024, 3);
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kEach; ++i) {
                PushOptions replace;
                replace.replace = true;
                session.push(PushSource::owned(bytes), "s." + std::to_string(t) + "." + std::to_string(i), replace,
                             Mode::Async, [&](const Result& r) {
                                 if (r.ok()) ++ok;
                                 std::lock_guard<std::mutex> lock(mutex);
                                 ++completions;
                                 all_done.notify_all();
                             });
            }
        });
    }
    for (auto& t : threads) t.join();
    std::unique_lock<std::mutex> lock(mutex);
    BOOST_TEST(all_done.wait_for(lock, std::chrono::seconds(30), [&] { return completions == kThreads * kEach; }));
    BOOST_TEST(ok.load() == kThreads * kEach);
    BOOST_TEST(session.connections_opened() >= 1u);
    BOOST_TEST(session.connections_opened() <= 8u);  // the per-endpoint cap, not one per push
}

BOOST_AUTO_TEST_CASE(caller_mode_runs_completions_in_run_once)
{
    Session session(options("mem", ReactorMode::Caller));
    const auto bytes = pattern(100000, 4);
    const auto me = std::this_thread::get_id();
    int done = 0;
    bool on_caller = true;
    for (int i = 0; i < 10; ++i) {
        PushOptions replace;
        replace.replace = true;
        session.push(PushSource::owned(bytes), "c." + std::to_string(i), replace, Mode::Async, [&](const Result& r) {
            BOOST_TEST(r.ok(), r.message);
            on_caller = on_caller && std::this_thread::get_id() == me;
            ++done;
        });
    }
    BOOST_TEST(done == 0);  // nothing completes before the loop runs
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (done < 10 && std::chrono::steady_clock::now() < deadline) session.run_once(std::chrono::milliseconds(100));
    BOOST_TEST(done == 10);
    BOOST_TEST(on_caller);
    BOOST_TEST(session.pending() == 0u);
}

BOOST_AUTO_TEST_CASE(a_sync_named_transfer_runs_on_the_caller_thread_an_async_one_never_blocks_it)
{
    auto o = options("mem");
    o.local_fast_path = false;  // a pull over the data connection, not the store's file
    Session session(o);
    const auto bytes = pattern(512 * 1024, 21);
    PushOptions replace;
    replace.replace = true;
    session.push_memory(bytes.data(), bytes.size(), "here.1", replace);  // a ticket: the store's route is learnt
    const auto me = std::this_thread::get_id();
    const auto opened = session.connections_opened();

    // Mode::Sync: the named push and pull, and their completions, on this
    // thread, on the pooled connection.
    std::thread::id pushed_on, pulled_on;
    Result pushed, pulled;
    session.push(PushSource::memory(bytes.data(), bytes.size()), "here.1", replace, Mode::Sync, [&](const Result& r) {
        pushed = r;
        pushed_on = std::this_thread::get_id();
    });
    BOOST_TEST(pushed.ok(), pushed.message);
    BOOST_TEST((pushed_on == me));
    std::vector<std::uint8_t> got;
    session.pull("here.1", PullSink::memory(&got), PullOptions{}, Mode::Sync, [&](const Result& r) {
        pulled = r;
        pulled_on = std::this_thread::get_id();
    });
    BOOST_TEST(pulled.ok(), pulled.message);
    BOOST_TEST((pulled_on == me));
    BOOST_TEST((got == bytes));
    BOOST_TEST(pulled.info.checksum.text() == pushed.info.checksum.text());
    BOOST_TEST(session.connections_opened() == opened);

    // Mode::Async with the same route: the call returns first, the
    // completion runs on the Session's thread (it waits, bounded, for the
    // call to have returned: a transfer run inside the call would find it
    // never did).
    std::mutex mutex;
    std::condition_variable cv;
    bool returned = false, completed = false, saw_return = false;
    std::thread::id async_on;
    Result async;
    std::vector<std::uint8_t> again;
    session.pull("here.1", PullSink::memory(&again), PullOptions{}, Mode::Async, [&](const Result& r) {
        std::unique_lock<std::mutex> lock(mutex);
        saw_return = cv.wait_for(lock, std::chrono::seconds(10), [&] { return returned; });
        async = r;
        async_on = std::this_thread::get_id();
        completed = true;
        cv.notify_all();
    });
    {
        std::unique_lock<std::mutex> lock(mutex);
        returned = true;
        cv.notify_all();
        BOOST_REQUIRE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return completed; }));
    }
    BOOST_TEST(saw_return);
    BOOST_TEST(async.ok(), async.message);
    BOOST_TEST((async_on != me));
    BOOST_TEST((again == bytes));
    // The loop counts the operation done once its completion has returned.
    for (int i = 0; i < 5000 && session.pending() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    BOOST_TEST(session.pending() == 0u);
}

BOOST_AUTO_TEST_CASE(failures_name_the_object_and_the_reason)
{
    Session session(options("ws"));
    const auto bytes = pattern(1000, 5);
    PushOptions replace;
    replace.replace = true;
    session.push_memory(bytes.data(), bytes.size(), "dup.1", replace);

    auto e = error_of([&] { session.push_memory(bytes.data(), bytes.size(), "dup.1"); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::already_exists));
    BOOST_TEST(std::string(e->what()).find("push \"dup.1\": store \"ws\": ") == 0u, e->what());

    e = error_of([&] { session.pull_memory("missing.1"); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::no_such_blob));

    PullOptions beyond;
    beyond.offset = 5000;
    e = error_of([&] { session.pull_memory("dup.1", beyond); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::invalid_range));

    std::uint8_t small[10];
    Result r;
    session.pull("dup.1", PullSink::buffer(small, sizeof small), PullOptions{}, Mode::Sync,
                 [&r](const Result& x) { r = x; });
    BOOST_TEST(r.errc() == Errc::invalid_range);

    Result produced;
    session.push(PushSource::producer(100, [](std::uint8_t*, std::size_t) { return std::size_t(0); }), "short.1",
                 replace, Mode::Sync, [&](const Result& x) { produced = x; });
    BOOST_TEST(produced.errc() == Errc::io_error);
    BOOST_TEST(!session.stat("dup.1").name.empty());
    e = error_of([&] { session.stat("short.1"); });  // the failed push left nothing
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::no_such_blob));

    session.remove("dup.1");
    BOOST_TEST(session.locate("dup.1").empty());
}

BOOST_AUTO_TEST_CASE(destroying_a_session_completes_everything_once)
{
    for (ReactorMode mode : {ReactorMode::Thread, ReactorMode::Caller}) {
        std::atomic<int> completions{0}, cancelled{0}, succeeded{0};
        {
            Session session(options("ws", mode));
            const auto bytes = pattern(8 * 1024 * 1024, 6);
            for (int i = 0; i < 3; ++i) {
                PushOptions replace;
                replace.replace = true;
                // A name per mode: the daemon abandons the cancelled pushes of the first
                // session on its own time, and a name still being written is refused.
                session.push(PushSource::owned(bytes),
                             "gone." + std::to_string(static_cast<int>(mode)) + "." + std::to_string(i), replace,
                             Mode::Async, [&](const Result& r) {
                                 ++completions;
                                 if (r.errc() == Errc::cancelled) ++cancelled;
                                 if (r.ok()) ++succeeded;
                                 if (!r.ok() && r.errc() != Errc::cancelled) BOOST_TEST_MESSAGE(r.message);
                             });
            }
        }  // destroyed with the pushes in flight
        BOOST_TEST(completions.load() == 3);
        BOOST_TEST(cancelled.load() + succeeded.load() == 3, "mode " << static_cast<int>(mode));
    }
}

BOOST_AUTO_TEST_CASE(a_source_that_fails_midway_stores_nothing)
{
    // A file that shrinks while it is pushed: the push fails at once with
    // the file's name (not a busy wait on a socket until the timeout, not a
    // short Blob). A small send buffer keeps the transfer going long enough
    // for the progress callback, which truncates the file, to run mid-way.
    auto o = options("ws");
    o.send_buffer = 4096;
    Session session(o);
    const std::string in = stores().ns.dir() + "/shrinking.bin";
    {
        const auto bytes = pattern(64 << 20, 7);
        std::ofstream(in, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    std::uint64_t truncated_at = 0;
    PushOptions push;
    push.progress = [&](std::uint64_t done, std::uint64_t total) {
        if (truncated_at == 0 && done > 0 && done < total && ::truncate(in.c_str(), static_cast<off_t>(done)) == 0)
            truncated_at = done;
    };
    Result r;
    session.push(PushSource::file(in), "shrink.1", push, Mode::Sync, [&r](const Result& x) { r = x; });
    BOOST_REQUIRE(truncated_at > 0);
    BOOST_TEST(r.errc() == Errc::io_error, r.message);
    BOOST_TEST(r.message.find("push \"shrink.1\": " + in + " shrank while it was being pushed: it has " +
                              std::to_string(truncated_at) + " bytes, 67108864 when the push started") == 0u,
               r.message);
    auto e = error_of([&] { session.stat("shrink.1"); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::no_such_blob));

    // A producer fails the push with its own code and message by throwing.
    Result produced;
    std::uint64_t given = 0;
    session.push(PushSource::producer(10000,
                                      [&given](std::uint8_t* buffer, std::size_t capacity) -> std::size_t {
                                          if (given >= 1000)
                                              throw Error(Errc::incomplete, "the input ended after 1000 bytes");
                                          const std::size_t n = std::min<std::size_t>(capacity, 1000 - given);
                                          std::fill(buffer, buffer + n, 0x5a);
                                          given += n;
                                          return n;
                                      }),
                 "thrown.1", PushOptions{}, Mode::Sync, [&produced](const Result& x) { produced = x; });
    BOOST_TEST(produced.errc() == Errc::incomplete, produced.message);
    BOOST_TEST(produced.message == "the input ended after 1000 bytes");
    e = error_of([&] { session.stat("thrown.1"); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::no_such_blob));
    // The store releases the reservation when it sees the connection end,
    // which may come after the client's failure: waited for, bounded.
    const auto released = [&session] {
        for (const auto& store : session.stores())
            if (store.reserved != 0u) return false;
        return true;
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!released() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (const auto& store : session.stores()) BOOST_TEST(store.reserved == 0u, store.name);

    // A Sync completion that throws: the call returns (it hung before) and
    // throws it; the push itself had succeeded.
    const std::vector<std::uint8_t> small(4096, 0x11);
    bool reached = false;
    try {
        session.push(PushSource::memory(small.data(), small.size()), "thrown.2", PushOptions{}, Mode::Sync,
                     [&reached](const Result& x) {
                         reached = x.ok();
                         throw std::runtime_error("the completion gave up");
                     });
        BOOST_FAIL("the completion's exception was not rethrown");
    } catch (const std::runtime_error& thrown) {
        BOOST_TEST(std::string(thrown.what()) == "the completion gave up");
    }
    BOOST_TEST(reached);
    BOOST_TEST(session.stat("thrown.2").size == small.size());
}

BOOST_AUTO_TEST_CASE(a_push_over_several_streams_from_memory)
{
    auto o = options("mem");
    o.local_fast_path = false;
    Session session(o);
    const auto bytes = pattern(5 * 1024 * 1024 + 3, 11);
    PushOptions four;
    four.replace = true;
    four.streams = 4;
    Result r;
    session.push(PushSource::memory(bytes.data(), bytes.size()), "streams.push", four, Mode::Sync,
                 [&r](const Result& x) { r = x; });
    BOOST_TEST(r.ok(), r.message);
    BOOST_TEST(r.streams == 4u);
    const std::string crc = ChecksumState::of(ChecksumAlgorithm::crc32c, bytes.data(), bytes.size()).text();
    BOOST_TEST(r.info.checksum.text() == crc);
    BOOST_TEST(session.stat("streams.push").checksum.text() == crc);
    BOOST_TEST((session.pull_memory("streams.push") == bytes));

    // SHA-256 does not combine from parts: one stream.
    PushOptions sha = four;
    sha.checksum = ChecksumAlgorithm::sha256;
    session.push(PushSource::memory(bytes.data(), bytes.size()), "streams.push", sha, Mode::Sync,
                 [&r](const Result& x) { r = x; });
    BOOST_TEST(r.ok(), r.message);
    BOOST_TEST(r.streams == 1u);
    BOOST_TEST((session.stat("streams.push").checksum.algorithm == ChecksumAlgorithm::sha256));

    // Without replace, an existing name is refused before any byte moves.
    PushOptions again;
    again.streams = 4;
    session.push(PushSource::memory(bytes.data(), bytes.size()), "streams.push", again, Mode::Sync,
                 [&r](const Result& x) { r = x; });
    BOOST_TEST(r.error == make_error_code(Errc::already_exists), r.message);

    for (std::size_t streams : {kMaxStreams + 1}) {  // 0 is kAutoStreams
        PushOptions bad;
        bad.streams = streams;
        const auto e = error_of([&] { session.push_memory(bytes.data(), 10, "streams.bad", bad); });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(e->code() == Errc::invalid_argument);
        BOOST_TEST(std::string(e->what()) ==
                   "push \"streams.bad\": streams " + std::to_string(streams) + ": expected 1 to 64, or kAutoStreams (0)");
    }
}

BOOST_AUTO_TEST_CASE(a_pull_over_several_streams_into_memory_and_a_buffer)
{
    auto o = options("mem");
    o.local_fast_path = false;
    Session session(o);
    const auto bytes = pattern(5 * 1024 * 1024 + 3, 7);
    PushOptions replace;
    replace.replace = true;
    session.push_memory(bytes.data(), bytes.size(), "streams.1", replace);

    PullOptions four;
    four.streams = 4;
    Result r;
    std::vector<std::uint8_t> whole;
    session.pull("streams.1", PullSink::memory(&whole), four, Mode::Sync, [&r](const Result& x) { r = x; });
    BOOST_TEST(r.ok(), r.message);
    BOOST_TEST(r.streams == 4u);
    BOOST_TEST((whole == bytes));
    BOOST_TEST(r.info.checksum.text() == ChecksumState::of(kDefaultChecksum, bytes.data(), bytes.size()).text());

    // A range into the caller's buffer: 3 MiB + 1 takes 3 streams.
    PullOptions range = four;
    range.offset = 12345;
    range.length = 3 * 1024 * 1024 + 1;
    std::vector<std::uint8_t> buffer(range.length);
    session.pull("streams.1", PullSink::buffer(buffer.data(), buffer.size()), range, Mode::Sync,
                 [&r](const Result& x) { r = x; });
    BOOST_TEST(r.ok(), r.message);
    BOOST_TEST(r.streams == 3u);
    BOOST_TEST((buffer == std::vector<std::uint8_t>(bytes.begin() + 12345, bytes.begin() + 12345 + range.length)));

    // A consumer takes bytes in order: one stream.
    std::vector<std::uint8_t> consumed;
    session.pull("streams.1", PullSink::consumer([&consumed](const std::uint8_t* data, std::size_t n, std::uint64_t) {
                     consumed.insert(consumed.end(), data, data + n);
                 }),
                 four, Mode::Sync, [&r](const Result& x) { r = x; });
    BOOST_TEST(r.ok(), r.message);
    BOOST_TEST(r.streams == 1u);
    BOOST_TEST((consumed == bytes));

    for (std::size_t streams : {kMaxStreams + 1}) {  // 0 is kAutoStreams
        PullOptions bad;
        bad.streams = streams;
        const auto e = error_of([&] { session.pull_memory("streams.1", bad); });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(e->code() == Errc::invalid_argument);
        BOOST_TEST(std::string(e->what()) ==
                   "pull \"streams.1\": streams " + std::to_string(streams) + ": expected 1 to 64, or kAutoStreams (0)");
    }
}
