#include "blobstreaming/sdc/Provider.h"

#include "Asio.h"
#include "Discovery.h"
#include "EventSource.h"
#include "HttpServer.h"
#include "Namespaces.h"
#include "ServiceHandler.h"
#include "Tls.h"
#include "Uuid.h"
#include "Xml.h"
#include "blobstreaming/sdc/SdcError.h"

#include <atomic>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

namespace blobstreaming::sdc {

namespace {

EventSourceOptions event_options(const ProviderOptions& o)
{
    EventSourceOptions e;
    e.notify_timeout = o.notify_timeout;
    e.queue_limit = o.notify_queue_limit;
    e.max_expires = o.max_subscription;
    e.client_tls = make_tls_context(o.tls, false);
    return e;
}

HttpServerOptions server_options(const ProviderOptions& o)
{
    HttpServerOptions s;
    s.max_body_bytes = o.max_body_bytes;
    s.handshake_timeout = o.handshake_timeout;
    s.header_timeout = o.header_timeout;
    s.idle_timeout = o.idle_timeout;
    s.max_connections_per_peer = o.max_connections_per_peer;
    s.max_connections = o.max_connections;
    s.tls = make_tls_context(o.tls, true);
    return s;
}

}  // namespace

class Provider::Impl {
public:
    Impl(Mdib mdib, ProviderOptions options)
        : mdib_(std::move(mdib)), options_(std::move(options)),
          events_(options_.events ? std::make_unique<EventSource>(event_options(options_)) : nullptr),
          handler_(mdib_, options_, options_.epr.empty() ? make_urn_uuid() : options_.epr, events_.get()),
          server_(io_, options_.address, handler_, server_options(options_))
    {
        const auto bound = server_.endpoint();
        address_ = server_.address();
        handler_.set_base_url((server_.tls() ? "https://" : "http://") + address_);
        if (events_) events_->set_manager_url(device_url() + "/Subscriptions");
        if (options_.discovery) {
            try {
                discovery_.emplace(io_, bound.address().to_string(), handler_.epr(), device_url());
                discovery_->start();
                discovery_->send_hello();
            } catch (const std::exception& e) {
                discovery_.reset();
                std::cerr << "sdc: WS-Discovery disabled: cannot join 239.255.255.250:3702 on "
                          << bound.address().to_string() << ": " << e.what() << "\n";
            }
        }
        server_.start();
        thread_ = std::thread([this] { io_.run(); });
    }

    ~Impl() { stop(); }

    void stop()
    {
        if (stopped_.exchange(true)) return;
        if (events_) events_->stop();  // SubscriptionEnd SourceShuttingDown first, bounded
        io_.stop();
        if (thread_.joinable()) thread_.join();
        if (discovery_) {
            discovery_->send_bye();
            discovery_->close();
        }
    }

    void publish(const std::vector<MetricUpdate>& updates)
    {
        // One lock from the MDIB change to the queueing: reports leave in MdibVersion order.
        std::lock_guard<std::mutex> lock(publish_mutex_);
        std::uint64_t version = 0;
        const std::string parts = mdib_.set_metrics(updates, version);
        if (!events_ || !events_->wanted(ns::kEpisodicMetricReport)) return;
        events_->publish(ns::kEpisodicMetricReport, "<msg:EpisodicMetricReport MdibVersion=\"" +
                                                        std::to_string(version) + "\" SequenceId=\"" +
                                                        xml::escape(mdib_.sequence_id()) + "\"><msg:ReportPart>" +
                                                        parts + "</msg:ReportPart></msg:EpisodicMetricReport>");
    }

    /// A description change made by `change(version)` (which returns the
    /// report parts) and its DescriptionModificationReport, in MdibVersion
    /// order with the metric reports.
    template <class Change>
    void publish_description(Change&& change)
    {
        std::lock_guard<std::mutex> lock(publish_mutex_);
        std::uint64_t version = 0;
        const std::string parts = change(version);
        if (!events_ || !events_->wanted(ns::kDescriptionModificationReport)) return;
        events_->publish(ns::kDescriptionModificationReport, "<msg:DescriptionModificationReport MdibVersion=\"" +
                                                                 std::to_string(version) + "\" SequenceId=\"" +
                                                                 xml::escape(mdib_.sequence_id()) + "\">" + parts +
                                                                 "</msg:DescriptionModificationReport>");
    }

    std::string device_url() const { return handler_.base_url() + handler_.device_path(); }

    Mdib mdib_;
    ProviderOptions options_;
    std::unique_ptr<EventSource> events_;
    ServiceHandler handler_;
    net::io_context io_;
    HttpServer server_;
    std::optional<Discovery> discovery_;
    std::thread thread_;
    std::string address_;
    std::mutex publish_mutex_;
    std::atomic<bool> stopped_{false};
};

Provider::Provider(Mdib mdib, ProviderOptions options)
    : impl_(std::make_unique<Impl>(std::move(mdib), std::move(options)))
{}

Provider::~Provider() = default;

std::string Provider::address() const { return impl_->address_; }
std::string Provider::epr() const { return impl_->handler_.epr(); }
std::string Provider::device_url() const { return impl_->device_url(); }
void Provider::set_metric(const std::string& handle, double value)
{
    impl_->publish({MetricUpdate::numeric(handle, value)});
}
void Provider::set_metric(const std::string& handle, const std::string& value)
{
    impl_->publish({MetricUpdate::string(handle, value)});
}
void Provider::set_metrics(const std::vector<MetricUpdate>& updates) { impl_->publish(updates); }
void Provider::add_metric(const std::string& parent, const MetricDescriptorSpec& spec)
{
    impl_->publish_description([&](std::uint64_t& v) { return impl_->mdib_.add_metric(parent, spec, v); });
}
void Provider::update_metric(const std::string& handle, const MetricDescriptorChange& change)
{
    impl_->publish_description([&](std::uint64_t& v) { return impl_->mdib_.update_metric(handle, change, v); });
}
void Provider::remove_metric(const std::string& handle)
{
    impl_->publish_description([&](std::uint64_t& v) { return impl_->mdib_.remove_metric(handle, v); });
}
std::size_t Provider::subscriber_count() const { return impl_->events_ ? impl_->events_->subscriber_count() : 0; }
const Mdib& Provider::mdib() const { return impl_->mdib_; }
void Provider::stop() { impl_->stop(); }

}  // namespace blobstreaming::sdc
