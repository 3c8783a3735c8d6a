#pragma once
// The provider's event source and subscription manager: WS-Eventing 2004/08
// as DPWS 1.1 and IEEE 11073-20702 profile it (push delivery, the DPWS action
// filter), for the StateEventService and DescriptionEventService of
// IEEE 11073-20701. Notifications go out on a delivery thread of their own:
// each subscriber has a strand, a keep-alive connection to its NotifyTo and a
// bounded queue, so a slow or vanished subscriber is ended without delaying
// the others or the application that publishes.

#include "Asio.h"
#include "HttpServer.h"
#include "SoapMessage.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace blobstreaming::sdc {

struct EventSourceOptions {
    /// Bound on connecting to a NotifyTo/EndTo and on each notification's
    /// exchange; a subscriber that exceeds it is ended.
    std::chrono::milliseconds notify_timeout{5000};
    /// Notifications queued per subscriber; one more ends the subscription.
    std::size_t queue_limit = 256;
    /// Longest subscription granted (and the grant when Expires is absent).
    std::chrono::seconds max_expires{3600};
    /// TLS client context for https NotifyTo/EndTo; null: plain HTTP only.
    std::shared_ptr<ssl::context> client_tls;
};

class Subscriber;

class EventSource {
public:
    explicit EventSource(EventSourceOptions options);
    ~EventSource();
    EventSource(const EventSource&) = delete;
    EventSource& operator=(const EventSource&) = delete;

    /// The subscription manager's address prefix (http(s)://HOST:PORT/<device>/Subscriptions).
    void set_manager_url(std::string url) { manager_url_ = std::move(url); }

    /// The report actions a subscription to hosted service `service`
    /// ("StateEvent" or "DescriptionEvent") may ask for; empty for others.
    static const std::vector<std::string>& actions_of(const std::string& service);

    /// wse:Subscribe posted to hosted service `service`: a SubscribeResponse
    /// or the specified Fault.
    HttpReply subscribe(const SoapMessage& request, const std::string& service);
    /// wse:Renew, wse:GetStatus, wse:Unsubscribe posted to the subscription
    /// manager (`target` is the request path; the subscription is named by
    /// the bss:Identifier (or an older wse:Identifier) header, or else by the
    /// path's last segment). Renew and GetStatus of a subscription the
    /// provider ended say why it ended.
    HttpReply manage(const SoapMessage& request, std::string_view target);

    /// True when some subscriber's filter selects `action`.
    bool wanted(const std::string& action) const;
    /// Queues the report `body` (one element, its namespaces declared by
    /// the envelope's BICEPS prefixes msg: and pm: or by itself) for every
    /// subscriber whose filter selects `action`. Returns at once: delivery
    /// runs on the delivery thread. Calls must be ordered by the caller
    /// (the provider publishes under one lock, in MdibVersion order).
    void publish(const std::string& action, const std::string& body);

    /// Ends every subscription (SubscriptionEnd SourceShuttingDown to each
    /// EndTo, waiting at most the notify timeout) and stops the delivery
    /// thread. Idempotent.
    void stop();

    std::size_t subscriber_count() const;

private:
    friend class Subscriber;
    /// Forgets subscription `id`; a non-empty `reason` (the provider ended
    /// it) is kept for a later Renew or GetStatus to report.
    void remove(const std::string& id, const std::string& reason = {});
    void sweep();
    std::shared_ptr<Subscriber> find(const SoapMessage& request, std::string_view target);

    EventSourceOptions options_;
    std::string manager_url_;
    net::io_context io_;
    net::executor_work_guard<net::io_context::executor_type> work_;
    net::steady_timer sweep_timer_;
    mutable std::mutex mutex_;
    std::map<std::string, std::shared_ptr<Subscriber>> subscribers_;  ///< by identifier (urn:uuid)
    std::map<std::string, std::string> ended_;  ///< why the provider ended a subscription, by its hex id
    std::deque<std::string> ended_order_;       ///< keys of ended_, oldest first (bounded)
    std::mutex end_mutex_;
    std::condition_variable end_done_;
    int ends_pending_ = 0;  ///< SubscriptionEnd messages in flight (guarded by end_mutex_)
    std::atomic<bool> stopped_{false};
    std::thread thread_;
};

}  // namespace blobstreaming::sdc
