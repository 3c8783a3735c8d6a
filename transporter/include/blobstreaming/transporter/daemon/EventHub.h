#pragma once
/// The subscriptions to one source of events and their delivery: what the
/// source publishes is queued here, per subscription, on a NoticeDispatcher,
/// never delivered on the thread that published. One template for every
/// source: blobstored's store events (EventHub<StoreEvent>, fed by
/// ObservedStore: blobstore/src/server/StoreEventHub.h) and blob-dicomd's
/// study-stable events (EventHub<BlobStreaming::StudyStableEvent>).
///
/// Two kinds of subscriber, one path: remote ones (a client's callback
/// object, called oneway by a NoticeSinkOf<Event>; its subscription ends at
/// its first failed delivery) and in-daemon ones (subscribe_local(): a
/// function run on a dispatcher thread, e.g. an index of the Blobs'
/// contents). Both get the same events in the order published, with the
/// same bounded queue and drop accounting.

#include <blobstreaming/transporter/daemon/NoticeDispatcher.h>
#include <blobstreaming/transporter/daemon/SubscriptionTable.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace blobstreaming::daemon {

/// How many subscriptions a hub keeps (blobstored --max-subscriptions,
/// --max-client-subscriptions; the gateway's are these defaults).
struct EventLimits {
    std::size_t total = 1000;     ///< remote and local together
    std::size_t per_client = 16;  ///< of one client (certificate subject, else address)
};

/// What a hub's log lines and refusals call its events and itself.
struct EventSource {
    std::string events;  ///< the log lines' prefix: "store events", "study events"
    std::string what;    ///< what is subscribed to: "the events of store \"alpha\""
    std::string keeper;  ///< who keeps the subscriptions: "the most the store keeps"
    /// The kinds a subscription takes, for its log line ("committed,
    /// removed"); empty: a source of one kind, not named.
    std::function<std::string(unsigned kinds)> kinds;
};

/// What every EventHub does whatever its events are: the subscriptions, each
/// of the client that made it, within the limits, posted to and ended, and
/// the log lines about them. Thread-safe.
class EventHubBase {
public:
    /// The most subscriptions at once by default, remote and local together.
    static constexpr std::size_t kMaxSubscriptions = EventLimits{}.total;

    /// `dispatcher` must outlive the hub or its close().
    EventHubBase(EventSource source, NoticeDispatcher& dispatcher, EventLimits limits);
    EventHubBase(const EventHubBase&) = delete;
    EventHubBase& operator=(const EventHubBase&) = delete;

    /// Ends subscription `id` when `client` made it; true then. False, and
    /// the subscription keeps receiving, when there is none of that id or
    /// another client (or the daemon itself) made it: the caller answers
    /// both alike (the log line says which).
    bool unsubscribe(std::uint64_t id, const std::string& client);

    /// Ends subscription `id` because its subscriber failed (`why`), logged.
    void end(std::uint64_t id, const std::string& why);

    /// Later events go nowhere (the daemon stops; the dispatcher may go).
    void close() noexcept;

    std::size_t subscriptions() const;
    /// When the hub was made (the daemon's start): sequences count from here.
    std::chrono::system_clock::time_point epoch() const noexcept { return epoch_; }

protected:
    ~EventHubBase() = default;

    /// Sends what is published of `kinds` to `subscriber` from now on, for
    /// `owner` (the client that subscribed: corba::caller_client(); "" for an
    /// in-daemon subscriber, which no client can end and which is not capped
    /// per client). A remote subscription (`remote`) ends at the subscriber's
    /// first failed delivery. `subscriber` is posted to through a sink of the
    /// hub's, one per subscription. Returns the subscription's id, a random 64-bit
    /// number. Throws Error(Errc::limit_reached) past the owner's or the
    /// total limit.
    std::uint64_t add(std::shared_ptr<NoticeSink> subscriber, unsigned kinds, std::string owner, bool remote);

    /// Queues `notice` for every subscription that takes one of `kinds`.
    /// Never blocks beyond a mutex.
    void post(const Notice& notice, unsigned kinds) noexcept;

private:
    /// Ends subscription `id` (known to be there): out of the table and of
    /// its owner's count.
    void forget_locked(std::uint64_t id);

    const EventSource source_;
    const std::chrono::system_clock::time_point epoch_ = std::chrono::system_clock::now();
    mutable std::mutex mutex_;
    NoticeDispatcher* dispatcher_;  ///< null once closed
    const EventLimits limits_;
    SubscriptionTable subscriptions_;
    std::map<std::string, std::size_t> per_client_;  ///< open subscriptions by owner (not "")
    /// post()'s list of recipients, empty between posts (mutex_).
    std::vector<std::shared_ptr<NoticeSink>> sinks_;
};

/// The hub of one type of event. Every event kind is a bit of `kinds`; a
/// source of one kind uses kEveryKind throughout.
template <class Event>
class EventHub : public EventHubBase {
public:
    static constexpr unsigned kEveryKind = ~0u;

    EventHub(EventSource source, NoticeDispatcher& dispatcher, EventLimits limits = {})
        : EventHubBase(std::move(source), dispatcher, limits)
    {}

    /// A client's subscriber, for `owner` (see add()): its subscription ends
    /// at its first failed delivery (the hub ends it: the subscriber's own
    /// failed() is not called). The log lines call it by the source's
    /// `events`. Thread-safe; errors as add().
    std::uint64_t subscribe(std::shared_ptr<NoticeSinkOf<Event>> subscriber, unsigned kinds, std::string owner)
    {
        return add(std::move(subscriber), kinds, std::move(owner), true);
    }

    /// In-daemon subscriber: `on_event` runs on a dispatcher thread, one
    /// event at a time, in the order published; it must not throw and should
    /// be quick (a slow one delays its own queue only, which then drops).
    /// `who` names it in log lines ("index"). Errors as subscribe().
    std::uint64_t subscribe_local(std::string who, unsigned kinds, std::function<void(const Event&)> on_event)
    {
        return add(std::make_shared<LocalSink>(std::move(who), std::move(on_event)), kinds, std::string(), false);
    }

    /// Queues `event` (one copy, shared) for every subscription that takes
    /// one of `kinds`. Never blocks beyond a mutex.
    void publish(const Event& event, unsigned kinds = kEveryKind) noexcept
    {
        try {
            post(Notice(std::make_shared<const Event>(event)), kinds);
        } catch (...) {
            // out of memory: the event is lost, as a full queue loses it
        }
    }

private:
    /// An in-daemon subscriber: a function.
    class LocalSink final : public NoticeSinkOf<Event> {
    public:
        LocalSink(std::string who, std::function<void(const Event&)> on_event)
            : who_("in-daemon " + std::move(who)), on_event_(std::move(on_event))
        {}

        std::string deliver(const Event& event) noexcept override
        {
            try {
                on_event_(event);
                return {};
            } catch (const std::exception& e) {
                return e.what();
            } catch (...) {
                return "unknown failure";
            }
        }
        const std::string& endpoint() const noexcept override { return who_; }

    private:
        const std::string who_;
        const std::function<void(const Event&)> on_event_;
    };
};

}  // namespace blobstreaming::daemon
