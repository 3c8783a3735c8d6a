#include "ServiceHandler.h"

#include "EventSource.h"
#include "Namespaces.h"
#include "SoapMessage.h"
#include "Uuid.h"
#include "blobstreaming/sdc/SdcError.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>

#include <nlohmann/json.hpp>

namespace blobstreaming::sdc {

namespace {

const std::string kBicepsNs = std::string(" xmlns:msg=\"") + ns::kMsg + "\" xmlns:pm=\"" + ns::kPm + "\"";
const std::string kDpwsNs = std::string(" xmlns:wsx=\"") + ns::kWsx + "\" xmlns:dpws=\"" + ns::kDpws +
                            "\" xmlns:mdpws=\"" + ns::kMdpws + "\" xmlns:sdc=\"" + ns::kSdc + "\"";

std::string url_decode(std::string_view s)
{
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
            out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
            i += 2;
        } else {
            out += s[i] == '+' ? ' ' : s[i];
        }
    }
    return out;
}

/// JSON text and a newline; bytes of a peer's MessageID that are not UTF-8
/// become U+FFFD instead of making the reply unwritable.
std::string json_text(const nlohmann::json& j)
{
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

HttpReply fault_reply(const SoapFault& fault, const std::string& relates_to)
{
    HttpReply r;
    r.status = fault.sender ? 400 : 500;
    r.body = make_fault(fault, relates_to);
    r.request_id = relates_to;
    return r;
}

}  // namespace

ServiceHandler::ServiceHandler(Mdib& mdib, const ProviderOptions& options, std::string epr, EventSource* events)
    : mdib_(mdib), events_(events), options_(options), epr_(std::move(epr))
{
    std::string hex;
    for (const char c : epr_.substr(epr_.rfind(':') + 1))
        if (c != '-') hex += c;
    device_path_ = "/" + hex;
    if (!options_.schema_dir.empty()) schema_ = std::make_unique<xml::BicepsSchema>(options_.schema_dir);
}

namespace {

/// `<dpws:NAME>VALUE</dpws:NAME>` for each field, VALUE escaped.
std::string dpws_fields(std::initializer_list<std::pair<const char*, const std::string*>> fields)
{
    std::string out;
    for (const auto& [name, value] : fields)
        out += std::string("<dpws:") + name + ">" + xml::escape(*value) + "</dpws:" + name + ">";
    return out;
}

/// One `<wsx:MetadataSection>` of `dialect` holding `body`.
std::string metadata_section(const char* dialect, const std::string& body)
{
    return "<wsx:MetadataSection Dialect=\"" + std::string(dialect) + "\">" + body + "</wsx:MetadataSection>";
}

}  // namespace

std::string ServiceHandler::metadata_body(bool full) const
{
    std::string b = "<wsx:Metadata>";
    if (full) {
        b += metadata_section(ns::kDialectThisModel, "<dpws:ThisModel>" +
                                                         dpws_fields({{"Manufacturer", &options_.manufacturer},
                                                                      {"ModelName", &options_.model_name}}) +
                                                         "</dpws:ThisModel>");
        b += metadata_section(ns::kDialectThisDevice, "<dpws:ThisDevice>" +
                                                          dpws_fields({{"FriendlyName", &options_.friendly_name},
                                                                       {"SerialNumber", &options_.serial_number}}) +
                                                          "</dpws:ThisDevice>");
    }
    const std::string host = "<dpws:Host><wsa:EndpointReference><wsa:Address>" + xml::escape(epr_) +
                             "</wsa:Address></wsa:EndpointReference>"
                             "<dpws:Types>dpws:Device mdpws:MedicalDevice</dpws:Types></dpws:Host>";
    const auto hosted_service = [this](const char* id, const char* type) {
        return "<dpws:Hosted><wsa:EndpointReference><wsa:Address>" + xml::escape(base_url_ + device_path_) + "/" + id +
               "</wsa:Address></wsa:EndpointReference><dpws:Types>" + type + "</dpws:Types><dpws:ServiceId>" + id +
               "</dpws:ServiceId></dpws:Hosted>";
    };
    std::string hosted = hosted_service("Get", "sdc:GetService");
    if (events_ != nullptr) {
        hosted += hosted_service("StateEvent", "sdc:StateEventService");
        hosted += hosted_service("DescriptionEvent", "sdc:DescriptionEventService");
    }
    b += metadata_section(ns::kDialectRelationship, "<dpws:Relationship Type=\"" + std::string(ns::kRelationshipHost) +
                                                        "\">" + host + hosted + "</dpws:Relationship>");
    return b + "</wsx:Metadata>";
}

