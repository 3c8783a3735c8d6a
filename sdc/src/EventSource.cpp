#include "EventSource.h"

#include "HttpClient.h"
#include "Namespaces.h"
#include "Url.h"
#include "Uuid.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iostream>
#include <set>
#include <sstream>

namespace blobstreaming::sdc {

namespace {

const std::string kEventNs = std::string(" xmlns:wse=\"") + ns::kWse + "\" xmlns:dpws=\"" + ns::kDpws + "\"";
const std::string kReportNs = std::string(" xmlns:msg=\"") + ns::kMsg + "\" xmlns:pm=\"" + ns::kPm + "\"";
/// Ended subscriptions whose reason a Renew or GetStatus can still learn.
constexpr std::size_t kEndedKept = 1024;

/// The wsa:ReferenceParameters of subscription `id`'s manager EPR.
std::string manager_reference(const std::string& id)
{
    return std::string("<wsa:ReferenceParameters><bss:Identifier xmlns:bss=\"") + ns::kSubscriptionRef + "\">" +
           xml::escape(id) + "</bss:Identifier></wsa:ReferenceParameters>";
}

/// The subscription a manager request names in its headers: bss:Identifier,
/// or wse:Identifier (the form this provider used to hand out); empty if none.
std::string identifier_header(const SoapMessage& request)
{
    for (xmlNode* h = xml::first_element(request.header); h != nullptr; h = xml::next_element(h))
        if (xml::is(h, ns::kSubscriptionRef, "Identifier") || xml::is(h, ns::kWse, "Identifier"))
            return xml::text(h);
    return {};
}

/// urn:uuid:8-4-4-4-12 -> its 32 hex digits (the manager URL's last segment).
std::string hex_of(const std::string& id)
{
    std::string hex;
    for (const char c : id.substr(id.rfind(':') + 1))
        if (c != '-') hex += c;
    return hex;
}

using Clock = std::chrono::steady_clock;

HttpReply event_fault(bool sender, const std::string& subcode, const std::string& reason, const std::string& relates_to)
{
    SoapFault fault;
    fault.sender = sender;
    fault.subcode = subcode;
    fault.reason = reason;
    HttpReply r;
    r.status = sender ? 400 : 500;
    r.body = make_fault(fault, relates_to, kEventNs);
    r.request_id = relates_to;
    return r;
}

/// An xs:duration (PnDTnHnMnS, fractions of seconds allowed; years and
/// months as 365 and 30 days) in seconds; negative when not a duration.
double parse_duration(const std::string& text)
{
    if (text.size() < 3 || text[0] != 'P') return -1;
    double total = 0;
    bool time = false;
    bool any = false;
    std::string number;
    for (std::size_t i = 1; i < text.size(); ++i) {
        const char c = text[i];
        if (c == 'T') {
            if (time || !number.empty()) return -1;
            time = true;
            continue;
        }
        if ((c >= '0' && c <= '9') || c == '.') {
            number += c;
            continue;
        }
        if (number.empty() || (number.find('.') != std::string::npos && c != 'S')) return -1;
        double v = 0;
        try {
            v = std::stod(number);
        } catch (const std::exception&) {
            return -1;
        }
        number.clear();
        any = true;
        if (!time && c == 'Y') total += v * 365 * 86400;
        else if (!time && c == 'M') total += v * 30 * 86400;
        else if (!time && c == 'D') total += v * 86400;
        else if (time && c == 'H') total += v * 3600;
        else if (time && c == 'M') total += v * 60;
        else if (time && c == 'S') total += v;
        else return -1;
    }
    return any && number.empty() ? total : -1;
}

std::string duration_text(Clock::duration left)
{
    const auto seconds =
        std::max<long long>(0, (std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 999) / 1000);
    return "PT" + std::to_string(seconds) + "S";
}

/// wsa:ReferenceParameters of an EPR as SOAP header blocks (each marked
/// wsa:IsReferenceParameter="true", with the namespaces it needs).
std::string reference_headers(xmlNode* epr)
{
    std::string out;
    xmlNode* params = xml::child(epr, ns::kWsa, "ReferenceParameters");
    for (xmlNode* p = xml::first_element(params); p != nullptr; p = xml::next_element(p)) {
        xmlNs* wsa = xmlSearchNsByHref(p->doc, p, reinterpret_cast<const xmlChar*>(ns::kWsa));
        if (wsa == nullptr) wsa = xmlNewNs(p, reinterpret_cast<const xmlChar*>(ns::kWsa), nullptr);
        xmlSetNsProp(p, wsa, reinterpret_cast<const xmlChar*>("IsReferenceParameter"),
                     reinterpret_cast<const xmlChar*>("true"));
        out += xml::serialize_scoped(p);
    }
    return out;
}

struct Report {
    std::string action;
    std::shared_ptr<const std::string> body;
};

}  // namespace

/// One subscription. Its delivery state (queue, connection) lives on its
/// strand; `expires` is guarded by the EventSource mutex.
class Subscriber : public std::enable_shared_from_this<Subscriber> {
public:
    Subscriber(EventSource& source, std::string id)
        : source_(source), id_(std::move(id)), strand_(source.io_.get_executor())
    {}

