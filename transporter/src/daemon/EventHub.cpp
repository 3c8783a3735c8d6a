#include <blobstreaming/transporter/daemon/EventHub.h>

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

namespace blobstreaming::daemon {
namespace {

/// What the dispatcher is given for one subscription: the subscriber's
/// deliveries, under the source's name in the log, and for a remote one the
/// end of the subscription when a delivery fails.
class SubscriptionSink final : public NoticeSink {
public:
    SubscriptionSink(std::shared_ptr<NoticeSink> subscriber, std::string noun, EventHubBase* ends)
        : subscriber_(std::move(subscriber)), noun_(std::move(noun)), ends_(ends)
    {}

    /// Before it is posted to (under the hub's mutex, as every post).
    void set_id(std::uint64_t id) noexcept { id_ = id; }

    std::string deliver_notice(const Notice& notice) noexcept override { return subscriber_->deliver_notice(notice); }
    const std::string& endpoint() const noexcept override { return subscriber_->endpoint(); }
    const char* noun() const noexcept override { return noun_.c_str(); }
    const char* recipient() const noexcept override { return "subscriber"; }
    void failed(const std::string& why) noexcept override
    {
        if (!ends_) return;  // in-daemon: its endpoint is suspended for a while, as any
        try {
            ends_->end(id_, why);
        } catch (...) {
            // out of memory while logging: it is ended all the same
        }
    }

private:
    const std::shared_ptr<NoticeSink> subscriber_;
    const std::string noun_;
    EventHubBase* const ends_;  ///< null: in-daemon
    std::uint64_t id_ = 0;
};

std::string client_of(const std::string& owner)
{
    return owner.empty() ? std::string("this daemon") : "client " + quote_name(owner);
}

}  // namespace

EventHubBase::EventHubBase(EventSource source, NoticeDispatcher& dispatcher, EventLimits limits)
    : source_(std::move(source)), dispatcher_(&dispatcher), limits_(limits)
{}

std::uint64_t EventHubBase::add(std::shared_ptr<NoticeSink> subscriber, unsigned kinds, std::string owner,
                                bool remote)
{
    auto sink = std::make_shared<SubscriptionSink>(std::move(subscriber), source_.events, remote ? this : nullptr);
    std::lock_guard lock(mutex_);
    if (!owner.empty()) {
        auto mine = per_client_.find(owner);
        if (mine != per_client_.end() && mine->second >= limits_.per_client)
            throw Error(Errc::limit_reached, "subscribe to " + source_.what + ": client " + quote_name(owner) +
                                                 " has " + std::to_string(mine->second) +
                                                 " subscriptions open, the most one client may keep; "
                                                 "unsubscribe one first");
    }
    if (subscriptions_.size() >= limits_.total)
        throw Error(Errc::limit_reached, "subscribe to " + source_.what + ": " + std::to_string(limits_.total) +
                                             " subscriptions are open, the most the " + source_.keeper +
                                             " keeps; try again later");
    const std::string endpoint = sink->endpoint();
    const std::string client = client_of(owner);
    const std::string owner_key = owner;
    SubscriptionSink* raw = sink.get();
    const std::uint64_t id = subscriptions_.add({std::move(sink), kinds, std::move(owner)});
    raw->set_id(id);
    if (source_.kinds)
        spdlog::info("{}: subscription {} of {} for the subscriber at {} (events: {})", source_.events, id, client,
                     endpoint, source_.kinds(kinds));
    else
        spdlog::info("{}: subscription {} of {} for the subscriber at {}", source_.events, id, client, endpoint);
    if (!owner_key.empty()) ++per_client_[owner_key];
    return id;
}

void EventHubBase::forget_locked(std::uint64_t id)
{
    if (const SubscriptionTable::Subscription* s = subscriptions_.find(id); s && !s->owner.empty()) {
        auto mine = per_client_.find(s->owner);
        if (mine != per_client_.end() && --mine->second == 0) per_client_.erase(mine);
    }
    subscriptions_.erase(id);
}

bool EventHubBase::unsubscribe(std::uint64_t id, const std::string& client)
{
    std::lock_guard lock(mutex_);
    const SubscriptionTable::Subscription* s = subscriptions_.find(id);
    const std::string owner = s ? s->owner : std::string();
    switch (subscriptions_.unsubscribe(id, client)) {
    case SubscriptionTable::Removal::ended:
        if (auto mine = per_client_.find(owner); mine != per_client_.end() && --mine->second == 0)
            per_client_.erase(mine);
        spdlog::info("{}: subscription {} ended by its subscriber", source_.events, id);
        return true;
    case SubscriptionTable::Removal::foreign:
        // The caller hears what it would for an unknown id; the log says who.
        spdlog::warn("{}: unsubscribe {} refused: the subscription is {}'s, asked by client {}; it goes on",
                     source_.events, id, client_of(owner), quote_name(client));
        return false;
    case SubscriptionTable::Removal::unknown: break;
    }
    spdlog::debug("{}: unsubscribe {} by client {}: no such subscription (ended already)", source_.events, id,
                  quote_name(client));
    return false;
}

void EventHubBase::end(std::uint64_t id, const std::string& why)
{
    std::lock_guard lock(mutex_);
    const SubscriptionTable::Subscription* s = subscriptions_.find(id);
    if (!s) return;
    spdlog::warn("{}: subscription {} of the subscriber at {} ended: it did not take an event ({})", source_.events,
                 id, s->sink->endpoint(), why);
    forget_locked(id);
}

void EventHubBase::post(const Notice& notice, unsigned kinds) noexcept
{
    std::lock_guard lock(mutex_);
    if (!dispatcher_) return;
    try {
        sinks_.clear();  // capacity kept: no allocation per event
        subscriptions_.for_each([&](std::uint64_t, const SubscriptionTable::Subscription& subscription) {
            if (subscription.kinds & kinds) sinks_.push_back(subscription.sink);
        });
    } catch (...) {
        // out of memory: those listed so far get it
    }
    dispatcher_->post_all(sinks_, notice);
    sinks_.clear();  // the hub does not keep the sinks alive
}

void EventHubBase::close() noexcept
{
    std::lock_guard lock(mutex_);
    dispatcher_ = nullptr;
    subscriptions_.clear();
    per_client_.clear();
}

std::size_t EventHubBase::subscriptions() const
{
    std::lock_guard lock(mutex_);
    return subscriptions_.size();
}

}  // namespace blobstreaming::daemon
