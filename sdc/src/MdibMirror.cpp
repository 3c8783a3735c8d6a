#include "blobstreaming/sdc/MdibMirror.h"

#include "Asio.h"
#include "ConsumerAccess.h"
#include "HttpServer.h"
#include "Namespaces.h"
#include "Tls.h"
#include "Uuid.h"
#include "blobstreaming/sdc/SdcError.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace blobstreaming::sdc {

namespace {

const std::string kWseNs = std::string(" xmlns:wse=\"") + ns::kWse + "\"";
const std::string kMsgNs = std::string(" xmlns:msg=\"") + ns::kMsg + "\"";
const char* kContextReport =
    "http://standards.ieee.org/downloads/11073/11073-20701-2018/ContextService/EpisodicContextReport";

std::uint64_t number(const std::string& text) { return text.empty() ? 0 : std::strtoull(text.c_str(), nullptr, 10); }

/// Seconds of an xs:duration of the form PT…S / PT…M / PT…H (as providers answer); 0 if not understood.
double seconds_of(const std::string& d)
{
    if (d.rfind("PT", 0) != 0) return 0;
    double total = 0;
    std::string n;
    for (std::size_t i = 2; i < d.size(); ++i) {
        const char c = d[i];
        if ((c >= '0' && c <= '9') || c == '.') {
            n += c;
            continue;
        }
        const double v = n.empty() ? 0 : std::atof(n.c_str());
        n.clear();
        total += c == 'H' ? v * 3600 : c == 'M' ? v * 60 : c == 'S' ? v : 0;
    }
    return total;
}

/// A grant of `seconds` (0: not understood, taken as an hour) as a duration.
std::chrono::steady_clock::duration granted_time(double seconds)
{
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(seconds > 0 ? seconds : 3600.0));
}

bool is_descriptor(const xmlNode* node)
{
    static const std::set<std::string> names{"Mds",
                                             "Vmd",
                                             "Channel",
                                             "Metric",
                                             "AlertSystem",
                                             "AlertCondition",
                                             "AlertSignal",
                                             "Sco",
                                             "Operation",
                                             "SystemContext",
                                             "PatientContext",
                                             "LocationContext",
                                             "EnsembleContext",
                                             "WorkflowContext",
                                             "OperatorContext",
                                             "MeansContext",
                                             "Clock",
                                             "Battery"};
    return node != nullptr && node->ns != nullptr &&
           std::string(reinterpret_cast<const char*>(node->ns->href)) == ns::kPm &&
           names.count(reinterpret_cast<const char*>(node->name)) != 0;
}

Descriptor parse_descriptor(const xmlNode* node, const std::string& parent)
{
    Descriptor d;
    d.parent_handle = parent;
    for (xmlAttr* a = node->properties; a != nullptr; a = a->next) {
        const std::string name = reinterpret_cast<const char*>(a->name);
        xmlChar* value = xmlNodeListGetString(node->doc, a->children, 1);
        const std::string v = value != nullptr ? reinterpret_cast<const char*>(value) : "";
        xmlFree(value);
        if (name == "type" && a->ns != nullptr && std::string(reinterpret_cast<const char*>(a->ns->href)) == ns::kXsi) {
            d.type = xml::qname_local(v);
            continue;
        }
        if (name == "Handle") d.handle = v;
        else if (name == "DescriptorVersion") d.descriptor_version = v;
        d.attributes.emplace_back(name, v);
    }
    if (d.type.empty()) d.type = std::string(reinterpret_cast<const char*>(node->name)) + "Descriptor";
    if (const xmlNode* unit = xml::child(node, ns::kPm, "Unit")) d.unit_code = xml::attribute(unit, "Code");
    return d;
}

/// Every descriptor under `node` (an MdDescription), parents first.
void collect_descriptors(const xmlNode* node, const std::string& parent, std::vector<Descriptor>& out, int depth = 0)
{
    if (depth > 64) return;
    for (xmlNode* c = xml::first_element(node); c != nullptr; c = xml::next_element(c)) {
        if (!is_descriptor(c)) continue;
        out.push_back(parse_descriptor(c, parent));
        const std::string handle = out.back().handle;  // `out` grows below
        collect_descriptors(c, handle, out, depth + 1);
    }
}

/// One report part of a DescriptionModificationReport as received.
struct DescriptionPart {
    std::string modification;  ///< Crt, Upt, Del
    std::vector<Descriptor> descriptors;
    std::vector<State> states;
};