    void start()
    {
        notify_ = std::make_shared<ClientConnection>(strand_, notify_url_, source_.options_.client_tls,
                                                     source_.options_.notify_timeout);
    }

    /// On the strand: queue a report, or end the subscription when the queue is full.
    void enqueue(Report report)
    {
        if (ended_) return;
        if (queue_.size() >= source_.options_.queue_limit)
            return end(ns::kEndDeliveryFailure, "the subscriber did not keep up: " + std::to_string(queue_.size()) +
                                                    " notifications queued (the limit)");
        queue_.push_back(std::move(report));
        send_next();
    }

    /// On the strand: ends the subscription; SubscriptionEnd goes to EndTo
    /// (if the subscriber gave one) unless `status` is empty (expiry,
    /// Unsubscribe).
    void end(const char* status, const std::string& reason)
    {
        if (ended_) return;
        ended_ = true;
        queue_.clear();
        if (notify_) {
            // Its pending request's completion holds this subscriber: let go
            // of the connection, so that the two never keep each other (a
            // NotifyTo that never answers, then the io_context stopped).
            notify_->close();
            notify_.reset();
        }
        source_.remove(id_, status == nullptr ? std::string() : reason);
        if (status == nullptr) return;
        std::cerr << "sdc: subscription " << id_ << " (NotifyTo " << notify_address_ << ") ended: " << reason << "\n";
        if (end_to_address_.empty()) return;
        const std::string body = "<wse:SubscriptionEnd><wse:SubscriptionManager><wsa:Address>" +
                                 xml::escape(source_.manager_url_ + "/" + id_hex()) + "</wsa:Address>" +
                                 manager_reference(id_) + "</wse:SubscriptionManager><wse:Status>" + status +
                                 "</wse:Status><wse:Reason xml:lang=\"en\">" + xml::escape_text(reason) +
                                 "</wse:Reason></wse:SubscriptionEnd>";
        const std::string envelope =
            make_envelope(ns::kSubscriptionEnd, {}, {}, end_to_address_, body, kEventNs, end_to_headers_);
        {
            std::lock_guard<std::mutex> lock(source_.end_mutex_);
            ++source_.ends_pending_;
        }
        auto connection = std::make_shared<ClientConnection>(
            strand_, end_to_url_, source_.options_.client_tls,
            std::min(source_.options_.notify_timeout, std::chrono::milliseconds(2000)));
        EventSource* source = &source_;
        connection->post(end_to_url_.path, envelope, [connection, source](beast::error_code, unsigned, bool) {
            connection->close();
            std::lock_guard<std::mutex> lock(source->end_mutex_);
            --source->ends_pending_;
            source->end_done_.notify_all();
        });
    }

    bool selects(const std::string& action) const { return actions_.count(action) != 0; }
    std::string id_hex() const { return hex_of(id_); }

    EventSource& source_;
    const std::string id_;
    net::strand<net::io_context::executor_type> strand_;
    std::set<std::string> actions_;
    Url notify_url_;
    std::string notify_address_;
    std::string notify_headers_;
    Url end_to_url_;
    std::string end_to_address_;
    std::string end_to_headers_;
    Clock::time_point expires_;

private:
    void send_next()
    {
        if (busy_ || queue_.empty() || ended_) return;
        busy_ = true;
        const Report& r = queue_.front();
        std::string envelope = make_envelope(r.action, {}, {}, notify_address_, *r.body, kReportNs, notify_headers_);
        notify_->post(
            notify_url_.path, envelope,
            [self = shared_from_this(), envelope](beast::error_code ec, unsigned status, bool reused) mutable {
                self->busy_ = false;
                if (self->ended_) return;
                if (ec && reused && ec != beast::error::timeout) {
                    // The subscriber closed an idle keep-alive connection: once more on a fresh one.
                    self->busy_ = true;
                    return self->notify_->post(
                        self->notify_url_.path, std::move(envelope),
                        [self](beast::error_code e, unsigned s, bool) { self->delivered(e, s); });
                }
                self->delivered(ec, status);
            });
    }

