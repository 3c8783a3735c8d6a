#include <blobstreaming/transporter/daemon/SubscriptionTable.h>

#include <blobstreaming/transporter/Protocol.h>

#include <cstring>

namespace blobstreaming::daemon {

std::uint64_t SubscriptionTable::random_id()
{
    // The transfer tickets' generator: 128 random bits, of which 64 are used.
    const protocol::TicketId bits = protocol::random_ticket();
    std::uint64_t id = 0;
    std::memcpy(&id, bits.data(), sizeof id);
    return id;
}

std::uint64_t SubscriptionTable::add(Subscription subscription)
{
    std::uint64_t id = random_id();
    // 0 means "no subscription" to clients; a collision is 2^-64 per id in use.
    for (int tries = 0; (id == 0 || subscriptions_.count(id) != 0) && tries < 64; ++tries) id = random_id();
    subscriptions_.emplace(id, std::move(subscription));
    return id;
}

SubscriptionTable::Removal SubscriptionTable::unsubscribe(std::uint64_t id, const std::string& client)
{
    auto it = subscriptions_.find(id);
    if (it == subscriptions_.end()) return Removal::unknown;
    if (it->second.owner.empty() || it->second.owner != client) return Removal::foreign;
    subscriptions_.erase(it);
    return Removal::ended;
}

const SubscriptionTable::Subscription* SubscriptionTable::find(std::uint64_t id) const
{
    auto it = subscriptions_.find(id);
    return it == subscriptions_.end() ? nullptr : &it->second;
}

bool SubscriptionTable::erase(std::uint64_t id) { return subscriptions_.erase(id) > 0; }

void SubscriptionTable::for_each(const std::function<void(std::uint64_t, const Subscription&)>& fn) const
{
    for (const auto& [id, subscription] : subscriptions_) fn(id, subscription);
}

}  // namespace blobstreaming::daemon