/// A report ahead of the mirror, held until the reports before it arrive.
struct Held {
    Report report;
    std::vector<DescriptionPart> parts;
};

struct Subscription {
    std::string service;
    std::string manager;  ///< SubscriptionManager address
    std::string headers;  ///< its reference parameters as header blocks
    /// When the provider's latest grant runs out (Subscribe, then each Renew).
    std::chrono::steady_clock::time_point expires;
    bool ended = false;  ///< the provider refused to renew it, or it ran out
};

}  // namespace

class MdibMirror::Impl : public RequestHandler {
public:
    Impl(const std::string& device_url, Callback on_report, MirrorOptions options)
        : options_(std::move(options)), on_report_(std::move(on_report)),
          consumer_(Consumer::connect(device_url, options_.consumer))
    {
        const ServiceUrls& services = ConsumerAccess::services(consumer_);
        if (services.state_event.empty())
            throw SdcError(Errc::protocol_error,
                           "subscribing to " + device_url + ": the provider's metadata lists no StateEventService");
        description_hosted_ = !services.description_event.empty();
        resync(true);
        HttpServerOptions server;
        server.tls = make_tls_context(options_.consumer.tls, true);
        if (device_url.rfind("https://", 0) != 0) server.tls.reset();
        // A provider that refuses this consumer's certificate as a server's
        // (clientAuth only, no SAN of this address) cannot deliver and ends
        // the subscription; its SubscriptionEnd cannot arrive either. A
        // failed handshake on the sink makes the mirror ask at once.
        server.on_handshake_failure = [this](const std::string& reason) { check_soon(reason); };
        sink_.emplace(io_, ConsumerAccess::local_ip(consumer_) + ":0", *this, server);
        const std::string base =
            (server.tls ? "https://" : "http://") + sink_->address() + "/" + make_urn_uuid().substr(9);
        notify_path_ = base.substr(base.find('/', 8)) + "/notify";
        end_path_ = base.substr(base.find('/', 8)) + "/end";
        sink_->start();
        thread_ = std::thread([this] { io_.run(); });
        try {
            const std::string s = ns::kStateEventService;
            subscribe("StateEvent", services.state_event,
                      s + "EpisodicMetricReport " + s + "EpisodicAlertReport " + s + "EpisodicComponentReport " + s +
                          "EpisodicOperationalStateReport",
                      base);
            if (!services.description_event.empty())
                subscribe("DescriptionEvent", services.description_event,
                          std::string(ns::kDescriptionEventService) + "DescriptionModificationReport", base);
            if (!services.context.empty()) subscribe("Context", services.context, kContextReport, base);
        } catch (...) {
            shutdown();
            throw;
        }
        schedule_renew();
    }

    ~Impl() override { shutdown(); }

    void shutdown()
    {
        if (stopped_.exchange(true)) return;
        {
            std::lock_guard<std::mutex> lock(call_mutex_);
            for (const auto& s : subscriptions_) {
                try {
                    ConsumerAccess::call(consumer_, s.manager, ns::kUnsubscribe, "<wse:Unsubscribe/>", kWseNs,
                                         "Unsubscribe", s.headers);
                } catch (const std::exception&) {
                    // Ending anyway: the provider lets the subscription expire.
                }
            }
        }
        renew_timer_.cancel();
        check_timer_.cancel();
        io_.stop();
        if (thread_.joinable()) thread_.join();
    }

