#pragma once
/// Delivers transfer completion notices (SEND_NOTIFICATIONS) to observers on
/// a thread of its own, so that a slow or unreachable observer never holds
/// up the data plane: the reactor thread only queues.

#include "TransferControl.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace blobstreaming::server {

/// Where the notices of one observer go.
class NoticeSink {
public:
    virtual ~NoticeSink() = default;

    /// Delivers one notice. Runs on the dispatcher's thread only, one call at
    /// a time; may block, but for a bounded time (its own call timeout).
    /// Returns "" when delivered, otherwise why not (e.g. "CORBA TIMEOUT").
    virtual std::string deliver(const TransferOutcome& notice) noexcept = 0;

    /// Where the notices go ("127.0.0.1:4711"), for the log. Sinks with the
    /// same endpoint share its fate: a failed delivery suspends them all.
    virtual const std::string& endpoint() const noexcept = 0;
};

struct NoticeLimits {
    std::size_t per_observer = 1000;  ///< notices queued for one sink; more are dropped
    std::size_t total = 20000;        ///< notices queued for all sinks together
    /// After a failed delivery an endpoint gets nothing for this long; the
    /// period doubles with each further failure up to `max_retry_after`, and
    /// a delivery that succeeds ends it.
    std::chrono::milliseconds retry_after{10000};
    std::chrono::milliseconds max_retry_after{300000};
    /// At most one log line per endpoint and reason about dropped notices in
    /// this period (the first one at once), each with the count.
    std::chrono::milliseconds report_every{10000};
};

struct NoticeStats {
    std::uint64_t delivered = 0;
    std::uint64_t failed = 0;               ///< deliver() returned a reason
    std::uint64_t dropped_full = 0;         ///< the sink's or the total queue was full
    std::uint64_t dropped_unreachable = 0;  ///< queued for, or posted to, a suspended endpoint
    std::uint64_t dropped_stopped = 0;      ///< still queued at stop(), or posted after it
    std::size_t queued = 0;
};

/// One thread for the whole daemon. Notices of one sink are delivered in the
/// order they were posted; sinks take turns, one notice each, so a slow sink
/// delays another's notice by at most one of its own deliveries (bounded by
/// its call timeout), and a sink whose delivery failed is skipped until its
/// retry period has passed. Memory is bounded by the limits. Thread-safe.
class NoticeDispatcher {
public:
    /// Starts the thread.
    explicit NoticeDispatcher(NoticeLimits limits = {});
    /// stop()
    ~NoticeDispatcher();
    NoticeDispatcher(const NoticeDispatcher&) = delete;
    NoticeDispatcher& operator=(const NoticeDispatcher&) = delete;

    /// Queues `notice` for `sink`. Never blocks (takes a mutex only), so the
    /// reactor thread may call it. Returns false when the notice is dropped
    /// (queue full, endpoint suspended after a failure, stopped): it is
    /// counted and reported in the log.
    bool post(const std::shared_ptr<NoticeSink>& sink, const TransferOutcome& notice) noexcept;

    /// Lets the delivery in progress finish (bounded by the sink's timeout),
    /// drops and reports what is still queued, joins the thread, and
    /// releases every sink. Later posts are dropped. Idempotent; not to be
    /// called from two threads at once.
    void stop() noexcept;

    NoticeStats stats() const;

private:
    using Clock = std::chrono::steady_clock;
    struct Channel {
        std::shared_ptr<NoticeSink> sink;
        std::deque<TransferOutcome> queue;
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

    void run() noexcept;
    bool suspended_locked(const std::string& endpoint, Clock::time_point now) const;
    void fail_locked(const std::shared_ptr<NoticeSink>& sink, const std::string& why, Clock::time_point now);
    void drop_locked(const std::string& endpoint, const std::string& reason, std::uint64_t count);
    void report_locked(Clock::time_point now, bool all);

    const NoticeLimits limits_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::map<const NoticeSink*, Channel> channels_;  ///< sinks with queued notices, or in flight
    std::deque<const NoticeSink*> turns_;  ///< round robin over channels_ but the one whose notice is being delivered
    std::map<std::string, Suspension> suspended_;  ///< by endpoint
    std::map<std::pair<std::string, std::string>, Unreported> unreported_;
    std::map<std::pair<std::string, std::string>, Clock::time_point> last_report_;
    NoticeStats stats_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace blobstreaming::server
