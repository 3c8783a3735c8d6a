#include <blobstreaming/transporter/daemon/NoticeDispatcher.h>

#define BOOST_TEST_MODULE NoticeDispatcher
#include <boost/test/unit_test.hpp>

#include "Eventually.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace blobstreaming::daemon;
using blobstreaming::test::eventually;
using namespace std::chrono_literals;

namespace {

/// What the tests post: a number.
struct Numbered {
    std::uint64_t n = 0;
};

Numbered notice(std::uint64_t n) { return Numbered{n}; }

/// Records what it receives; can be held (deliver() blocks until released)
/// or made to fail.
class RecordingSink : public NoticeSinkOf<Numbered> {
public:
    RecordingSink(std::string endpoint, std::string name, std::vector<std::string>* journal, std::mutex* journal_mutex)
        : endpoint_(std::move(endpoint)), name_(std::move(name)), journal_(journal), journal_mutex_(journal_mutex)
    {}

    std::string deliver(const Numbered& notice) noexcept override
    {
        std::unique_lock<std::mutex> lock(mutex_);
        ++entered_;
        entered_cv_.notify_all();
        released_cv_.wait(lock, [this] { return !held_; });
        if (!failure_.empty()) return failure_;
        got_.push_back(notice.n);
        if (journal_) {
            std::lock_guard<std::mutex> j(*journal_mutex_);
            journal_->push_back(name_ + std::to_string(notice.n));
        }
        return "";
    }
    const std::string& endpoint() const noexcept override { return endpoint_; }
    void failed(const std::string& why) noexcept override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        failures_.push_back(why);
    }

    void hold()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        held_ = true;
    }
    void release()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            held_ = false;
        }
        released_cv_.notify_all();
    }
    void fail_with(std::string why)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        failure_ = std::move(why);
    }
    /// Waits until deliver() was entered `n` times.
    bool entered(int n)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        return entered_cv_.wait_for(lock, 20s, [&] { return entered_ >= n; });
    }
    std::vector<std::uint64_t> got()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return got_;
    }
    /// What failed() was told, in order.
    std::vector<std::string> failures()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return failures_;
    }

private:
    const std::string endpoint_;
    const std::string name_;
    std::vector<std::string>* journal_;
    std::mutex* journal_mutex_;
    std::mutex mutex_;
    std::condition_variable entered_cv_;
    std::condition_variable released_cv_;
    bool held_ = false;
    int entered_ = 0;
    std::string failure_;
    std::vector<std::uint64_t> got_;
    std::vector<std::string> failures_;
};

std::shared_ptr<RecordingSink> sink(std::string endpoint, std::string name = "",
                                    std::vector<std::string>* journal = nullptr, std::mutex* journal_mutex = nullptr)
{
    return std::make_shared<RecordingSink>(std::move(endpoint), std::move(name), journal, journal_mutex);
}

}  // namespace

BOOST_AUTO_TEST_CASE(delivers_every_notice_of_an_observer_in_order)
{
    NoticeDispatcher d;
    auto s = sink("127.0.0.1:1");
    std::vector<std::uint64_t> expected;
    for (std::uint64_t i = 1; i <= 500; ++i) {
        BOOST_CHECK(d.post(s, notice(i)));
        expected.push_back(i);
    }
    BOOST_REQUIRE(eventually([&] { return s->got().size() == expected.size(); }));
    BOOST_CHECK(s->got() == expected);
    const NoticeStats st = d.stats();
    BOOST_CHECK_EQUAL(st.delivered, 500u);
    BOOST_CHECK_EQUAL(st.queued, 0u);
    BOOST_CHECK_EQUAL(st.dropped_full + st.dropped_unreachable + st.dropped_stopped + st.failed, 0u);
}

