#pragma once
/// The subscriptions to a daemon's store events (committed, removed): what
/// ObservedStore publishes is queued here, per subscription, on the
/// NoticeDispatcher, never delivered on the thread that committed.
///
/// Two kinds of subscriber, one path: remote ones (BlobStore::subscribe,
/// an EventSubscriber's oneway call, servants/EventSubscription.cpp) and
/// in-daemon ones (subscribe_local(): a function run on a dispatcher
/// thread, e.g. an index of the Blobs' contents). Both get the same events
/// in sequence order, with the same bounded queue and drop accounting.

#include <blobstreaming/blobstore/ObservedStore.h>
#include <blobstreaming/transporter/daemon/NoticeDispatcher.h>
#include <blobstreaming/transporter/daemon/SubscriptionTable.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace blobstreaming::server {

/// A set of StoreEvent::Kind, one bit each.
using EventKinds = unsigned;
constexpr EventKinds event_bit(StoreEvent::Kind kind) noexcept { return 1u << static_cast<unsigned>(kind); }
constexpr EventKinds kEveryEventKind = event_bit(StoreEvent::Kind::committed) | event_bit(StoreEvent::Kind::removed);

/// How many subscriptions a hub keeps (blobstored --max-subscriptions,
/// --max-client-subscriptions).
struct EventLimits {
    std::size_t total = 1000;     ///< remote and local together
    std::size_t per_client = 16;  ///< of one client (certificate subject, else address)
};

class EventHub final : public StoreListener {
public:
    /// The most subscriptions at once by default, remote and local together.
    static constexpr std::size_t kMaxSubscriptions = EventLimits{}.total;

    /// `dispatcher` must outlive the hub or its close().
    EventHub(std::string store, daemon::NoticeDispatcher& dispatcher, EventLimits limits = {});

    /// Sends the events of `kinds` to `sink` from now on, for `owner` (the
    /// client that subscribed: corba::caller_client(); "" for an in-daemon
    /// subscriber, which no client can end and which is not capped per
    /// client). Returns the subscription's id, a random 64-bit number.
    /// Throws Error(Errc::limit_reached) past the owner's or the total
    /// limit. Thread-safe.
    std::uint64_t subscribe(std::shared_ptr<daemon::NoticeSink> sink, EventKinds kinds, std::string owner);

    /// In-daemon subscriber: `on_event` runs on a dispatcher thread, one
    /// event at a time, in sequence order; it must not throw and should be
    /// quick (a slow one delays its own queue only, which then drops).
    /// `who` names it in log lines ("index"). Errors as subscribe().
    std::uint64_t subscribe_local(std::string who, EventKinds kinds, std::function<void(const StoreEvent&)> on_event);

    /// Ends subscription `id` when `client` made it; true then. False, and
    /// the subscription keeps receiving, when there is none of that id or
    /// another client (or the daemon itself) made it: the caller answers
    /// both alike (the log line says which).
    bool unsubscribe(std::uint64_t id, const std::string& client);

    /// Ends subscription `id` because its subscriber failed (`why`), logged.
    void end(std::uint64_t id, const std::string& why);

    /// ObservedStore's events: queued for every subscription that takes
    /// their kind. Never blocks beyond a mutex.
    void published(const StoreEvent& event) noexcept override;

    /// Later events go nowhere (the daemon stops; the dispatcher may go).
    void close() noexcept;

    std::size_t subscriptions() const;
    const std::string& store() const noexcept { return store_; }
    /// When the hub was made (the daemon's start): sequences count from here.
    std::chrono::system_clock::time_point epoch() const noexcept { return epoch_; }

private:
    /// Ends subscription `id` (known to be there): out of the table and of
    /// its owner's count.
    void forget_locked(std::uint64_t id);

    const std::string store_;
    const std::chrono::system_clock::time_point epoch_ = std::chrono::system_clock::now();
    mutable std::mutex mutex_;
    daemon::NoticeDispatcher* dispatcher_;  ///< null once closed
    const EventLimits limits_;
    daemon::SubscriptionTable subscriptions_;
    std::map<std::string, std::size_t> per_client_;  ///< open subscriptions by owner (not "")
};

}  // namespace blobstreaming::server
