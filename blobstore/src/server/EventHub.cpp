#include "EventHub.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

namespace blobstreaming::server {
using daemon::SubscriptionTable;

namespace {

/// An in-daemon subscriber: a function.
class LocalSink final : public daemon::NoticeSinkOf<StoreEvent> {
public:
    LocalSink(std::string who, std::function<void(const StoreEvent&)> on_event)
        : who_("in-daemon " + std::move(who)), on_event_(std::move(on_event))
    {}

    std::string deliver(const StoreEvent& event) noexcept override
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
    const char* noun() const noexcept override { return "store events"; }
    const char* recipient() const noexcept override { return "subscriber"; }

private:
    const std::string who_;
    const std::function<void(const StoreEvent&)> on_event_;
};

}  // namespace

EventHub::EventHub(std::string store, daemon::NoticeDispatcher& dispatcher, EventLimits limits)
    : store_(std::move(store)), dispatcher_(&dispatcher), limits_(limits)
{}

std::uint64_t EventHub::subscribe(std::shared_ptr<daemon::NoticeSink> sink, EventKinds kinds, std::string owner)
{
    std::lock_guard lock(mutex_);
    if (!owner.empty()) {
        auto mine = per_client_.find(owner);
        if (mine != per_client_.end() && mine->second >= limits_.per_client)
            throw Error(Errc::limit_reached, "subscribe to the events of store \"" + store_ + "\": client \"" +
                                                 owner + "\" has " + std::to_string(mine->second) +
                                                 " subscriptions open, the most one client may keep; "
                                                 "unsubscribe one first");
    }
    if (subscriptions_.size() >= limits_.total)
        throw Error(Errc::limit_reached, "subscribe to the events of store \"" + store_ +
                                             "\": " + std::to_string(limits_.total) +
                                             " subscriptions are open, the most the store keeps; try again later");
    const std::string endpoint = sink->endpoint();
    const std::string client = owner.empty() ? "this daemon" : "client " + quote_name(owner);
    const std::string owner_key = owner;
    const std::uint64_t id = subscriptions_.add({std::move(sink), kinds, std::move(owner)});
    spdlog::info("store events: subscription {} of {} for the subscriber at {} (events: {})", id, client, endpoint,
                 kinds == kEveryEventKind                          ? "committed, removed"
                 : kinds == event_bit(StoreEvent::Kind::committed) ? "committed"
                                                                   : "removed");
    if (!owner_key.empty()) ++per_client_[owner_key];
    return id;
}

void EventHub::forget_locked(std::uint64_t id)
{
    if (const SubscriptionTable::Subscription* s = subscriptions_.find(id); s && !s->owner.empty()) {
        auto mine = per_client_.find(s->owner);
        if (mine != per_client_.end() && --mine->second == 0) per_client_.erase(mine);
    }
    subscriptions_.erase(id);
}

std::uint64_t EventHub::subscribe_local(std::string who, EventKinds kinds,
                                        std::function<void(const StoreEvent&)> on_event)
{
    return subscribe(std::make_shared<LocalSink>(std::move(who), std::move(on_event)), kinds, std::string());
}

bool EventHub::unsubscribe(std::uint64_t id, const std::string& client)
{
    std::lock_guard lock(mutex_);
    const SubscriptionTable::Subscription* s = subscriptions_.find(id);
    const std::string owner = s ? s->owner : std::string();
    switch (subscriptions_.unsubscribe(id, client)) {
    case SubscriptionTable::Removal::ended:
        if (auto mine = per_client_.find(owner); mine != per_client_.end() && --mine->second == 0)
            per_client_.erase(mine);
        spdlog::info("store events: subscription {} ended by its subscriber", id);
        return true;
    case SubscriptionTable::Removal::foreign:
        // The caller hears what it would for an unknown id; the log says who.
        spdlog::warn("store events: unsubscribe {} refused: the subscription is {}'s, asked by client {}; it "
                     "goes on",
                     id, owner.empty() ? std::string("this daemon") : "client " + quote_name(owner),
                     quote_name(client));
        return false;
    case SubscriptionTable::Removal::unknown: break;
    }
    spdlog::debug("store events: unsubscribe {} by client {}: no such subscription (ended already)", id,
                  quote_name(client));
    return false;
}

void EventHub::end(std::uint64_t id, const std::string& why)
{
    std::lock_guard lock(mutex_);
    const SubscriptionTable::Subscription* s = subscriptions_.find(id);
    if (!s) return;
    spdlog::warn("store events: subscription {} of the subscriber at {} ended: it did not take an event ({})", id,
                 s->sink->endpoint(), why);
    forget_locked(id);
}

void EventHub::published(const StoreEvent& event) noexcept
{
    std::lock_guard lock(mutex_);
    if (!dispatcher_) return;
    const EventKinds bit = event_bit(event.kind);
    subscriptions_.for_each([&](std::uint64_t, const SubscriptionTable::Subscription& subscription) {
        if (subscription.kinds & bit) dispatcher_->post(subscription.sink, event);
    });
}

void EventHub::close() noexcept
{
    std::lock_guard lock(mutex_);
    dispatcher_ = nullptr;
    subscriptions_.clear();
    per_client_.clear();
}

std::size_t EventHub::subscriptions() const
{
    std::lock_guard lock(mutex_);
    return subscriptions_.size();
}

}  // namespace blobstreaming::server