// post_all: one copy for each sink, every sink's notices in order, with
// the prompt threads of the daemon's configuration; a sink whose queue is
// full loses its copy only.
BOOST_AUTO_TEST_CASE(post_all_gives_each_sink_its_copy_in_order)
{
    NoticeLimits limits;
    limits.threads = 4;
    limits.prompt_threads = 2;
    limits.per_observer = 10;
    NoticeDispatcher d(limits);
    std::vector<std::shared_ptr<NoticeSink>> sinks;
    std::vector<std::shared_ptr<RecordingSink>> recorders;
    for (int i = 0; i < 100; ++i) {
        recorders.push_back(sink("127.0.0.1:" + std::to_string(1000 + i)));
        sinks.push_back(recorders.back());
    }
    auto full = sink("127.0.0.1:2000");
    full->hold();
    BOOST_CHECK(d.post(full, notice(0)));
    BOOST_REQUIRE(full->entered(1));
    for (std::uint64_t n = 1; n <= 10; ++n) BOOST_CHECK(d.post(full, notice(n)));  // its queue is full now
    sinks.push_back(full);
    std::vector<std::uint64_t> expected;
    for (std::uint64_t n = 10; n < 20; ++n) {
        BOOST_CHECK_EQUAL(d.post_all(sinks, Notice(std::make_shared<const Numbered>(notice(n)))), 100u);
        expected.push_back(n);
    }
    // CHECK, not REQUIRE: the held sink must be released whatever happens,
    // or the dispatcher's destructor would wait for it for ever.
    BOOST_CHECK(eventually([&] {
        return std::all_of(recorders.begin(), recorders.end(), [&](const auto& r) { return r->got().size() == 10; });
    }));
    for (const auto& r : recorders) BOOST_CHECK(r->got() == expected);
    full->release();
    BOOST_REQUIRE(eventually([&] { return full->got().size() == 11; }));
    BOOST_CHECK((full->got() == std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
    BOOST_CHECK_EQUAL(d.stats().dropped_full, 10u);
    BOOST_CHECK(eventually([&] { return d.stats().delivered == 1011u; }));  // counted after deliver() returns
}

BOOST_AUTO_TEST_CASE(post_never_waits_for_a_blocked_observer_and_the_queue_is_bounded)
{
    NoticeLimits limits;
    limits.per_observer = 10;
    limits.total = 15;
    NoticeDispatcher d(limits);
    auto slow = sink("127.0.0.1:1");
    slow->hold();
    BOOST_CHECK(d.post(slow, notice(0)));
    BOOST_REQUIRE(slow->entered(1));  // notice 0 is being delivered, and blocks

    const auto t0 = std::chrono::steady_clock::now();
    int accepted = 0;
    for (std::uint64_t i = 1; i <= 30; ++i) accepted += d.post(slow, notice(i)) ? 1 : 0;
    BOOST_CHECK(std::chrono::steady_clock::now() - t0 < 5s);  // 30 posts: no wait at all in fact
    BOOST_CHECK_EQUAL(accepted, 10);
    BOOST_CHECK_EQUAL(d.stats().dropped_full, 20u);
    BOOST_CHECK_EQUAL(d.stats().queued, 10u);

    slow->release();
    BOOST_REQUIRE(eventually([&] { return d.stats().delivered == 11u; }));
    BOOST_CHECK(slow->got() == (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
    BOOST_CHECK(slow->failures().empty());
}

BOOST_AUTO_TEST_CASE(a_full_shared_queue_gives_up_the_longest_backlog_not_a_sink_that_keeps_up)
{
    NoticeLimits limits;
    limits.per_observer = 10;
    limits.total = 15;
    limits.threads = 4;  // one each for the three held, one to tell failed()
    NoticeDispatcher d(limits);
    auto slow = sink("127.0.0.1:1");
    auto other = sink("127.0.0.1:2");
    auto third = sink("127.0.0.1:3");
    slow->hold();
    other->hold();
    third->hold();
    BOOST_CHECK(d.post(slow, notice(0)));
    BOOST_REQUIRE(slow->entered(1));
    for (std::uint64_t i = 1; i <= 10; ++i) BOOST_CHECK(d.post(slow, notice(i)));
    BOOST_CHECK(d.post(other, notice(100)));
    BOOST_REQUIRE(other->entered(1));
    for (std::uint64_t i = 101; i <= 104; ++i) BOOST_CHECK(d.post(other, notice(i)));
    BOOST_CHECK(d.post(third, notice(200)));
    BOOST_REQUIRE(third->entered(1));
    BOOST_CHECK(d.post(third, notice(201)));
    BOOST_CHECK_EQUAL(d.stats().queued, 15u);

    // The queues are full: the slow one, 10 behind, is given up (its queue
    // dropped, failed()), not the notice of one that is 1 behind.
    BOOST_CHECK(d.post(third, notice(202)));
    BOOST_CHECK_EQUAL(d.stats().fell_behind, 1u);
    BOOST_CHECK_EQUAL(d.stats().dropped_full, 10u);
    BOOST_CHECK_EQUAL(d.stats().queued, 6u);
    BOOST_REQUIRE(eventually([&] { return slow->failures().size() == 1; }));
    BOOST_CHECK_EQUAL(slow->failures()[0],
                      "it fell behind: 10 queued, the longest backlog when the queues of all recipients were full (15 "
                      "in all)");
    third->release();
    BOOST_REQUIRE(eventually([&] { return third->got().size() == 3; }));

    // Full again: a sink's own full queue still drops (as before); a sink
    // with less queued gets room at the expense of the longest backlog.
    for (std::uint64_t i = 105; i <= 110; ++i) BOOST_CHECK(d.post(other, notice(i)));  // 10 queued
    for (std::uint64_t i = 11; i <= 15; ++i) BOOST_CHECK(d.post(slow, notice(i)));     // 5: full
    BOOST_CHECK_EQUAL(d.stats().queued, 15u);
    BOOST_CHECK(!d.post(other, notice(111)));
    BOOST_CHECK_EQUAL(d.stats().dropped_full, 11u);
    BOOST_CHECK(d.post(third, notice(203)));
    BOOST_CHECK_EQUAL(d.stats().fell_behind, 2u);
    BOOST_CHECK_EQUAL(d.stats().dropped_full, 21u);
    BOOST_REQUIRE(eventually([&] { return other->failures().size() == 1; }));
    BOOST_REQUIRE(eventually([&] { return third->got().size() == 4; }));

    slow->release();
    other->release();
    BOOST_REQUIRE(eventually([&] { return slow->got().size() == 6 && other->got().size() == 1; }));
    BOOST_CHECK(slow->got() == (std::vector<std::uint64_t>{0, 11, 12, 13, 14, 15}));
    BOOST_CHECK_EQUAL(other->got().size(), 1u);  // in flight when given up
    BOOST_CHECK_EQUAL(other->got().at(0), 100u);
    BOOST_CHECK(third->failures().empty());
}

BOOST_AUTO_TEST_CASE(observers_take_turns_so_a_slow_one_delays_others_by_one_delivery_at_most)
{
    std::vector<std::string> journal;
    std::mutex journal_mutex;
    NoticeDispatcher d;
    auto slow = sink("10.0.0.1:1", "slow", &journal, &journal_mutex);
    auto fast = sink("10.0.0.2:1", "fast", &journal, &journal_mutex);
    slow->hold();
    BOOST_CHECK(d.post(slow, notice(1)));
    BOOST_REQUIRE(slow->entered(1));
    BOOST_CHECK(d.post(slow, notice(2)));
    BOOST_CHECK(d.post(slow, notice(3)));
    BOOST_CHECK(d.post(fast, notice(1)));
    BOOST_CHECK(d.post(fast, notice(2)));
    slow->release();
    BOOST_REQUIRE(eventually([&] { return d.stats().delivered == 5u; }));
    std::lock_guard<std::mutex> lock(journal_mutex);
    BOOST_CHECK(journal == (std::vector<std::string>{"slow1", "fast1", "slow2", "fast2", "slow3"}));
}

BOOST_AUTO_TEST_CASE(a_failed_delivery_drops_what_the_endpoint_has_queued_and_suspends_it_for_a_while)
{
    NoticeLimits limits;
    limits.retry_after = 2s;
    NoticeDispatcher d(limits);
    auto dead = sink("192.0.2.1:9");
    auto dead_too = sink("192.0.2.1:9");  // another transporter observed by the same endpoint
    auto alive = sink("127.0.0.1:3");
    dead->hold();
    dead->fail_with("CORBA TIMEOUT");
    BOOST_CHECK(d.post(dead, notice(1)));
    BOOST_REQUIRE(dead->entered(1));
    BOOST_CHECK(d.post(dead, notice(2)));
    BOOST_CHECK(d.post(dead_too, notice(3)));
    BOOST_CHECK(d.post(alive, notice(4)));
    dead->release();
    BOOST_REQUIRE(eventually([&] { return d.stats().failed == 1u && d.stats().delivered == 1u; }));
    BOOST_CHECK_EQUAL(d.stats().dropped_unreachable, 2u);  // notices 2 and 3
    BOOST_CHECK(alive->got() == std::vector<std::uint64_t>{4});
    // Both sinks of the endpoint are told, so that an event subscription
    // ends at once instead of being tried again later.
    BOOST_REQUIRE(eventually([&] { return dead_too->failures().size() == 1; }));
    BOOST_CHECK(dead->failures() == std::vector<std::string>{"CORBA TIMEOUT"});
    BOOST_CHECK(dead_too->failures() == std::vector<std::string>{"CORBA TIMEOUT"});

    // Suspended: dropped at once, without a delivery attempt; the sink is told.
    auto dead_later = sink("192.0.2.1:9");
    BOOST_CHECK(!d.post(dead_later, notice(5)));
    BOOST_CHECK_EQUAL(d.stats().dropped_unreachable, 3u);
    BOOST_REQUIRE(eventually([&] { return dead_later->failures().size() == 1; }));
    BOOST_CHECK(dead_later->failures() == std::vector<std::string>{"CORBA TIMEOUT"});
    BOOST_CHECK(d.post(alive, notice(6)));

    // After the retry period the endpoint is tried again; a success ends the suspension.
    dead->fail_with("");
    BOOST_REQUIRE(eventually([&] { return d.post(dead, notice(7)); }));
    BOOST_REQUIRE(eventually([&] { return dead->got() == std::vector<std::uint64_t>{7}; }));
    BOOST_CHECK(d.post(dead, notice(8)));
    BOOST_REQUIRE(eventually([&] { return dead->got().size() == 2; }));
    BOOST_CHECK_EQUAL(d.stats().failed, 1u);
}

BOOST_AUTO_TEST_CASE(stop_waits_for_the_delivery_in_progress_and_drops_the_rest)
{
    auto d = std::make_unique<NoticeDispatcher>();
    auto s = sink("127.0.0.1:4");
    s->hold();
    for (std::uint64_t i = 1; i <= 10; ++i) BOOST_CHECK(d->post(s, notice(i)));
    BOOST_REQUIRE(s->entered(1));
    std::thread releaser([&] {
        std::this_thread::sleep_for(50ms);  // let stop() begin to wait; the result is the same if not
        s->release();
    });
    d->stop();
    releaser.join();
    const NoticeStats st = d->stats();
    BOOST_CHECK_EQUAL(st.delivered, 1u);
    BOOST_CHECK_EQUAL(st.dropped_stopped, 9u);
    BOOST_CHECK_EQUAL(st.queued, 0u);
    BOOST_CHECK(!d->post(s, notice(11)));
    BOOST_CHECK_EQUAL(d->stats().dropped_stopped, 10u);
    d->stop();                            // idempotent
    d.reset();                            // the destructor after stop()
    BOOST_CHECK_EQUAL(s.use_count(), 1);  // the dispatcher let go of the sink
}

BOOST_AUTO_TEST_CASE(destructor_stops_a_running_dispatcher)
{
    auto s = sink("127.0.0.1:5");
    {
        NoticeDispatcher d;
        for (std::uint64_t i = 1; i <= 3; ++i) d.post(s, notice(i));
    }
    BOOST_CHECK_EQUAL(s.use_count(), 1);
}

BOOST_AUTO_TEST_CASE(prompt_endpoints_do_not_wait_behind_endpoints_that_block)
{
    NoticeLimits limits;
    limits.threads = 2;
    limits.prompt_threads = 1;
    limits.prompt_within = 1s;
    NoticeDispatcher d(limits);
    auto good = sink("127.0.0.1:1");
    BOOST_CHECK(d.post(good, notice(0)));  // proves it prompt
    BOOST_REQUIRE(eventually([&] { return good->got().size() == 1; }));

    // 50 new endpoints that block (connect hangs, nothing read): they hold
    // the two threads that serve endpoints not yet proven.
    std::vector<std::shared_ptr<RecordingSink>> bad;
    for (int i = 0; i < 50; ++i) {
        bad.push_back(sink("192.0.2.1:" + std::to_string(1000 + i)));
        bad.back()->hold();
    }
    for (std::uint64_t n = 1; n <= 100; ++n) {
        for (auto& b : bad) d.post(b, notice(n));
        BOOST_CHECK(d.post(good, notice(n)));
        // Delivered while every blocking one still blocks.
        BOOST_REQUIRE(eventually([&] { return good->got().size() == n + 1; }, 5s));
    }
    BOOST_CHECK_EQUAL(d.stats().delivered, 101u);
    for (auto& b : bad) b->release();
    BOOST_REQUIRE(eventually([&] { return d.stats().queued == 0u; }));
    BOOST_CHECK_EQUAL(d.stats().delivered, 101u + 50u * 100u);
}

BOOST_AUTO_TEST_CASE(an_endpoint_that_was_slow_leaves_the_prompt_threads)
{
    NoticeLimits limits;
    limits.threads = 1;
    limits.prompt_threads = 1;
    limits.prompt_within = 50ms;
    NoticeDispatcher d(limits);
    auto once_prompt = sink("127.0.0.1:1");
    auto good = sink("127.0.0.1:2");
    BOOST_CHECK(d.post(once_prompt, notice(0)));
    BOOST_CHECK(d.post(good, notice(0)));
    BOOST_REQUIRE(eventually([&] { return once_prompt->got().size() == 1 && good->got().size() == 1; }));

    // It blocks for longer than prompt_within (on the prompt thread, once).
    once_prompt->hold();
    BOOST_CHECK(d.post(once_prompt, notice(1)));
    BOOST_REQUIRE(once_prompt->entered(2));
    std::this_thread::sleep_for(100ms);  // the time it is slow: the condition under test, not a synchronisation
    once_prompt->release();
    BOOST_REQUIRE(eventually([&] { return once_prompt->got().size() == 2; }));

    // Now it blocks again: it holds the other thread, not the prompt one.
    once_prompt->hold();
    BOOST_CHECK(d.post(once_prompt, notice(2)));
    BOOST_REQUIRE(once_prompt->entered(3));
    for (std::uint64_t n = 1; n <= 10; ++n) {
        BOOST_CHECK(d.post(good, notice(n)));
        BOOST_REQUIRE(eventually([&] { return good->got().size() == n + 1; }, 5s));
    }
    once_prompt->release();
    BOOST_REQUIRE(eventually([&] { return d.stats().queued == 0u && once_prompt->got().size() == 3; }));
}

BOOST_AUTO_TEST_CASE(a_prompt_thread_held_by_an_endpoint_that_stopped_reading_is_replaced)
{
    NoticeLimits limits;
    limits.threads = 1;
    limits.prompt_threads = 1;
    limits.prompt_within = 50ms;
    NoticeDispatcher d(limits);
    auto good = sink("127.0.0.1:1");
    auto turned = sink("127.0.0.1:2");
    BOOST_CHECK(d.post(good, notice(0)));
    BOOST_CHECK(d.post(turned, notice(0)));
    BOOST_REQUIRE(eventually([&] { return good->got().size() == 1 && turned->got().size() == 1; }));

    // The other thread is held by a new endpoint that blocks; then one that
    // was prompt blocks too (its socket full), on the prompt thread.
    auto stuck = sink("192.0.2.1:1");
    stuck->hold();
    BOOST_CHECK(d.post(stuck, notice(1)));
    BOOST_REQUIRE(stuck->entered(1));
    turned->hold();
    BOOST_CHECK(d.post(turned, notice(1)));
    BOOST_REQUIRE(turned->entered(2));
    for (std::uint64_t n = 1; n <= 10; ++n) {
        BOOST_CHECK(d.post(good, notice(n)));
        BOOST_REQUIRE(eventually([&] { return good->got().size() == n + 1; }, 5s));
    }
    BOOST_CHECK_EQUAL(d.stats().replaced, 2u);  // the prompt thread held by `turned`, the other by `stuck`
    turned->release();
    stuck->release();
    BOOST_REQUIRE(eventually([&] { return d.stats().queued == 0u && d.stats().delivered == 14u; }));
}

BOOST_AUTO_TEST_CASE(endpoints_that_block_are_tried_side_by_side_and_a_newcomer_is_not_held_for_long)
{
    NoticeLimits limits;
    limits.threads = 1;
    limits.prompt_threads = 1;
    limits.prompt_within = 50ms;
    limits.max_replaced = 8;
    NoticeDispatcher d(limits);
    std::vector<std::shared_ptr<RecordingSink>> bad;
    for (int i = 0; i < 6; ++i) {
        bad.push_back(sink("192.0.2.1:" + std::to_string(2000 + i)));
        bad.back()->hold();
        BOOST_CHECK(d.post(bad.back(), notice(1)));
    }
    // Each blocked thread is replaced after 50 ms: all six are being tried
    // at once, not one after the other.
    for (auto& b : bad) BOOST_REQUIRE(b->entered(1));
    // A new subscriber, not yet proven prompt, is served meanwhile.
    auto newcomer = sink("127.0.0.1:1");
    BOOST_CHECK(d.post(newcomer, notice(1)));
    BOOST_REQUIRE(eventually([&] { return newcomer->got().size() == 1; }, 5s));
    BOOST_CHECK_EQUAL(d.stats().replaced, 6u);

    // Past max_replaced, a thread that blocks keeps its place.
    for (int i = 0; i < 4; ++i) {
        bad.push_back(sink("192.0.2.1:" + std::to_string(3000 + i)));
        bad.back()->hold();
        BOOST_CHECK(d.post(bad.back(), notice(1)));
    }
    BOOST_REQUIRE(eventually([&] { return d.stats().replaced == 8u; }));
    for (auto& b : bad) b->release();
    BOOST_REQUIRE(eventually([&] { return d.stats().queued == 0u && d.stats().delivered == 11u; }));
}
