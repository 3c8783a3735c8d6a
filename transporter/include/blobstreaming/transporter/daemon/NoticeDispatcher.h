#pragma once
/// Delivers what a daemon tells clients off its data plane, on threads of
/// its own, so that a slow or unreachable recipient never holds up the data
/// plane nor, beyond one call timeout, another recipient: blobstored's
/// transfer completion notices (SEND_NOTIFICATIONS) to TransferObservers and
/// store events to EventSubscribers, blob-dicomd's study-stable events
/// (EventHub.h). The threads that post (the reactor, the commit pool, CORBA
/// upcalls) only queue. It knows no notice type: each sink takes its own
/// (NoticeSinkOf).

#include <any>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace blobstreaming::daemon {

/// What is queued: one notice of the type its sink takes (a transfer's
/// outcome, a store's event, a study's).
using Notice = std::any;

/// Where the notices of one recipient go.
class NoticeSink {
public:
    virtual ~NoticeSink() = default;

    /// Deliver one notice. Run on a dispatcher thread, one call at a time per
    /// endpoint(); may block, but for a bounded time (the sink's own call
    /// timeout). Return "" when delivered, otherwise why not (e.g. "CORBA
    /// TIMEOUT"). NoticeSinkOf implements it for one type of notice.
    virtual std::string deliver_notice(const Notice& notice) noexcept = 0;

    /// Where the notices go ("127.0.0.1:4711"), for the log. Sinks with the
    /// same endpoint share its fate: a failed delivery suspends them all.
    virtual const std::string& endpoint() const noexcept = 0;

    /// For the log lines: "transfer notices: 3 not delivered to the observer at ...".
    virtual const char* noun() const noexcept { return "transfer notices"; }
    virtual const char* recipient() const noexcept { return "observer"; }

    /// After a delivery to this sink failed (`why`), or one to another sink
    /// of its endpoint, or when the dispatcher gave up on it (it fell
    /// behind: its backlog was the longest when the queues were full), on a
    /// dispatcher thread, no lock of the dispatcher held: a sink may end
    /// itself here (EventHub ends the subscription). Never called from
    /// post(). Must not throw.
    virtual void failed(const std::string& /*why*/) noexcept {}
};

/// A sink of notices of type `T`, posted as a `T` or, to share one among
/// many sinks, as a `std::shared_ptr<const T>`. A notice of another type is
/// dropped as delivered.
template <class T>
class NoticeSinkOf : public NoticeSink {
public:
    /// deliver_notice() for a `T`: the same contract.
    virtual std::string deliver(const T& notice) noexcept = 0;

    std::string deliver_notice(const Notice& notice) noexcept final
    {
        if (const T* value = std::any_cast<T>(&notice)) return deliver(*value);
        if (const auto* shared = std::any_cast<std::shared_ptr<const T>>(&notice)) return deliver(**shared);
        return {};
    }
};

struct NoticeLimits {
    std::size_t per_observer = 1000;  ///< notices queued for one sink; more are dropped
    /// Notices queued for all sinks together. When they are full, the sink
    /// with the longest backlog loses its queue and is told failed() ("fell
    /// behind"), so that a sink that keeps up never loses a notice to the
    /// backlog of others; a notice for the sink with the longest backlog
    /// itself is dropped.
    std::size_t total = 20000;
    /// After a failed delivery an endpoint gets nothing for this long; the
    /// period doubles with each further failure up to `max_retry_after`, and
    /// a delivery that succeeds ends it.
    std::chrono::milliseconds retry_after{10000};
    std::chrono::milliseconds max_retry_after{300000};
    /// At most one log line per endpoint and reason about dropped notices in
    /// this period (the first one at once), each with the count.
    std::chrono::milliseconds report_every{10000};
    /// Delivery threads. Each endpoint is served by one thread at a time (its
    /// notices stay in order), so a recipient that blocks for its call
    /// timeout holds one thread and delays the others only when every
    /// thread is so held. They serve the endpoints that have not proven
    /// prompt first (see prompt_threads).
    unsigned threads = 1;
    /// Threads more that serve only prompt endpoints: those whose last
    /// delivery succeeded within `prompt_within`. A new endpoint, or one
    /// whose last delivery took longer, is served by `threads` only, so that
    /// endpoints that block (unreachable, not reading) hold those, never
    /// these: a prompt recipient then waits for other prompt ones only. 0:
    /// one pool for all.
    unsigned prompt_threads = 0;
    std::chrono::milliseconds prompt_within{100};
    /// With prompt threads, a thread whose delivery takes longer than
    /// `prompt_within` (a connect that hangs, a socket that is full) is
    /// replaced by a new one of its kind at once, so that the prompt ones
    /// are never held and endpoints that block are tried side by side; the
    /// old one ends after that delivery. At most this many such replaced
    /// threads at a time; past it a thread that blocks holds its place
    /// until its call timeout.
    unsigned max_replaced = 32;
};

struct NoticeStats {
    std::uint64_t delivered = 0;
    std::uint64_t failed = 0;               ///< deliver() returned a reason
    std::uint64_t dropped_full = 0;         ///< the sink's or the total queue was full
    std::uint64_t fell_behind = 0;          ///< sinks whose queue was dropped to make room (failed())
    std::uint64_t replaced = 0;             ///< threads replaced while a delivery blocked them
    std::uint64_t dropped_unreachable = 0;  ///< queued for, or posted to, a suspended endpoint
    std::uint64_t dropped_stopped = 0;      ///< still queued at stop(), or posted after it
    std::size_t queued = 0;
};