    // RequestHandler: notifications and SubscriptionEnd.
    HttpReply post(std::string_view target, std::string_view body, long long t2) override
    {
        HttpReply reply;
        reply.status = 202;
        SoapMessage message;
        SoapFault fault;
        if (!parse_soap(body, false, message, fault)) return reject(400, fault.reason);
        Report report;
        report.received_ns = t2;
        report.action = message.action.substr(message.action.rfind('/') + 1);
        if (message.action == ns::kSubscriptionEnd) {
            ended_ = true;
            report.reason = xml::text(xml::child(message.body, ns::kWse, "Status")) + ": " +
                            xml::text(xml::child(message.body, ns::kWse, "Reason"));
            if (on_report_) on_report_(report);
            return reply;
        }
        if (target.substr(0, notify_path_.size()) != notify_path_) return reject(404, "not a notification path");
        report.mdib_version = number(xml::attribute(message.body, "MdibVersion"));
        report.sequence_id = xml::attribute(message.body, "SequenceId");
        const bool description = xml::is(message.body, ns::kMsg, "DescriptionModificationReport");
        std::vector<DescriptionPart> parts;
        for (xmlNode* part = xml::first_element(message.body); part != nullptr; part = xml::next_element(part)) {
            if (!xml::is(part, ns::kMsg, "ReportPart")) continue;
            if (description) {
                DescriptionPart p;
                p.modification = xml::attribute(part, "ModificationType");
                if (p.modification.empty()) p.modification = "Upt";  // the schema's default
                if (p.modification != "Crt" && p.modification != "Upt" && p.modification != "Del")
                    return reject(400, "DescriptionModificationReport: unknown ModificationType \"" + p.modification +
                                           "\" (Crt, Upt, Del)");
                const std::string parent = xml::attribute(part, "ParentDescriptor");
                for (xmlNode* c = xml::first_element(part); c != nullptr; c = xml::next_element(c)) {
                    if (xml::is(c, ns::kMsg, "Descriptor")) p.descriptors.push_back(parse_descriptor(c, parent));
                    else if (xml::is(c, ns::kMsg, "State") && p.modification != "Del")
                        p.states.push_back(parse_state(c));
                }
                auto& list = p.modification == "Crt"   ? report.created
                             : p.modification == "Upt" ? report.updated
                                                       : report.deleted;
                list.insert(list.end(), p.descriptors.begin(), p.descriptors.end());
                report.states.insert(report.states.end(), p.states.begin(), p.states.end());
                parts.push_back(std::move(p));
                continue;
            }
            for (xmlNode* s = xml::first_element(part); s != nullptr; s = xml::next_element(s))
                if (s->name != nullptr &&
                    std::string_view(reinterpret_cast<const char*>(s->name)).find("State") != std::string_view::npos)
                    report.states.push_back(parse_state(s));
        }
        std::unique_lock<std::mutex> lock(mutex_);
        if (report.sequence_id == sequence_id_ && report.mdib_version > version_ + 1) {
            // Ahead of the mirror: the reports in between may still be on their way on another
            // subscription's connection. Held for the reorder window; then the MDIB is read again.
            const bool first = pending_.empty();
            pending_.emplace(report.mdib_version, Held{std::move(report), std::move(parts)});
            if (first) arm_reorder_timer();
            return reply;
        }
        if (report.sequence_id == sequence_id_) {
            // Older than the mirror: dropped. The same MdibVersion is applied: a provider may send
            // one change as several reports (sdc11073: a DescriptionModificationReport and the
            // episodic reports of the states it touched), which arrive in any order.
            if (report.mdib_version < version_) return reply;
            apply(report, parts);
            lock.unlock();
            if (on_report_) on_report_(report);
            drain(false);
            return reply;
        }
        lock.unlock();
        // A new SequenceId: another MDIB; read it again at once.
        if (!resync_after_gap(t2, report.sequence_id)) return reply;
        lock.lock();
        if (report.sequence_id != sequence_id_ || report.mdib_version != version_ + 1) return reply;
        apply(report, parts);
        lock.unlock();
        if (on_report_) on_report_(report);
        return reply;
    }

    /// Reads the MDIB again after a gap and reports `Resync`; false (logged) when that failed.
    bool resync_after_gap(long long t2, const std::string& sequence_id)
    {
        try {
            Report again;
            again.action = "Resync";
            again.received_ns = t2;
            again.description_resynced = description_hosted_;
            again.states = resync(description_hosted_);
            again.mdib_version = mdib_version();
            again.sequence_id = sequence_id;
            ++resyncs_;
            if (on_report_) on_report_(again);
            return true;
        } catch (const std::exception& e) {
            std::cerr << "sdc: resync after a gap in MdibVersion failed: " << e.what() << "\n";
            return false;
        }
    }