HttpReply ServiceHandler::post(std::string_view target, std::string_view body, long long t2)
{
    SoapMessage request;
    SoapFault fault;
    if (!parse_soap(body, options_.validate, request, fault)) return fault_reply(fault, request.message_id);
    if (schema_ && request.body && request.body->ns && request.body->ns->href &&
        std::string_view(reinterpret_cast<const char*>(request.body->ns->href)) == ns::kMsg) {
        const std::string violation = schema_->validate(request.body);
        if (!violation.empty()) {
            fault.sender = true;
            fault.reason = "the request body is not valid against the BICEPS schema: " + violation;
            return fault_reply(fault, request.message_id);
        }
    }
    long long t3 = 0;
    HttpReply reply;
    try {
        reply = dispatch(request, target, t3);
    } catch (const SdcError& e) {
        fault.sender = e.code() == Errc::unknown_handle || e.code() == Errc::invalid_argument;
        fault.reason = e.what();
        reply = fault_reply(fault, request.message_id);
    } catch (const std::exception& e) {
        fault.sender = false;
        fault.reason = std::string("internal error: ") + e.what();
        reply = fault_reply(fault, request.message_id);
    }
    reply.request_id = request.message_id;
    if (!request.message_id.empty()) record(request.message_id, Stamps{t2, t3 != 0 ? t3 : monotonic_ns(), 0});
    return reply;
}

HttpReply ServiceHandler::dispatch(const SoapMessage& request, std::string_view target, long long& t3)
{
    const std::string& action = request.action;
    HttpReply reply;
    const auto require_body = [&](const char* ns_uri, const char* local) {
        if (options_.validate && !request.body_is(ns_uri, local)) {
            const std::string found = request.body != nullptr
                                          ? std::string(reinterpret_cast<const char*>(request.body->name))
                                          : std::string("an empty Body");
            throw SdcError(Errc::invalid_argument, "action " + action + " needs a " + local + " element (" + ns_uri +
                                                       ") in the Body, found " + found);
        }
    };
    if (action == ns::kTransferGet) {
        reply.body = make_envelope(ns::kTransferGetResponse, {}, request.message_id, {}, metadata_body(true), kDpwsNs);
        return reply;
    }
    if (action == ns::kGetMetadata) {
        reply.body = make_envelope(ns::kGetMetadataResponse, {}, request.message_id, {}, metadata_body(false), kDpwsNs);
        return reply;
    }
    if (events_ != nullptr) {
        const std::string_view path = target.substr(0, target.find('?'));
        if (action == ns::kSubscribe) {
            for (const char* service : {"StateEvent", "DescriptionEvent"})
                if (path == device_path_ + "/" + service) return events_->subscribe(request, service);
            SoapFault fault;
            fault.subcode = "wsa:ActionNotSupported";
            fault.reason = "Subscribe posted to " + std::string(path) + ": subscriptions are served at " +
                           device_path_ + "/StateEvent and " + device_path_ + "/DescriptionEvent";
            return fault_reply(fault, request.message_id);
        }
        if (action == ns::kRenew || action == ns::kGetStatus || action == ns::kUnsubscribe)
            return events_->manage(request, path);
    }
    const std::string prefix = ns::kGetService;
    if (action.compare(0, prefix.size(), prefix) == 0) {
        const std::string op = action.substr(prefix.size());
        std::uint64_t version = 0;
        const std::string seq = " SequenceId=\"" + xml::escape(mdib_.sequence_id()) + "\"";
        if (op == "GetMdState") {
            require_body(ns::kMsg, "GetMdState");
            const std::string states = mdib_.states_xml(request.handle_refs(), version);
            t3 = monotonic_ns();
            const std::string v = " MdibVersion=\"" + std::to_string(version) + "\"" + seq;
            reply.body = make_envelope(prefix + "GetMdStateResponse", {}, request.message_id, {},
                                       "<msg:GetMdStateResponse" + v + "><msg:MdState>" + states +
                                           "</msg:MdState></msg:GetMdStateResponse>",
                                       kBicepsNs);
            return reply;
        }
        if (op == "GetMdDescription") {
            require_body(ns::kMsg, "GetMdDescription");
            std::string description;
            const std::string mds = mdib_.mds_xml(request.handle_refs(), version, &description);
            t3 = monotonic_ns();
            const std::string v = " MdibVersion=\"" + std::to_string(version) + "\"" + seq;
            reply.body = make_envelope(prefix + "GetMdDescriptionResponse", {}, request.message_id, {},
                                       "<msg:GetMdDescriptionResponse" + v + "><msg:MdDescription" + description + ">" +
                                           mds + "</msg:MdDescription></msg:GetMdDescriptionResponse>",
                                       kBicepsNs);
            return reply;
        }
        if (op == "GetMdib") {
            require_body(ns::kMsg, "GetMdib");
            std::string mds, states, description;
            mdib_.mdib_xml(mds, states, description, version);  // one MdibVersion: the description may change
            t3 = monotonic_ns();
            const std::string v = " MdibVersion=\"" + std::to_string(version) + "\"" + seq;
            reply.body = make_envelope(prefix + "GetMdibResponse", {}, request.message_id, {},
                                       "<msg:GetMdibResponse" + v + "><msg:Mdib" + v + "><pm:MdDescription" +
                                           description + ">" + mds + "</pm:MdDescription><pm:MdState>" + states +
                                           "</pm:MdState></msg:Mdib></msg:GetMdibResponse>",
                                       kBicepsNs);
            return reply;
        }
    }
    SoapFault fault;
    fault.subcode = "wsa:ActionNotSupported";
    fault.reason = "unknown action " + action +
                   ": this provider serves WS-Transfer Get, WS-MetadataExchange "
                   "GetMetadata, GetService GetMdib, GetMdState, GetMdDescription" +
                   std::string(events_ != nullptr ? " and WS-Eventing Subscribe, Renew, GetStatus, Unsubscribe" : "");
    return fault_reply(fault, request.message_id);
}

