#include "EventHub.h"

#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

namespace blobstreaming::server {
namespace {

/// An in-daemon subscriber: a function.
class LocalSink final : public NoticeSink {
public:
    LocalSink(std::string who, std::function<void(const StoreEvent&)> on_event)
        : who_("in-daemon " + std::move(who)), on_event_(std::move(on_event))
    {}

    std::string deliver_event(const StoreEvent& event) noexcept override
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

EventHub::EventHub(std::string store, NoticeDispatcher& dispatcher, EventLimits limits)
    : store_(std::move(store)), dispatcher_(&dispatcher), limits_(limits)
{}

std::uint64_t EventHub::subscribe(std::shared_ptr<NoticeSink> sink, EventKinds kinds, const std::string& client)
{
    std::lock_guard lock(mutex_);
    if (!client.empty()) {
        auto mine = per_client_.find(client);
        if (mine != per_client_.end() && mine->second >= limits_.per_client)
            throw Error(Errc::limit_reached, "subscribe to the events of store \"" + store_ + "\": client \"" +
                                                 client + "\" has " + std::to_string(mine->second) +
                                                 " subscriptions open, the most one client may keep; "
                                                 "unsubscribe one first");
    }
    if (subscriptions_.size() >= limits_.total)
        throw Error(Errc::limit_reached, "subscribe to the events of store \"" + store_ +
                                             "\": " + std::to_string(limits_.total) +
                                             " subscriptions are open, the most the store keeps; try again later");
    const std::uint64_t id = ++last_id_;
    spdlog::info("store events: subscription {} for the subscriber at {} (events: {})", id, sink->endpoint(),
                 kinds == kEveryEventKind                          ? "committed, removed"
                 : kinds == event_bit(StoreEvent::Kind::committed) ? "committed"
                                                                   : "removed");
    subscriptions_.emplace(id, Subscription{std::move(sink), kinds, client});
    if (!client.empty()) ++per_client_[client];
    return id;
}

void EventHub::erase_locked(std::map<std::uint64_t, Subscription>::iterator it)
{
    const std::string& client = it->second.client;
    if (!client.empty()) {
        auto mine = per_client_.find(client);
        if (mine != per_client_.end() && --mine->second == 0) per_client_.erase(mine);
    }
    subscriptions_.erase(it);
}

std::uint64_t EventHub::subscribe_local(std::string who, EventKinds kinds,
                                        std::function<void(const StoreEvent&)> on_event)
{
    return subscribe(std::make_shared<LocalSink>(std::move(who), std::move(on_event)), kinds);
}

bool EventHub::unsubscribe(std::uint64_t id)
{
    std::lock_guard lock(mutex_);
    auto it = subscriptions_.find(id);
    const bool was = it != subscriptions_.end();
    if (was) erase_locked(it);
    if (was) spdlog::info("store events: subscription {} ended by its subscriber", id);
    return was;
}

void EventHub::end(std::uint64_t id, const std::string& why)
{
    std::lock_guard lock(mutex_);
    auto it = subscriptions_.find(id);
    if (it == subscriptions_.end()) return;
    spdlog::warn("store events: subscription {} of the subscriber at {} ended: it did not take an event ({})", id,
                 it->second.sink->endpoint(), why);
    erase_locked(it);
}

void EventHub::published(const StoreEvent& event) noexcept
{
    std::lock_guard lock(mutex_);
    if (!dispatcher_) return;
    const EventKinds bit = event_bit(event.kind);
    for (const auto& [id, subscription] : subscriptions_)
        if (subscription.kinds & bit) dispatcher_->post(subscription.sink, event);
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
