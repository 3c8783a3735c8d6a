// Series (Session::push_series, pull_series) end to end against real
// blobstored daemons (a FileStore and a MemoryStore) and omniNames: the bytes
// and the per-slice Results in series order in Mode::Sync and Mode::Async
// with either reactor, a failing slice that fails alone, the bound on the
// slices in flight, the next slices' control calls made while a slice's
// bytes move (counted in the daemon's request trace), a Session
// destroyed mid-series, and a series kept in place that asks for its files
// in one call and serves a Blob replaced meanwhile whole.
#include <blobstreaming/client/Session.h>

#include "ErrorOf.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE SeriesTest
#include <boost/test/unit_test.hpp>

#include "TestProcesses.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>

using namespace blobstreaming;
using namespace blobstreaming::client;
using namespace blobstreaming::client::test;

namespace {

/// Over the data connections unless `local`.
Session::Options options(const std::string& store, ReactorMode reactor, bool local = false)
{
    auto o = options_for(shared_stores().ns.url());
    o.default_store = store;
    o.reactor = reactor;
    o.local_fast_path = local;
    return o;
}

const char* name_of(ReactorMode reactor) { return reactor == ReactorMode::Thread ? "thread" : "caller"; }
const char* name_of(Mode mode) { return mode == Mode::Sync ? "sync" : "async"; }

/// A study: `count` slices PREFIX.I of 40 to 200 KB, each of its own bytes.
struct Study {
    Study(const std::string& prefix, std::size_t count)
    {
        for (std::size_t i = 0; i < count; ++i) {
            names.push_back(prefix + "." + std::to_string(i));
            std::vector<std::uint8_t> b(40000 + (i * 7919) % 160000);
            std::uint32_t x = 0x811c9dc5u ^ static_cast<std::uint32_t>(i + 1) * 0x01000193u;
            for (auto& byte : b) {
                x = x * 1664525u + 1013904223u;
                byte = static_cast<std::uint8_t>(x >> 24);
            }
            bytes.push_back(std::move(b));
        }
    }
    std::size_t size() const { return names.size(); }
    std::vector<PushSlice> push_slices() const
    {
        std::vector<PushSlice> slices;
        for (std::size_t i = 0; i < size(); ++i)
            slices.push_back(PushSlice{PushSource::memory(bytes[i].data(), bytes[i].size()), names[i]});
        return slices;
    }
    /// Into `out` (resized to one vector per slice).
    std::vector<PullSlice> pull_slices(std::vector<std::vector<std::uint8_t>>& out) const
    {
        out.assign(size(), {});
        std::vector<PullSlice> slices;
        for (std::size_t i = 0; i < size(); ++i) slices.push_back(PullSlice{names[i], PullSink::memory(&out[i])});
        return slices;
    }