    void delivered(beast::error_code ec, unsigned status)
    {
        busy_ = false;
        if (ended_) return;
        if (ec) {
            const std::string& why = notify_ ? notify_->verify_failure() : std::string();
            return end(ns::kEndDeliveryFailure,
                       "cannot deliver to " + notify_address_ + ": " +
                           (ec == beast::error::timeout
                                ? std::string("no answer within ") +
                                      std::to_string(source_.options_.notify_timeout.count()) + " ms"
                                : ec.message()) +
                           (why.empty() ? "" : " (" + why + ")"));
        }
        if (status >= 300)
            return end(ns::kEndDeliveryFailure,
                       "NotifyTo " + notify_address_ + " answered a notification with HTTP " + std::to_string(status));
        queue_.pop_front();
        send_next();
    }

    std::shared_ptr<ClientConnection> notify_;
    std::deque<Report> queue_;
    bool busy_ = false;
    bool ended_ = false;
};

const std::vector<std::string>& EventSource::actions_of(const std::string& service)
{
    static const std::vector<std::string> state = [] {
        std::vector<std::string> v;
        for (const char* name : {"EpisodicMetricReport", "EpisodicAlertReport", "EpisodicComponentReport",
                                 "EpisodicOperationalStateReport", "PeriodicMetricReport", "PeriodicAlertReport",
                                 "PeriodicComponentReport", "PeriodicOperationalStateReport", "SystemErrorReport"})
            v.push_back(std::string(ns::kStateEventService) + name);
        return v;
    }();
    static const std::vector<std::string> description{std::string(ns::kDescriptionEventService) +
                                                      "DescriptionModificationReport"};
    static const std::vector<std::string> none;
    if (service == "StateEvent") return state;
    if (service == "DescriptionEvent") return description;
    return none;
}

EventSource::EventSource(EventSourceOptions options)
    : options_(std::move(options)), work_(io_.get_executor()), sweep_timer_(io_)
{
    sweep();
    thread_ = std::thread([this] { io_.run(); });
}

EventSource::~EventSource() { stop(); }

void EventSource::sweep()
{
    sweep_timer_.expires_after(std::chrono::milliseconds(500));
    sweep_timer_.async_wait([this](beast::error_code ec) {
        if (ec) return;
        std::vector<std::shared_ptr<Subscriber>> expired;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            const auto now = Clock::now();
            for (const auto& [id, s] : subscribers_)
                if (s->expires_ <= now) expired.push_back(s);
        }
        for (const auto& s : expired) net::post(s->strand_, [s] { s->end(nullptr, "expired"); });
        sweep();
    });
}

void EventSource::stop()
{
    if (stopped_.exchange(true)) return;
    std::vector<std::shared_ptr<Subscriber>> all;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& [id, s] : subscribers_) all.push_back(s);
    }
    std::atomic<std::size_t> posted{0};
    for (const auto& s : all)
        net::post(s->strand_, [s, &posted, this] {
            s->end(ns::kEndShuttingDown, "the provider is shutting down");
            std::lock_guard<std::mutex> lock(end_mutex_);
            ++posted;
            end_done_.notify_all();
        });
    {
        std::unique_lock<std::mutex> lock(end_mutex_);
        end_done_.wait_for(
            lock, std::min(options_.notify_timeout, std::chrono::milliseconds(2000)) + std::chrono::milliseconds(500),
            [&] { return posted == all.size() && ends_pending_ == 0; });
    }
    sweep_timer_.cancel();
    work_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
}

void EventSource::remove(const std::string& id, const std::string& reason)
{
    std::lock_guard<std::mutex> lock(mutex_);
    subscribers_.erase(id);
    if (reason.empty()) return;
    if (ended_.emplace(hex_of(id), reason).second) ended_order_.push_back(hex_of(id));
    while (ended_order_.size() > kEndedKept) {
        ended_.erase(ended_order_.front());
        ended_order_.pop_front();
    }
}

std::size_t EventSource::subscriber_count() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return subscribers_.size();
}

bool EventSource::wanted(const std::string& action) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, s] : subscribers_)
        if (s->selects(action)) return true;
    return false;
}

void EventSource::publish(const std::string& action, const std::string& body)
{
    auto shared = std::make_shared<const std::string>(body);
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& entry : subscribers_) {
        const auto& s = entry.second;  // a name, not a structured binding: lambdas capture it (C++17)
        if (!s->selects(action)) continue;
        net::post(s->strand_, [s, report = Report{action, shared}]() mutable { s->enqueue(std::move(report)); });
    }
}

