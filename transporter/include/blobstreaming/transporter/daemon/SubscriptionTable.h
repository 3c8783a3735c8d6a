#pragma once
/// The subscriptions of one event source (a store's EventHub, a gateway's
/// StudyEvents), each owned by the client that made it: ids are random
/// 64-bit numbers, and only the owner may end a subscription by its id.

#include <blobstreaming/transporter/daemon/NoticeDispatcher.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace blobstreaming::daemon {

/// Not thread-safe: its user holds its own mutex around every call.
class SubscriptionTable {
public:
    struct Subscription {
        std::shared_ptr<NoticeSink> sink;
        unsigned kinds = 0;  ///< what the user filters on (EventHub: EventKinds)
        /// Who made it: a certificate subject or an address (corba::
        /// caller_client()); "" for an in-daemon subscriber, which no remote
        /// client can end.
        std::string owner;
    };

    /// Adds a subscription under a new random id (never 0, never one in use).
    std::uint64_t add(Subscription subscription);

    /// What unsubscribe() did.
    enum class Removal {
        ended,    ///< it was `client`'s: ended
        unknown,  ///< no subscription of that id
        foreign,  ///< another client's (or an in-daemon one): kept
    };
    /// Ends subscription `id` when `client` made it. A caller answers
    /// `unknown` and `foreign` alike, so that nobody learns whether an id is
    /// in use by somebody else.
    Removal unsubscribe(std::uint64_t id, const std::string& client);

    /// The subscription `id`, or null. Valid until the next change.
    const Subscription* find(std::uint64_t id) const;
    /// Ends `id` whoever made it (its subscriber failed, the source stops).
    bool erase(std::uint64_t id);
    void clear() noexcept { subscriptions_.clear(); }
    std::size_t size() const noexcept { return subscriptions_.size(); }

    /// Calls `fn(id, subscription)` for each, in no particular order.
    void for_each(const std::function<void(std::uint64_t, const Subscription&)>& fn) const;

    /// A random id for a new subscription (OpenSSL's generator); exposed for
    /// the tests. Throws Error(io_error) when the generator fails.
    static std::uint64_t random_id();

private:
    std::map<std::uint64_t, Subscription> subscriptions_;
};

}  // namespace blobstreaming::daemon