    /// Applies the held reports that now follow the mirror, in MdibVersion
    /// order; drops those it already has (after a resync: also those of
    /// its own MdibVersion, which the MDIB read included).
    void drain(bool after_resync)
    {
        for (;;) {
            Held held;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (pending_.empty()) {
                    reorder_timer_.cancel();
                    return;
                }
                auto it = pending_.begin();
                if (it->second.report.sequence_id != sequence_id_ || it->first < version_ ||
                    (after_resync && it->first == version_)) {
                    pending_.erase(it);
                    continue;
                }
                if (it->first > version_ + 1) return;
                held = std::move(it->second);
                pending_.erase(it);
                apply(held.report, held.parts);
            }
            if (on_report_) on_report_(held.report);
        }
    }

    /// On the mirror's thread: when the reorder window ends with a gap
    /// still open, the MDIB is read again.
    void arm_reorder_timer()
    {
        reorder_timer_.expires_after(options_.reorder_window);
        reorder_timer_.async_wait([this](beast::error_code ec) {
            if (ec || stopped_) return;
            std::string sequence_id;
            long long received = 0;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (pending_.empty()) return;
                sequence_id = pending_.begin()->second.report.sequence_id;
                received = pending_.begin()->second.report.received_ns;
            }
            const bool done = resync_after_gap(received, sequence_id);
            if (done) drain(true);
            std::lock_guard<std::mutex> lock(mutex_);
            if (!pending_.empty()) arm_reorder_timer();
        });
    }

    HttpReply get(std::string_view) override { return reject(405, "GET is not served by a notification sink"); }

    HttpReply reject(unsigned status, const std::string& reason) override
    {
        HttpReply r;
        r.status = status;
        r.content_type = "text/plain";
        r.body = reason + "\n";
        return r;
    }

    void record_sent(const std::string&, long long) override {}

    /// Reads all states, and with `description` the whole MDIB (GetMdib);
    /// returns the states.
    std::vector<State> resync(bool description)
    {
        std::lock_guard<std::mutex> call_lock(call_mutex_);
        const char* op = description ? "GetMdib" : "GetMdState";
        SoapMessage reply =
            ConsumerAccess::call(consumer_, ConsumerAccess::services(consumer_).get, std::string(ns::kGetService) + op,
                                 std::string("<msg:") + op + "/>", kMsgNs, op);
        const xmlNode* mdib = description ? xml::child(reply.body, ns::kMsg, "Mdib") : nullptr;
        if (description && mdib == nullptr)
            throw SdcError(Errc::protocol_error, "GetMdib: the response holds no msg:Mdib");
        const xmlNode* md_state =
            description ? xml::child(mdib, ns::kPm, "MdState") : xml::child(reply.body, ns::kMsg, "MdState");
        std::vector<State> all;
        for (xmlNode* s = xml::first_element(md_state); s != nullptr; s = xml::next_element(s))
            all.push_back(parse_state(s));
        std::vector<Descriptor> described;
        if (description) collect_descriptors(xml::child(mdib, ns::kPm, "MdDescription"), "", described);
        std::lock_guard<std::mutex> lock(mutex_);
        states_.clear();
        order_.clear();
        for (const State& s : all) put(s);
        if (description) {
            descriptors_.clear();
            descriptor_order_.clear();
            for (const Descriptor& d : described) put(d);
        }
        version_ = number(xml::attribute(reply.body, "MdibVersion"));
        sequence_id_ = xml::attribute(reply.body, "SequenceId");
        return all;
    }

    void put(const Descriptor& d)
    {
        if (descriptors_.emplace(d.handle, d).second) descriptor_order_.push_back(d.handle);
        else descriptors_[d.handle] = d;
    }

    /// Removes descriptor `handle`, the descriptors nested in it and all their states.
    void erase(const std::string& handle)
    {
        std::set<std::string> gone{handle};
        for (bool more = true; more;) {
            more = false;
            for (const auto& [h, d] : descriptors_)
                if (gone.count(d.parent_handle) != 0 && gone.insert(h).second) more = true;
        }
        for (const auto& h : gone) descriptors_.erase(h);
        descriptor_order_.erase(std::remove_if(descriptor_order_.begin(), descriptor_order_.end(),
                                               [&](const std::string& h) { return gone.count(h) != 0; }),
                                descriptor_order_.end());
        for (auto it = states_.begin(); it != states_.end();) {
            if (gone.count(it->second.descriptor_handle) != 0) it = states_.erase(it);
            else ++it;
        }
        order_.erase(std::remove_if(order_.begin(), order_.end(),
                                    [&](const std::string& key) { return states_.count(key) == 0; }),
                     order_.end());
    }

    void put(const State& s)
    {
        const std::string key = s.handle.empty() ? s.descriptor_handle : s.handle;
        if (states_.emplace(key, s).second) order_.push_back(key);
        else states_[key] = s;
    }

    void apply(const Report& r, const std::vector<DescriptionPart>& parts)
    {
        if (parts.empty()) {
            for (const State& s : r.states) put(s);
        }
        for (const DescriptionPart& p : parts) {
            if (p.modification == "Del") {
                for (const Descriptor& d : p.descriptors) erase(d.handle);
                continue;
            }
            for (const Descriptor& d : p.descriptors) put(d);
            for (const State& s : p.states) put(s);
        }
        version_ = r.mdib_version;
    }

    void subscribe(const std::string& service, const std::string& url, const std::string& actions,
                   const std::string& base)
    {
        const std::string body = "<wse:Subscribe><wse:EndTo><wsa:Address>" + xml::escape(base) +
                                 "/end</wsa:Address></wse:EndTo><wse:Delivery Mode=\"" + ns::kDeliveryPush +
                                 "\"><wse:NotifyTo><wsa:Address>" + xml::escape(base) +
                                 "/notify</wsa:Address></wse:NotifyTo></wse:Delivery><wse:Expires>PT" +
                                 std::to_string(options_.expires.count()) + "S</wse:Expires><wse:Filter Dialect=\"" +
                                 ns::kActionDialect + "\">" + actions + "</wse:Filter></wse:Subscribe>";
        std::lock_guard<std::mutex> lock(call_mutex_);
        SoapMessage reply = ConsumerAccess::call(consumer_, url, ns::kSubscribe, body, kWseNs, "Subscribe");
        if (!reply.body_is(ns::kWse, "SubscribeResponse"))
            throw SdcError(Errc::protocol_error, "Subscribe " + url + ": the Body holds no wse:SubscribeResponse");
        xmlNode* manager = xml::child(reply.body, ns::kWse, "SubscriptionManager");
        Subscription s;
        s.service = service;
        s.manager = xml::text(xml::child(manager, ns::kWsa, "Address"));
        for (xmlNode* p = xml::first_element(xml::child(manager, ns::kWsa, "ReferenceParameters")); p != nullptr;
             p = xml::next_element(p)) {
            xmlNs* wsa = xmlSearchNsByHref(p->doc, p, reinterpret_cast<const xmlChar*>(ns::kWsa));
            if (wsa != nullptr)
                xmlSetNsProp(p, wsa, reinterpret_cast<const xmlChar*>("IsReferenceParameter"),
                             reinterpret_cast<const xmlChar*>("true"));
            s.headers += xml::serialize_scoped(p);
        }
        const double granted = seconds_of(xml::text(xml::child(reply.body, ns::kWse, "Expires")));
        if (granted > 0)
            renew_every_ = std::min(renew_every_, std::chrono::milliseconds(static_cast<long long>(granted * 500)));
        s.expires = std::chrono::steady_clock::now() + granted_time(granted);
        subscriptions_.push_back(std::move(s));
    }

    void schedule_renew()
    {
        renew_timer_.expires_after(std::max(renew_every_, std::chrono::milliseconds(500)));
        renew_timer_.async_wait([this](beast::error_code ec) {
            if (ec || stopped_) return;
            manage_subscriptions(true, {});
            schedule_renew();
        });
    }

    /// On the mirror's thread, after a failed TLS handshake on the sink:
    /// GetStatus of every subscription a moment later (the provider ends a
    /// subscription right after its delivery failed), at most one check
    /// pending at a time.
    void check_soon(const std::string& reason)
    {
        if (stopped_ || check_pending_) return;
        check_pending_ = true;
        check_timer_.expires_after(std::chrono::milliseconds(300));
        check_timer_.async_wait([this, reason](beast::error_code ec) {
            check_pending_ = false;
            if (ec || stopped_) return;
            manage_subscriptions(false, reason);
        });
    }

    /// Renews (`renew`) or asks the status of every subscription; one the
    /// provider no longer has is reported as a SubscriptionEnd with the
    /// provider's reason. `hint`: why the check was made (a TLS handshake
    /// on the sink that failed), added to the reason.
    void manage_subscriptions(bool renew, const std::string& hint)
    {
        std::vector<std::string> ends;
        {
            std::lock_guard<std::mutex> lock(call_mutex_);
            for (auto& s : subscriptions_) {
                if (s.ended) continue;
                try {
                    if (!renew) {
                        ConsumerAccess::call(consumer_, s.manager, ns::kGetStatus, "<wse:GetStatus/>", kWseNs,
                                             "GetStatus", s.headers);
                        continue;
                    }
                    SoapMessage reply = ConsumerAccess::call(consumer_, s.manager, ns::kRenew,
                                                             "<wse:Renew><wse:Expires>PT" +
                                                                 std::to_string(options_.expires.count()) +
                                                                 "S</wse:Expires></wse:Renew>",
                                                             kWseNs, "Renew", s.headers);
                    const double granted = seconds_of(xml::text(xml::child(reply.body, ns::kWse, "Expires")));
                    s.expires = std::chrono::steady_clock::now() + granted_time(granted);
                } catch (const SdcError& e) {
                    // A Fault: the provider no longer has the subscription (it may have
                    // ended it, e.g. when it could not deliver, without reaching EndTo).
                    // Anything else counts only once the grant has run out.
                    const bool refused = e.code() == Errc::peer_fault;
                    if (refused || std::chrono::steady_clock::now() >= s.expires) {
                        s.ended = true;
                        const std::string how =
                            !renew    ? "asked for its status after a failed TLS handshake on this consumer's "
                                        "notification server (" + hint + ")"
                            : refused ? "renewing it was refused"
                                      : "renewing it failed until it expired";
                        ends.push_back("the " + s.service + " subscription is lost: " + how + ": " + e.what());
                    } else {
                        std::cerr << "sdc: " << (renew ? "renewing" : "asking the status of") << " the " << s.service
                                  << " subscription failed (trying again): " << e.what() << "\n";
                    }
                } catch (const std::exception& e) {
                    std::cerr << "sdc: " << (renew ? "renewing" : "asking the status of") << " the " << s.service
                              << " subscription failed: " << e.what() << "\n";
                }
            }
        }
        for (const auto& reason : ends) {
            if (!on_report_) std::cerr << "sdc: " << reason << "\n";
            ended_ = true;
            Report report;
            report.action = "SubscriptionEnd";
            report.reason = reason;
            if (on_report_) on_report_(report);
        }
    }

    std::uint64_t mdib_version() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return version_;
    }

    MirrorOptions options_;
    Callback on_report_;
    Consumer consumer_;  ///< guarded by call_mutex_
    std::mutex call_mutex_;
    mutable std::mutex mutex_;  ///< guards the mirror below
    std::map<std::string, State> states_;
    std::vector<std::string> order_;
    std::multimap<std::uint64_t, Held> pending_;  ///< reports ahead of the mirror, by MdibVersion
    std::map<std::string, Descriptor> descriptors_;
    std::vector<std::string> descriptor_order_;
    bool description_hosted_ = false;  ///< the provider hosts a DescriptionEventService
    std::uint64_t version_ = 0;
    std::string sequence_id_;
    std::atomic<std::size_t> resyncs_{0};
    std::atomic<bool> ended_{false};
    std::atomic<bool> stopped_{false};
    net::io_context io_;
    std::optional<HttpServer> sink_;
    std::string notify_path_;
    std::string end_path_;
    std::vector<Subscription> subscriptions_;
    std::chrono::milliseconds renew_every_{std::chrono::hours(1)};
    net::steady_timer renew_timer_{io_};
    net::steady_timer check_timer_{io_};
    bool check_pending_ = false;  ///< a check_soon() is waiting (mirror's thread only)
    net::steady_timer reorder_timer_{io_};
    std::thread thread_;
};