    std::vector<std::string> names;
    std::vector<std::vector<std::uint8_t>> bytes;
};

PushOptions replacing()
{
    PushOptions o;
    o.replace = true;
    return o;
}

/// What one series reported, and how its callbacks ran.
struct Outcome {
    SeriesResult result;
    int completions = 0;                ///< of the series: must be 1
    std::vector<int> slice_calls;       ///< slice_done per slice: each must be 1
    bool slices_before_series = false;  ///< every slice_done ran before the series' completion
    bool on_caller_thread = true;       ///< ReactorMode::Caller: every callback on the test's thread
};

using StartSeries = std::function<void(Mode, SeriesCompletion, SliceCompletion)>;

/// Runs one series of `count` slices started by `start`, waiting at most
/// 60 s for its completion (ReactorMode::Caller: driving run_once()).
Outcome run_series(Session& session, Mode mode, std::size_t count, const StartSeries& start)
{
    std::mutex mutex;
    std::condition_variable cv;
    Outcome out;
    out.slice_calls.assign(count, 0);
    bool done = false;
    const bool caller = session.options().reactor == ReactorMode::Caller;
    const auto me = std::this_thread::get_id();
    start(
        mode,
        [&](const SeriesResult& r) {
            std::lock_guard<std::mutex> lock(mutex);
            out.result = r;
            ++out.completions;
            out.slices_before_series =
                std::all_of(out.slice_calls.begin(), out.slice_calls.end(), [](int n) { return n == 1; });
            out.on_caller_thread = out.on_caller_thread && (!caller || std::this_thread::get_id() == me);
            done = true;
            cv.notify_all();
        },
        [&](std::size_t index, const Result&) {
            std::lock_guard<std::mutex> lock(mutex);
            ++out.slice_calls.at(index);
            out.on_caller_thread = out.on_caller_thread && (!caller || std::this_thread::get_id() == me);
        });
    if (caller && mode == Mode::Async) BOOST_TEST(!done);  // nothing completes before the loop runs
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::unique_lock<std::mutex> lock(mutex);
    while (!done && std::chrono::steady_clock::now() < deadline) {
        if (caller) {
            lock.unlock();
            session.run_once(std::chrono::milliseconds(100));
            lock.lock();
        } else {
            cv.wait_until(lock, deadline, [&] { return done; });
        }
    }
    BOOST_REQUIRE_MESSAGE(done, "the series did not complete within 60 s");
    BOOST_TEST(out.completions == 1);
    BOOST_TEST(out.slices_before_series);
    BOOST_TEST(out.on_caller_thread);
    return out;
}

/// Every slice of `study` succeeded, reported at its own index.
void check_every_slice(const SeriesResult& r, const Study& study, const std::string& label)
{
    BOOST_REQUIRE_EQUAL(r.slices.size(), study.size());
    BOOST_TEST(r.ok(), label);
    BOOST_TEST(r.first_failure() == nullptr, label);
    BOOST_TEST(r.succeeded == study.size(), label);
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < study.size(); ++i) {
        BOOST_TEST(r.slices[i].ok(), label << " slice " << i << ": " << r.slices[i].message);
        BOOST_TEST(r.slices[i].info.name == study.names[i], label << " slice " << i);
        BOOST_TEST(r.slices[i].bytes == study.bytes[i].size(), label << " slice " << i);
        total += study.bytes[i].size();
    }
    BOOST_TEST(r.bytes == total, label);
    BOOST_TEST(r.seconds > 0, label);
}

/// Holds the first caller of pass() (the reactor thread, in a producer or a
/// consumer) until open(): while it is held no transfer can end.
class Gate {
public:
    void pass()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        held_ = true;
        cv_.notify_all();
        cv_.wait(lock, [&] { return open_; });
    }
    /// Whether a caller is held now or was (waits up to 20 s).
    bool wait_held()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return held_; });
    }
    void open()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        open_ = true;
        cv_.notify_all();
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool held_ = false;
    bool open_ = false;
};

/// Opens the gate when it goes out of scope: declared after the Session, it
/// frees the reactor thread before the Session is destroyed, also when a
/// REQUIRE fails.
struct OpenOnExit {
    Gate& gate;
    ~OpenOnExit() { gate.open(); }
};

/// A SeriesResult delivered on the reactor thread (ReactorMode::Thread),
/// awaited on the test's.
class Awaited {
public:
    SeriesCompletion callback()
    {
        return [this](const SeriesResult& r) {
            std::lock_guard<std::mutex> lock(mutex_);
            value_ = r;
            cv_.notify_all();
        };
    }
    /// The result, once delivered (waits up to 60 s).
    std::optional<SeriesResult> get()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait_for(lock, std::chrono::seconds(60), [&] { return value_.has_value(); });
        return value_;
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::optional<SeriesResult> value_;
};

/// `bytes` through a producer that first passes `gate`.
PushSource gated_source(Gate& gate, const std::vector<std::uint8_t>& bytes)
{
    auto at = std::make_shared<std::size_t>(0);
    return PushSource::producer(bytes.size(), [&gate, &bytes, at](std::uint8_t* buffer, std::size_t capacity) {
        gate.pass();
        const std::size_t n = std::min(capacity, bytes.size() - *at);
        std::copy_n(bytes.data() + *at, n, buffer);
        *at += n;
        return n;
    });
}

/// Appends to `out`, after passing `gate`.
PullSink gated_sink(Gate& gate, std::vector<std::uint8_t>& out)
{
    return PullSink::consumer([&gate, &out](const std::uint8_t* data, std::size_t size, std::uint64_t) {
        gate.pass();
        out.insert(out.end(), data, data + size);
    });
}