HttpReply EventSource::subscribe(const SoapMessage& request, const std::string& service)
{
    const std::string& mid = request.message_id;
    const auto invalid = [&](const std::string& why) {
        return event_fault(true, "wse:InvalidMessage", "invalid Subscribe: " + why, mid);
    };
    if (!request.body_is(ns::kWse, "Subscribe"))
        return invalid("the Body holds no wse:Subscribe (" + std::string(ns::kWse) + ")");
    if (stopped_) return event_fault(false, "wse:EventSourceUnableToProcess", "the provider is shutting down", mid);
    const auto& known = actions_of(service);
    auto sub = std::make_shared<Subscriber>(*this, make_urn_uuid());

    xmlNode* delivery = xml::child(request.body, ns::kWse, "Delivery");
    if (delivery == nullptr) return invalid("no wse:Delivery element");
    const std::string mode = xml::attribute(delivery, "Mode");
    if (!mode.empty() && mode != ns::kDeliveryPush)
        return event_fault(true, "wse:DeliveryModeRequestedUnavailable",
                           "delivery mode \"" + mode + "\" is not supported; only " + ns::kDeliveryPush, mid);
    xmlNode* notify_to = xml::child(delivery, ns::kWse, "NotifyTo");
    sub->notify_address_ = xml::text(xml::child(notify_to, ns::kWsa, "Address"));
    if (sub->notify_address_.empty()) return invalid("no wse:Delivery/wse:NotifyTo/wsa:Address");
    const auto check_url = [&](const std::string& address, const char* what, Url& out) -> std::string {
        try {
            out = parse_url(address);
        } catch (const SdcError& e) {
            return std::string(what) + ": " + e.what();
        }
        if (out.tls && !options_.client_tls)
            return std::string(what) + " " + address + " is https but this provider has no TLS identity (http:// only)";
        if (!out.tls && options_.client_tls)
            return std::string(what) + " " + address + " is plain http but this provider requires TLS (https:// only)";
        return {};
    };
    if (auto why = check_url(sub->notify_address_, "NotifyTo", sub->notify_url_); !why.empty()) return invalid(why);
    sub->notify_headers_ = reference_headers(notify_to);
    if (xmlNode* end_to = xml::child(request.body, ns::kWse, "EndTo")) {
        sub->end_to_address_ = xml::text(xml::child(end_to, ns::kWsa, "Address"));
        if (sub->end_to_address_.empty()) return invalid("wse:EndTo has no wsa:Address");
        if (auto why = check_url(sub->end_to_address_, "EndTo", sub->end_to_url_); !why.empty()) return invalid(why);
        sub->end_to_headers_ = reference_headers(end_to);
    }

    auto granted = std::chrono::duration<double>(options_.max_expires);
    if (xmlNode* expires = xml::child(request.body, ns::kWse, "Expires")) {
        const std::string text = xml::text(expires);
        const double seconds = parse_duration(text);
        if (seconds < 0 && !text.empty() && text[0] != 'P' && text[0] != '-')
            return event_fault(true, "wse:UnsupportedExpirationType",
                               "wse:Expires \"" + text + "\": only an xs:duration (PT60S) is supported, not a date",
                               mid);
        if (seconds <= 0)
            return event_fault(true, "wse:InvalidExpirationTime",
                               "wse:Expires \"" + text + "\" is not a positive xs:duration (for example PT60S)", mid);
        granted = std::min(granted, std::chrono::duration<double>(seconds));
    }

    xmlNode* filter = xml::child(request.body, ns::kWse, "Filter");
    if (filter == nullptr) {
        sub->actions_.insert(known.begin(), known.end());
    } else {
        const std::string dialect = xml::attribute(filter, "Dialect");
        if (dialect != ns::kActionDialect)
            return event_fault(true, "wse:FilteringRequestedUnavailable",
                               "filter dialect \"" + dialect + "\" is not supported; only " + ns::kActionDialect, mid);
        std::istringstream words(xml::text(filter));
        std::string wanted_action;
        while (words >> wanted_action) {
            bool matched = false;
            for (const auto& a : known) {
                // DPWS: equal, or a prefix that ends at a path segment.
                if (a == wanted_action || (a.compare(0, wanted_action.size(), wanted_action) == 0 &&
                                           (wanted_action.back() == '/' || a[wanted_action.size()] == '/'))) {
                    sub->actions_.insert(a);
                    matched = true;
                }
            }
            if (!matched)
                return event_fault(true, "dpws:FilterActionNotSupported",
                                   "filter action \"" + wanted_action + "\" is not an event of the " + service +
                                       "Service here" +
                                       (known.empty() ? ""
                                                      : " (it has " + std::to_string(known.size()) +
                                                            " report actions, e.g. " + known.front() + ")"),
                                   mid);
        }
        if (sub->actions_.empty()) sub->actions_.insert(known.begin(), known.end());
    }
    if (sub->actions_.empty())
        return event_fault(true, "wse:EventSourceUnableToProcess", "the " + service + " service has no events", mid);

    sub->expires_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(granted);
    sub->start();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        subscribers_.emplace(sub->id_, sub);
    }
    HttpReply reply;
    reply.body =
        make_envelope(ns::kSubscribeResponse, {}, mid, {},
                      "<wse:SubscribeResponse><wse:SubscriptionManager><wsa:Address>" +
                          xml::escape(manager_url_ + "/" + sub->id_hex()) + "</wsa:Address>" +
                          manager_reference(sub->id_) + "</wse:SubscriptionManager><wse:Expires>" +
                          duration_text(std::chrono::duration_cast<Clock::duration>(granted)) +
                          "</wse:Expires></wse:SubscribeResponse>",
                      kEventNs);
    return reply;
}