MdibMirror::MdibMirror(const std::string& device_url, Callback on_report, MirrorOptions options)
    : impl_(std::make_unique<Impl>(device_url, std::move(on_report), std::move(options)))
{}

MdibMirror::~MdibMirror() = default;

std::vector<State> MdibMirror::states(const std::vector<std::string>& handles) const
{
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    std::vector<State> out;
    if (handles.empty()) {
        for (const auto& key : impl_->order_) out.push_back(impl_->states_.at(key));
        return out;
    }
    for (const auto& h : handles) {
        const auto found = impl_->states_.find(h);
        if (found == impl_->states_.end())
            throw SdcError(Errc::unknown_handle, "unknown handle \"" + h + "\": the mirrored MDIB has no state of it");
        out.push_back(found->second);
    }
    return out;
}

std::vector<Descriptor> MdibMirror::descriptors(const std::vector<std::string>& handles) const
{
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    std::vector<Descriptor> out;
    if (handles.empty()) {
        for (const auto& key : impl_->descriptor_order_) out.push_back(impl_->descriptors_.at(key));
        return out;
    }
    for (const auto& h : handles) {
        const auto found = impl_->descriptors_.find(h);
        if (found == impl_->descriptors_.end())
            throw SdcError(Errc::unknown_handle,
                           "unknown handle \"" + h + "\": the mirrored MDIB has no descriptor of it");
        out.push_back(found->second);
    }
    return out;
}

std::uint64_t MdibMirror::mdib_version() const { return impl_->mdib_version(); }
std::size_t MdibMirror::resyncs() const { return impl_->resyncs_; }
bool MdibMirror::ended() const { return impl_->ended_; }
std::string MdibMirror::epr() const { return impl_->consumer_.epr(); }

}  // namespace blobstreaming::sdc