/// One for the whole daemon (or one per event source), with `threads` + `prompt_threads` threads.
/// Notices of one sink are delivered in the order they were posted; sinks
/// take turns, one notice each, an endpoint on one thread at a time, so with
/// one thread a slow sink delays another's notice by at most one of its own
/// deliveries (bounded by its call timeout), with more not at all until that
/// many endpoints are slow; with prompt threads, a prompt endpoint waits for
/// the other prompt ones only. After a failed delivery every sink of that
/// endpoint is told failed() (at once, or at its next post) and its notices
/// are dropped until its retry period has passed. Memory is bounded by the
/// limits; a full queue is made room in by giving up the sink that is
/// furthest behind. Thread-safe.
class NoticeDispatcher {
public:
    /// Starts the threads.
    explicit NoticeDispatcher(NoticeLimits limits = {});
    /// stop()
    ~NoticeDispatcher();
    NoticeDispatcher(const NoticeDispatcher&) = delete;
    NoticeDispatcher& operator=(const NoticeDispatcher&) = delete;

    /// Queues `notice` for `sink`. Never blocks (takes a mutex only), so the
    /// reactor thread may call it. Returns false when the notice is dropped
    /// (queue full, endpoint suspended after a failure, stopped): it is
    /// counted and reported in the log.
    bool post(const std::shared_ptr<NoticeSink>& sink, Notice notice) noexcept;

    /// Queues one copy of `notice` for each of `sinks`, as post() each, under
    /// one lock and with one wake-up of the threads: an event for 100
    /// subscribers wakes the delivery threads once, not 100 times while the
    /// poster still holds the lock they wait for. Returns how many were
    /// queued.
    std::size_t post_all(const std::vector<std::shared_ptr<NoticeSink>>& sinks, const Notice& notice) noexcept;

    /// Lets the delivery in progress finish (bounded by the sink's timeout),
    /// drops and reports what is still queued, joins the threads, and
    /// releases every sink. Later posts are dropped. Idempotent; not to be
    /// called from two threads at once.
    void stop() noexcept;

    NoticeStats stats() const;

private:
    using Clock = std::chrono::steady_clock;
    struct Channel {
        std::shared_ptr<NoticeSink> sink;
        std::deque<Notice> queue;
        bool in_flight = false;  ///< a thread is delivering its notice
    };
    enum class Lane { any, prompt };
    /// A delivery thread; in a std::list: stable, so threads refer to theirs.
    struct Worker {
        Lane lane = Lane::any;
        bool delivering = false;
        bool replaced = false;  ///< a prompt thread that was too slow: ends after its delivery
        bool done = false;      ///< returned from run(): may be joined
        Clock::time_point started;
        std::string endpoint;  ///< of the delivery in progress
        std::thread thread;
    };
    struct Suspension {
        Clock::time_point until;
        std::chrono::milliseconds period{0};
        std::string why;  ///< of the last failure
    };
    /// Drops not yet reported, by endpoint and reason.
    struct Unreported {
        std::uint64_t count = 0;
    };

    void run(Worker& worker) noexcept;
    /// post() under the lock, without the wake-up; throws std::bad_alloc.
    bool post_locked(const std::shared_ptr<NoticeSink>& sink, Notice notice);
    void start_worker_locked(Lane lane);
    /// Replaces prompt threads whose delivery takes too long (own thread).
    void supervise() noexcept;
    /// Makes room in a full queue for a notice of `poster`: drops the queue
    /// of the sink with the longest backlog, if longer than the poster's.
    bool make_room_locked(const NoticeSink* poster, std::size_t mine);
    /// failed(why) for `sink`, on a dispatcher thread soon, once.
    void tell_failed_locked(const std::shared_ptr<NoticeSink>& sink, const std::string& why);
    bool prompt_locked(const std::string& endpoint) const;
    bool suspended_locked(const std::string& endpoint, Clock::time_point now) const;
    void fail_locked(const std::shared_ptr<NoticeSink>& sink, const std::string& why, Clock::time_point now);
    /// What a drop is reported as: endpoint, noun, recipient, reason.
    using DropKey = std::tuple<std::string, std::string, std::string, std::string>;
    void drop_locked(const NoticeSink& sink, const std::string& reason, std::uint64_t count);
    /// The first sink in `turns` whose endpoint is not being served (and,
    /// with `prompt_only`, is prompt); null if none.
    const NoticeSink* next_turn_locked(std::deque<const NoticeSink*>& turns, bool prompt_only);
    void enqueue_turn_locked(const NoticeSink* key);
    void report_locked(Clock::time_point now, bool all);

    const NoticeLimits limits_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::map<const NoticeSink*, Channel> channels_;  ///< sinks with queued notices, or in flight
    /// Round robin over channels_ but those whose notice is being delivered:
    /// of endpoints that were prompt when queued, and of the others.
    std::deque<const NoticeSink*> prompt_turns_;
    std::deque<const NoticeSink*> turns_;
    std::map<std::string, Clock::time_point> prompt_;  ///< endpoints whose last delivery was prompt: when
    /// Sinks to be told failed(), and why.
    std::map<const NoticeSink*, std::pair<std::shared_ptr<NoticeSink>, std::string>> to_fail_;
    std::set<std::string> busy_;           ///< endpoints a thread is delivering to
    std::map<std::string, Suspension> suspended_;  ///< by endpoint
    std::map<DropKey, Unreported> unreported_;
    std::map<DropKey, Clock::time_point> last_report_;
    NoticeStats stats_;
    bool stopping_ = false;
    unsigned idle_ = 0;  ///< threads waiting for wake_
    std::list<Worker> workers_;
    std::condition_variable supervisor_wake_;
    std::thread supervisor_;
};

}  // namespace blobstreaming::daemon