/// `predicate` became true within 20 s (polled: it reads a daemon's trace).
template <class Predicate>
bool eventually(Predicate predicate)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!predicate()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

/// How many `op` requests the traced daemon has dispatched.
std::size_t count_of(const TracedStore& traced, const std::string& op)
{
    const auto ops = dispatched(traced.trace);
    return static_cast<std::size_t>(std::count(ops.begin(), ops.end(), op));
}

std::vector<std::uint8_t> file_bytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::vector<std::uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Every name in `dir`, hidden temporary files too.
std::vector<std::string> files_in(const std::string& dir)
{
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
    return names;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_series_moves_every_slice_in_order, *boost::unit_test::timeout(300))
{
    for (const std::string store : {"mem", "ws"}) {
        for (const ReactorMode reactor : {ReactorMode::Thread, ReactorMode::Caller}) {
            for (const Mode mode : {Mode::Sync, Mode::Async}) {
                const std::string label = store + "." + name_of(reactor) + "." + name_of(mode);
                Session session(options(store, reactor));
                const Study study("series." + label, 12);
                const Outcome pushed = run_series(session, mode, study.size(), [&](Mode m, auto done, auto each) {
                    session.push_series(study.push_slices(), replacing(), m, done, each);
                });
                check_every_slice(pushed.result, study, label + " push");

                std::vector<std::vector<std::uint8_t>> back;
                const Outcome pulled = run_series(session, mode, study.size(), [&](Mode m, auto done, auto each) {
                    session.pull_series(study.pull_slices(back), PullOptions{}, m, done, each);
                });
                check_every_slice(pulled.result, study, label + " pull");
                for (std::size_t i = 0; i < study.size(); ++i)
                    BOOST_TEST((back[i] == study.bytes[i]), label << " slice " << i);
                if (reactor == ReactorMode::Caller) BOOST_TEST(session.pending() == 0u, label);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_series_pulls_ranges_and_files_through_the_local_path)
{
    Session session(options("ws", ReactorMode::Thread, true));
    const Study study("local", 5);
    const Outcome pushed = run_series(session, Mode::Sync, study.size(), [&](Mode m, auto done, auto each) {
        session.push_series(study.push_slices(), replacing(), m, done, each);
    });
    check_every_slice(pushed.result, study, "push");

    // The header of every slice: the range applies to each.
    PullOptions header;
    header.length = 132;
    std::vector<std::vector<std::uint8_t>> heads;
    const Outcome headers = run_series(session, Mode::Sync, study.size(), [&](Mode m, auto done, auto each) {
        session.pull_series(study.pull_slices(heads), header, m, done, each);
    });
    BOOST_TEST(headers.result.ok());
    for (std::size_t i = 0; i < study.size(); ++i) {
        BOOST_TEST(headers.result.slices[i].local, "slice " << i);
        BOOST_TEST((heads[i] == std::vector<std::uint8_t>(study.bytes[i].begin(), study.bytes[i].begin() + 132)));
    }

    const std::string dir = shared_stores().ns.dir() + "/local-series";
    BOOST_REQUIRE(std::filesystem::create_directory(dir));
    std::vector<PullSlice> slices;
    for (std::size_t i = 0; i < study.size(); ++i)
        slices.push_back(PullSlice{study.names[i], PullSink::file(dir + "/" + study.names[i])});
    const Outcome files = run_series(session, Mode::Async, study.size(), [&](Mode m, auto done, auto each) {
        session.pull_series(std::move(slices), PullOptions{}, m, done, each);
    });
    check_every_slice(files.result, study, "files");
    for (std::size_t i = 0; i < study.size(); ++i) {
        BOOST_TEST(files.result.slices[i].local, "slice " << i);
        BOOST_TEST((file_bytes(dir + "/" + study.names[i]) == study.bytes[i]), "slice " << i);
    }
}

BOOST_AUTO_TEST_CASE(a_failing_slice_fails_alone_and_the_rest_of_the_study_moves)
{
    Session session(options("mem", ReactorMode::Thread));
    const Study study("alone", 6);
    auto slices = study.push_slices();
    slices[2].name = "bad/name";
    slices[4].source = PushSource::producer(study.bytes[4].size(), [](std::uint8_t*, std::size_t) -> std::size_t {
        throw Error(Errc::incomplete, "the scanner stopped");
    });
    const Outcome pushed = run_series(session, Mode::Sync, study.size(), [&](Mode m, auto done, auto each) {
        session.push_series(std::move(slices), replacing(), m, done, each);
    });
    const SeriesResult& p = pushed.result;
    BOOST_REQUIRE_EQUAL(p.slices.size(), 6u);
    BOOST_TEST(!p.ok());
    BOOST_TEST(p.succeeded == 4u);
    BOOST_TEST(p.failed == 2u);
    BOOST_TEST(p.slices[2].errc() == Errc::invalid_name, p.slices[2].message);
    BOOST_TEST(p.slices[2].message.find("invalid blob name \"bad/name\"") == 0u, p.slices[2].message);
    BOOST_TEST(p.slices[4].errc() == Errc::incomplete, p.slices[4].message);
    BOOST_TEST(p.slices[4].message == "the scanner stopped");
    BOOST_TEST(p.first_failure() == &p.slices[2]);
    const auto e = error_of([&] { p.throw_if_error(); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::invalid_name));
    BOOST_TEST(std::string(e->what()) == "series: 2 of 6 slices failed, the first (slice 2): " + p.slices[2].message);
    for (std::size_t i : {0u, 1u, 3u, 5u}) {
        BOOST_TEST(p.slices[i].ok(), i << ": " << p.slices[i].message);
        BOOST_TEST((session.pull_memory(study.names[i]) == study.bytes[i]), "slice " << i);
    }
    for (std::size_t i : {2u, 4u}) {  // neither stored
        const auto missing = error_of([&] { session.stat(study.names[i]); });
        BOOST_REQUIRE(missing.has_value());
        BOOST_TEST(static_cast<int>(missing->code()) == static_cast<int>(Errc::no_such_blob));
    }
    BOOST_TEST(reserved_once_settled(session) == 0u);

    // Loading the study: slice 2 was never stored, slice 4's name is invalid;
    // the other four arrive whole.
    Session viewer(options("mem", ReactorMode::Caller));
    std::vector<std::vector<std::uint8_t>> back;
    auto pulls = study.pull_slices(back);
    pulls[4].name = "bad/name";
    const Outcome pulled = run_series(viewer, Mode::Async, study.size(), [&](Mode m, auto done, auto each) {
        viewer.pull_series(std::move(pulls), PullOptions{}, m, done, each);
    });
    const SeriesResult& r = pulled.result;
    BOOST_TEST(r.succeeded == 4u);
    BOOST_TEST(r.failed == 2u);
    BOOST_TEST(r.slices[2].errc() == Errc::no_such_blob, r.slices[2].message);
    BOOST_TEST(r.slices[2].message.find("pull \"alone.2\"") == 0u, r.slices[2].message);
    BOOST_TEST(r.slices[4].errc() == Errc::invalid_name, r.slices[4].message);
    for (std::size_t i : {0u, 1u, 3u, 5u}) BOOST_TEST((back[i] == study.bytes[i]), "slice " << i);
}

BOOST_AUTO_TEST_CASE(the_window_bounds_the_slices_in_flight)
{
    // Two data connections: at most four slices in flight (two streaming,
    // two with their ticket ready). Caller mode: nothing runs between the
    // calls, so pending() shows exactly what the series started.
    auto o = options("mem", ReactorMode::Caller);
    o.max_connections_per_endpoint = 2;
    Session session(o);
    const Study study("window", 10);
    for (const bool push : {true, false}) {
        std::size_t most = 0;
        std::optional<SeriesResult> result;
        std::vector<std::vector<std::uint8_t>> back;
        const SeriesCompletion done = [&](const SeriesResult& r) { result = r; };
        const SliceCompletion each = [&](std::size_t, const Result&) { most = std::max(most, session.pending()); };
        if (push) session.push_series(study.push_slices(), replacing(), Mode::Async, done, each);
        else session.pull_series(study.pull_slices(back), PullOptions{}, Mode::Async, done, each);
        BOOST_TEST(session.pending() == 1u + 4u);  // the series and its first window, nothing more
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!result && std::chrono::steady_clock::now() < deadline) session.run_once(std::chrono::milliseconds(100));
        BOOST_REQUIRE(result.has_value());
        BOOST_TEST(result->ok());
        BOOST_TEST(most == 1u + 4u);  // counted in each slice's callback: the window filled, never exceeded
        BOOST_TEST(session.pending() == 0u);
    }
    BOOST_TEST(session.connections_opened() <= 2u);
}

BOOST_AUTO_TEST_CASE(the_next_slices_tickets_are_obtained_while_a_slice_streams)
{
    // The reactor thread is held inside the first slice's producer (then
    // consumer): no slice can end, so whatever control calls the daemon
    // sees meanwhile were made for the next slices while that one streams.
    const TracedStore traced;
    Session::Options o = traced.options();
    o.max_connections_per_endpoint = 2;  // a window of 4
    o.named_requests = false;  // each slice's ticket is a control call, counted here
    const Study study("ahead", 6);
    std::vector<std::vector<std::uint8_t>> back(study.size());
    for (const bool push : {true, false}) {
        const char* op = push ? "push" : "send";
        Awaited series;
        Gate gate;
        Session session(o);
        OpenOnExit release{gate};
        if (push) session.push_memory(study.bytes[0].data(), 10, "warm-up");  // resolves the transporter
        const std::size_t before = count_of(traced, op);
        if (push) {
            std::vector<PushSlice> slices;
            for (std::size_t i = 0; i < study.size(); ++i)
                slices.push_back(PushSlice{gated_source(gate, study.bytes[i]), study.names[i]});
            session.push_series(std::move(slices), PushOptions{}, Mode::Async, series.callback());
        } else {
            std::vector<PullSlice> slices;
            for (std::size_t i = 0; i < study.size(); ++i)
                slices.push_back(PullSlice{study.names[i], gated_sink(gate, back[i])});
            session.pull_series(std::move(slices), PullOptions{}, Mode::Async, series.callback());
        }
        BOOST_REQUIRE(gate.wait_held());
        BOOST_TEST(eventually([&] { return count_of(traced, op) >= before + 4; }), op);
        BOOST_TEST(count_of(traced, op) == before + 4, op);  // the window: no fifth
        BOOST_TEST(session.pending() == 1u + 4u, op);
        gate.open();
        const auto result = series.get();
        BOOST_REQUIRE(result.has_value());
        BOOST_TEST(result->ok(), op);
        BOOST_TEST(count_of(traced, op) == before + study.size(), op);
    }
    for (std::size_t i = 0; i < study.size(); ++i) BOOST_TEST((back[i] == study.bytes[i]), "slice " << i);
}

BOOST_AUTO_TEST_CASE(sync_series_inside_a_completion_is_refused_and_an_empty_series_completes)
{
    Session session(options("mem", ReactorMode::Caller));
    std::optional<Error> refused;
    std::optional<SeriesResult> empty;
    session.stores(Mode::Async, [&](const Result&) {
        refused = error_of([&] { session.push_series({}, PushOptions{}, Mode::Sync, {}); });
        session.pull_series({}, PullOptions{}, Mode::Async, [&](const SeriesResult& r) { empty = r; });
        BOOST_TEST(!empty.has_value());  // never inside the call that started it
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!empty && std::chrono::steady_clock::now() < deadline) session.run_once(std::chrono::milliseconds(100));
    BOOST_REQUIRE(refused.has_value());
    BOOST_TEST(static_cast<int>(refused->code()) == static_cast<int>(Errc::invalid_argument));
    BOOST_TEST(std::string(refused->what()) ==
               "a Mode::Sync operation cannot run on the reactor thread (inside a completion callback)");
    BOOST_REQUIRE(empty.has_value());
    BOOST_TEST(empty->slices.empty());
    BOOST_TEST(empty->ok());
}

BOOST_AUTO_TEST_CASE(destroying_the_session_mid_series_completes_every_slice_once, *boost::unit_test::timeout(300))
{
    // 40 slices, a window of 16. Thread mode: destroyed as soon as the
    // first slice's bytes move (held there until then). Caller mode:
    // destroyed after the first run_once() that ended a slice.
    constexpr std::size_t kCount = 40;
    for (const ReactorMode reactor : {ReactorMode::Thread, ReactorMode::Caller}) {
        for (const bool push : {true, false}) {
            const std::string label = std::string(name_of(reactor)) + (push ? ".push" : ".pull");
            const Study study("gone." + label, kCount);
            const std::string dir = shared_stores().ns.dir() + "/gone." + label;
            BOOST_REQUIRE(std::filesystem::create_directory(dir));
            if (!push) {
                Session writer(options("ws", ReactorMode::Thread));
                run_series(writer, Mode::Sync, kCount, [&](Mode m, auto done, auto each) {
                    writer.push_series(study.push_slices(), replacing(), m, done, each);
                });
            }
            std::mutex mutex;
            SeriesResult result;
            int completions = 0;
            std::vector<int> slice_calls(kCount, 0);
            std::size_t ended = 0;
            {
                Gate gate;
                Session session(options("ws", reactor));
                OpenOnExit release{gate};
                const SeriesCompletion done = [&](const SeriesResult& r) {
                    std::lock_guard<std::mutex> lock(mutex);
                    result = r;
                    ++completions;
                };
                const SliceCompletion each = [&](std::size_t i, const Result&) {
                    std::lock_guard<std::mutex> lock(mutex);
                    ++slice_calls.at(i);
                    ++ended;
                };
                if (push) {
                    PushOptions gated = replacing();
                    gated.progress = [&gate](std::uint64_t, std::uint64_t) { gate.pass(); };
                    session.push_series(study.push_slices(), gated, Mode::Async, done, each);
                } else {
                    PullOptions gated;
                    gated.progress = [&gate](std::uint64_t, std::uint64_t) { gate.pass(); };
                    std::vector<PullSlice> slices;
                    for (const auto& name : study.names)
                        slices.push_back(PullSlice{name, PullSink::file(dir + "/" + name)});
                    session.pull_series(std::move(slices), gated, Mode::Async, done, each);
                }
                if (reactor == ReactorMode::Caller) {
                    gate.open();
                    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                    while (ended == 0 && std::chrono::steady_clock::now() < deadline)
                        session.run_once(std::chrono::milliseconds(100));
                    BOOST_REQUIRE(ended > 0);
                } else {
                    BOOST_REQUIRE(gate.wait_held());
                }
            }  // the gate opens, then the Session goes with the series in flight

            BOOST_TEST(completions == 1, label);
            BOOST_TEST(std::all_of(slice_calls.begin(), slice_calls.end(), [](int n) { return n == 1; }), label);
            BOOST_REQUIRE_EQUAL(result.slices.size(), kCount);
            std::size_t ok = 0, cancelled = 0, unstarted = 0;
            for (std::size_t i = 0; i < kCount; ++i) {
                const Result& r = result.slices[i];
                if (r.ok()) ++ok;
                if (r.errc() == Errc::cancelled) ++cancelled;
                if (r.message == (push ? "push " : "pull ") + quote_name(study.names[i]) + ": the session is closing")
                    ++unstarted;
            }
            BOOST_TEST(ok + cancelled == kCount, label);  // nothing else went wrong
            BOOST_TEST(result.succeeded == ok, label);
            BOOST_TEST_MESSAGE(label << ": " << ok << " done, " << cancelled << " cancelled, " << unstarted
                                     << " of them never started");
            // Caller mode: one run_once() ends at most the 16 slices in
            // flight, which start at most 16 more: 8 never started.
            if (reactor == ReactorMode::Caller) BOOST_TEST(unstarted >= kCount - 32, label);

            // Nothing partial anywhere: a stored Blob or a pulled file is whole.
            Session check(options("ws", ReactorMode::Thread));
            const auto in_dir = files_in(dir);
            for (std::size_t i = 0; i < kCount; ++i) {
                const std::string& name = study.names[i];
                if (push) {
                    std::vector<std::uint8_t> got;
                    const auto e = error_of([&] { got = check.pull_memory(name); });
                    if (e) BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::no_such_blob), e->what());
                    else BOOST_TEST((got == study.bytes[i]), label << " slice " << i);
                    BOOST_TEST((result.slices[i].ok() ? !e : true), label << " slice " << i << " was reported stored");
                } else {
                    const bool there = std::count(in_dir.begin(), in_dir.end(), name) == 1;
                    BOOST_TEST(there == result.slices[i].ok(), label << " slice " << i);
                    if (there) BOOST_TEST((file_bytes(dir + "/" + name) == study.bytes[i]), label << " slice " << i);
                }
            }
            if (!push) BOOST_TEST(in_dir.size() == ok, label);  // no temporary file left behind
            BOOST_TEST(reserved_once_settled(check) == 0u, label);
        }
    }
}

// A pull series kept in place from a file store of this host asks the store
// for every slice's file in one call (findLocalFiles, in the daemon's request
// trace), then serves each slice from its file. The reactor is the test's
// (ReactorMode::Caller), so the slices are served only when run_once() runs:
// a Blob replaced after the store answered and before its slice is served is
// served whole in the version its file then holds (that slice asks again on
// its own: one findLocalFile), never a mix.
BOOST_AUTO_TEST_CASE(an_in_place_series_asks_for_its_files_in_one_call_and_serves_each_version_whole,
                     *boost::unit_test::timeout(120))
{
    NameServer ns;
    const std::string trace = ns.dir() + "/daemon.trace";
    StoreDaemon daemon{ns, "tf", "file:" + ns.dir() + "/tf", trace};
    Session::Options wo = options_for(ns.url());
    wo.default_store = "tf";
    wo.local_fast_path = false;
    Session writer(wo);
    const Study study("IP", 3);
    for (std::size_t i = 0; i < study.size(); ++i)
        writer.push_memory(study.bytes[i].data(), study.bytes[i].size(), study.names[i]);
    const std::vector<std::uint8_t> replacement(123457, 0x5A);

    Session::Options ro = options_for(ns.url());
    ro.default_store = "tf";
    ro.reactor = ReactorMode::Caller;
    ro.local_fast_path = true;
    Session reader(ro);
    std::vector<std::shared_ptr<const InPlaceBlob>> places(study.size());
    std::vector<std::vector<std::uint8_t>> copied(study.size());
    std::vector<PullSlice> slices;
    for (std::size_t i = 0; i < study.size(); ++i)
        slices.push_back({study.names[i], PullSink::in_place(&places[i], PullSink::memory(&copied[i]))});
    PullOptions po;
    po.store = "tf";
    const std::size_t calls_before = dispatched(trace).size();
    std::optional<SeriesResult> result;
    reader.pull_series(std::move(slices), po, Mode::Async, [&](const SeriesResult& r) { result = r; });

    // The store has answered once the slices' work reaches the loop.
    pollfd p{reader.descriptor(), POLLIN, 0};
    BOOST_REQUIRE_MESSAGE(::poll(&p, 1, 20000) == 1, "the store's answer did not reach the loop within 20 s");
    PushOptions replace;
    replace.replace = true;
    const BlobInfo replaced = writer.push_memory(replacement.data(), replacement.size(), study.names[1], replace);

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!result && std::chrono::steady_clock::now() < deadline) reader.run_once(std::chrono::milliseconds(100));
    BOOST_REQUIRE(result.has_value());
    BOOST_TEST(result->ok());
    for (std::size_t i = 0; i < study.size(); ++i) {
        BOOST_REQUIRE_MESSAGE(places[i] != nullptr, "slice " << i << " was not served in place");
        BOOST_TEST(copied[i].empty());
        const std::vector<std::uint8_t>& want = i == 1 ? replacement : study.bytes[i];
        BOOST_TEST_REQUIRE(places[i]->size() == want.size());
        BOOST_TEST(std::equal(want.begin(), want.end(), places[i]->data()), "slice " << i << "'s bytes");
    }
    BOOST_TEST(result->slices[1].info.checksum.text() == replaced.checksum.text());
    std::vector<std::string> calls = dispatched(trace);
    calls.erase(calls.begin(), calls.begin() + static_cast<std::ptrdiff_t>(calls_before));
    BOOST_TEST(std::count(calls.begin(), calls.end(), "findLocalFiles") == 1);
    BOOST_TEST(std::count(calls.begin(), calls.end(), "findLocalFile") == 1);  // the replaced slice, alone
}