HttpReply ServiceHandler::get(std::string_view target)
{
    HttpReply reply;
    reply.content_type = "application/json";
    const std::string_view path = target.substr(0, target.find('?'));
    if (path != "/timestamps") {
        reply.status = 404;
        reply.content_type = "text/plain";
        reply.body = "no such resource: " + std::string(path) +
                     " (GET serves /timestamps?id=MessageID and /timestamps?last=N only)\n";
        return reply;
    }
    const std::string_view query = target.substr(std::min(path.size() + 1, target.size()));
    if (query.rfind("last=", 0) == 0) {
        std::size_t n = 0;
        for (std::size_t i = 5; i < query.size() && std::isdigit(static_cast<unsigned char>(query[i])); ++i)
            n = std::min<std::size_t>(n * 10 + static_cast<std::size_t>(query[i] - '0'), 1000000);
        std::lock_guard<std::mutex> lock(stamps_mutex_);
        n = std::min(n, stamp_order_.size());
        nlohmann::json recent = nlohmann::json::array();
        for (std::size_t i = stamp_order_.size() - n; i < stamp_order_.size(); ++i) {
            const auto found = stamps_.find(stamp_order_[i]);
            if (found != stamps_.end()) recent.push_back(stamps_json(found->first, found->second));
        }
        reply.body = json_text({{"timestamps", std::move(recent)}});
        return reply;
    }
    std::string id;
    const auto q = target.find("id=");
    if (q != std::string_view::npos) id = url_decode(target.substr(q + 3, target.find('&', q) - (q + 3)));
    std::lock_guard<std::mutex> lock(stamps_mutex_);
    const auto found = stamps_.find(id);
    if (found == stamps_.end()) {
        reply.status = 404;
        reply.body = json_text({{"error", "no timestamps for MessageID \"" + id + "\""}});
        return reply;
    }
    reply.body = json_text(stamps_json(id, found->second));
    return reply;
}

nlohmann::json ServiceHandler::stamps_json(const std::string& id, const Stamps& s)
{
    return {{"id", id}, {"t2", s.t2}, {"t3", s.t3}, {"t4", s.t4}};
}

HttpReply ServiceHandler::reject(unsigned status, const std::string& reason)
{
    SoapFault fault;
    fault.reason = reason;
    HttpReply reply = fault_reply(fault, {});
    reply.status = status;
    reply.close = true;
    return reply;
}

void ServiceHandler::record(const std::string& id, const Stamps& stamps)
{
    std::lock_guard<std::mutex> lock(stamps_mutex_);
    if (stamps_.insert_or_assign(id, stamps).second) stamp_order_.push_back(id);
    while (stamp_order_.size() > options_.timestamp_history) {
        stamps_.erase(stamp_order_.front());
        stamp_order_.pop_front();
    }
}

void ServiceHandler::record_sent(const std::string& request_id, long long t4)
{
    if (request_id.empty()) return;
    std::lock_guard<std::mutex> lock(stamps_mutex_);
    if (const auto found = stamps_.find(request_id); found != stamps_.end()) found->second.t4 = t4;
}

}  // namespace blobstreaming::sdc
