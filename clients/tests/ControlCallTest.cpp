// The control plane's round trips: the worker pool runs the calls of
// concurrent operations at the same time and those of one Blob in order
// (CallExecutor), and a push costs the daemon one control call
// (BlobTransporter::push), counted in the daemon's own request trace.
#include "CallExecutor.h"

#define BOOST_TEST_MODULE ControlCallTest
#include <boost/test/unit_test.hpp>

#include "TestProcesses.h"

#include <blobstreaming/client/Session.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::client;
using namespace blobstreaming::client::test;

namespace {

/// Counts the calls running now; wait_for(n) blocks until n have run at the
/// same time (now or before), or fails after a generous deadline (a guard
/// against hanging, not a timing assertion: a single worker never gets
/// there).
class Overlap {
public:
    void enter()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        peak_ = std::max(peak_, ++running_);
        cv_.notify_all();
    }
    void leave()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        --running_;
    }
    bool wait_for(int n)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return peak_ >= n; });
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    int running_ = 0;
    int peak_ = 0;
};

}  // namespace

BOOST_AUTO_TEST_CASE(calls_of_different_keys_run_at_the_same_time)
{
    std::atomic<int> overlapped{0};
    Overlap overlap;
    {
        CallExecutor calls;
        for (int i = 0; i < 8; ++i) {
            calls.submit(
                [&] {
                    overlap.enter();
                    if (overlap.wait_for(2)) ++overlapped;
                    overlap.leave();
                },
                "blob." + std::to_string(i));
        }
        calls.stop();
        BOOST_TEST(calls.max_in_flight() >= 2);
        BOOST_TEST(calls.max_in_flight() <= CallExecutor::kDefaultThreads);
    }
    BOOST_TEST(overlapped.load() == 8);
}

BOOST_AUTO_TEST_CASE(calls_of_one_key_run_one_at_a_time_in_order)
{
    std::mutex mutex;
    std::vector<int> order;
    std::atomic<int> running{0}, most{0};
    CallExecutor calls;
    for (int i = 0; i < 40; ++i) {
        // Unkeyed calls in between keep the other workers busy.
        calls.submit([] { std::this_thread::yield(); });
        calls.submit(
            [&, i] {
                const int now = ++running;
                int seen = most.load();
                while (now > seen && !most.compare_exchange_weak(seen, now)) {}
                std::this_thread::yield();
                {
                    std::lock_guard<std::mutex> lock(mutex);
                    order.push_back(i);
                }
                --running;
            },
            "same");
    }
    calls.stop();
    BOOST_TEST(most.load() == 1);
    std::vector<int> expected(40);
    for (int i = 0; i < 40; ++i) expected[i] = i;
    BOOST_TEST(order == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(threads_start_lazily_up_to_the_bound)
{
    CallExecutor calls(3);
    BOOST_TEST(calls.threads() == 0u);
    std::atomic<int> ran{0};
    calls.submit([&] { ++ran; });
    // A call submitted by a call still runs before stop() returns.
    for (int i = 0; i < 20; ++i) calls.submit([&] { calls.submit([&] { ++ran; }); });
    BOOST_TEST(calls.threads() <= 3u);
    calls.stop();
    BOOST_TEST(ran.load() == 21);
}

BOOST_AUTO_TEST_CASE(a_push_is_one_control_call)
{
    TracedStore traced;
    const std::string& trace = traced.trace;
    SessionOptions options = traced.options();
    // The ticket path (named requests make none: tests/test_named_requests.py).
    options.named_requests = false;
    Session session(options);
    const std::vector<std::uint8_t> bytes(100000, 7);
    session.push_memory(bytes.data(), bytes.size(), "first");  // opens the transporter
    const std::size_t before = dispatched(trace).size();
    session.push_memory(bytes.data(), bytes.size(), "second");
    const auto ops = dispatched(trace);
    BOOST_REQUIRE(ops.size() >= before);
    const std::vector<std::string> calls(ops.begin() + static_cast<std::ptrdiff_t>(before), ops.end());
    BOOST_TEST(calls == std::vector<std::string>{"push"}, boost::test_tools::per_element());

    // Asynchronous queries on the pool, two Blobs in turn: every one answers
    // once (their overlap is asserted above, on the pool's own counter).
    std::atomic<int> ok{0};
    for (int i = 0; i < 8; ++i)
        session.stat(i % 2 == 0 ? "first" : "second", "", Mode::Async, [&](const Result& r) {
            if (r.ok()) ++ok;
        });
    for (int i = 0; i < 2000 && session.pending() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    BOOST_REQUIRE(session.pending() == 0u);
    BOOST_TEST(ok.load() == 8);
}
