#pragma once
/// The subscriptions to a daemon's store events (committed, removed): what
/// ObservedStore publishes is queued, per subscription, on the daemon's
/// NoticeDispatcher by the events hub both daemons use
/// (daemon::EventHub<StoreEvent>), never delivered on the thread that
/// committed. Remote subscribers: servants/EventSubscription.cpp.

#include <blobstreaming/blobstore/ObservedStore.h>
#include <blobstreaming/transporter/daemon/EventHub.h>

#include <string>

namespace blobstreaming::server {

/// A set of StoreEvent::Kind, one bit each.
using EventKinds = unsigned;
constexpr EventKinds event_bit(StoreEvent::Kind kind) noexcept { return 1u << static_cast<unsigned>(kind); }
constexpr EventKinds kEveryEventKind = event_bit(StoreEvent::Kind::committed) | event_bit(StoreEvent::Kind::removed);

class StoreEventHub final : public daemon::EventHub<StoreEvent>, public StoreListener {
public:
    /// `dispatcher` must outlive the hub or its close().
    StoreEventHub(std::string store, daemon::NoticeDispatcher& dispatcher, daemon::EventLimits limits = {});

    /// ObservedStore's events: queued for every subscription that takes
    /// their kind. Never blocks beyond a mutex.
    void published(const StoreEvent& event) noexcept override { publish(event, event_bit(event.kind)); }

    const std::string& store() const noexcept { return store_; }

private:
    const std::string store_;
};

}  // namespace blobstreaming::server