std::shared_ptr<Subscriber> EventSource::find(const SoapMessage& request, std::string_view target)
{
    const std::string id = identifier_header(request);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!id.empty()) {
        const auto found = subscribers_.find(id);
        return found == subscribers_.end() ? nullptr : found->second;
    }
    const std::string_view last = target.substr(target.rfind('/') + 1);
    for (const auto& [key, s] : subscribers_)
        if (s->id_hex() == last) return s;
    return nullptr;
}

HttpReply EventSource::manage(const SoapMessage& request, std::string_view target)
{
    const std::string& mid = request.message_id;
    const std::string op = request.action.substr(request.action.rfind('/') + 1);
    const std::string id = identifier_header(request);
    const std::string named = id.empty() ? "at " + std::string(target) : "\"" + id + "\"";
    if (!request.body_is(ns::kWse, op.c_str()))
        return event_fault(true, "wse:InvalidMessage", "invalid " + op + ": the Body holds no wse:" + op, mid);
    std::shared_ptr<Subscriber> sub = find(request, target);
    Clock::time_point expires{};
    if (sub) {
        std::lock_guard<std::mutex> lock(mutex_);
        expires = sub->expires_;
    }
    if (!sub || expires <= Clock::now()) {
        std::string why = "no subscription " + named + " (unknown, expired or ended)";
        {
            // One the provider ended (e.g. it could not deliver): say why.
            std::lock_guard<std::mutex> lock(mutex_);
            const auto ended =
                ended_.find(id.empty() ? std::string(target.substr(target.rfind('/') + 1)) : hex_of(id));
            if (ended != ended_.end())
                why = "the subscription " + named + " was ended by the provider: " + ended->second;
        }
        if (op == "Renew") return event_fault(false, "wse:UnableToRenew", "cannot renew: " + why, mid);
        return event_fault(true, "wsa:DestinationUnreachable", op + ": " + why, mid);
    }
    HttpReply reply;
    if (op == "Unsubscribe") {
        net::post(sub->strand_, [sub] { sub->end(nullptr, "unsubscribed"); });
        {
            std::lock_guard<std::mutex> lock(mutex_);
            subscribers_.erase(sub->id_);
        }
        reply.body = make_envelope(ns::kUnsubscribeResponse, {}, mid, {}, {}, kEventNs);
        return reply;
    }
    if (op == "Renew") {
        auto granted = std::chrono::duration<double>(options_.max_expires);
        if (xmlNode* e = xml::child(request.body, ns::kWse, "Expires")) {
            const std::string text = xml::text(e);
            const double seconds = parse_duration(text);
            if (seconds <= 0)
                return event_fault(true, "wse:InvalidExpirationTime",
                                   "wse:Expires \"" + text + "\" is not a positive xs:duration (for example PT60S)",
                                   mid);
            granted = std::min(granted, std::chrono::duration<double>(seconds));
        }
        const auto left = std::chrono::duration_cast<Clock::duration>(granted);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            sub->expires_ = Clock::now() + left;
        }
        reply.body = make_envelope(
            ns::kRenewResponse, {}, mid, {},
            "<wse:RenewResponse><wse:Expires>" + duration_text(left) + "</wse:Expires></wse:RenewResponse>", kEventNs);
        return reply;
    }
    reply.body = make_envelope(ns::kGetStatusResponse, {}, mid, {},
                               "<wse:GetStatusResponse><wse:Expires>" + duration_text(expires - Clock::now()) +
                                   "</wse:Expires></wse:GetStatusResponse>",
                               kEventNs);
    return reply;
}

}  // namespace blobstreaming::sdc
