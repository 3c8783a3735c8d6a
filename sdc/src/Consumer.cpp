#include "blobstreaming/sdc/Consumer.h"

#include "Asio.h"
#include "ConsumerAccess.h"
#include "Namespaces.h"
#include "SoapMessage.h"
#include "Tls.h"
#include "Url.h"
#include "Uuid.h"
#include "blobstreaming/sdc/SdcError.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>

namespace blobstreaming::sdc {

namespace {

/// A UDP socket closed on scope exit.
class UdpFd {
public:
    UdpFd() : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}
    ~UdpFd()
    {
        if (fd_ >= 0) ::close(fd_);
    }
    UdpFd(const UdpFd&) = delete;
    UdpFd& operator=(const UdpFd&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

}  // namespace

class Consumer::Impl {
public:
    Impl(ConsumerOptions options) : options_(std::move(options)), tls_context_(make_tls_context(options_.tls, false)) {}

    beast::tcp_stream& lowest() { return tls_ ? beast::get_lowest_layer(*tls_) : *plain_; }

    /// One SOAP exchange on the keep-alive connection to `url`; returns the
    /// parsed response (never a Fault: those throw).
    SoapMessage call(const std::string& url, const std::string& action, const std::string& body,
                     const std::string& extra_ns, const char* what, const std::string& extra_headers = {})
    {
        times_ = CallTimes{};
        times_.t0 = monotonic_ns();
        const Url u = parse_url(url);
        times_.message_id = make_urn_uuid();
        http::request<http::string_body> request{http::verb::post, u.path, 11};
        request.set(http::field::host, u.host + ":" + u.port);
        request.set(http::field::content_type, "application/soap+xml; charset=utf-8");
        request.keep_alive(true);
        request.body() = make_envelope(action, times_.message_id, {}, url, body, extra_ns, extra_headers);
        request.prepare_payload();

        http::response<http::string_body> response;
        for (int attempt = 0;; ++attempt) {
            const bool reused = connected_to_ == key_of(u);
            try {
                ensure_connected(u);
                exchange(request, response);
                break;
            } catch (const SdcError& e) {
                disconnect();
                // A kept-alive connection that the provider closed: retry once, fresh.
                if (!reused || attempt > 0 || e.code() == Errc::timeout)
                    throw SdcError(e.code(), std::string(what) + " " + url + ": " + e.what());
            }
        }
        if (!response.keep_alive()) disconnect();

        SoapMessage message;
        SoapFault fault;
        if (!parse_soap(response.body(), false, message, fault))
            throw SdcError(Errc::protocol_error, std::string(what) + " " + url + ": HTTP " +
                                                     std::to_string(response.result_int()) + ", " + fault.reason);
        if (message.body_is(ns::kSoap, "Fault"))
            throw SdcError(Errc::peer_fault, std::string(what) + " " + url +
                                                 ": the provider answered with a Fault: " + fault_reason(message.body));
        if (response.result_int() >= 300)
            throw SdcError(Errc::protocol_error,
                           std::string(what) + " " + url + ": HTTP " + std::to_string(response.result_int()));
        if (!message.relates_to.empty() && message.relates_to != times_.message_id)
            throw SdcError(Errc::protocol_error, std::string(what) + " " + url + ": RelatesTo " + message.relates_to +
                                                     " does not match the request " + times_.message_id);
        return message;
    }

    static std::string key_of(const Url& u) { return (u.tls ? "https://" : "http://") + u.netloc(); }

    void ensure_connected(const Url& u)
    {
        const std::string key = key_of(u);
        if (connected_to_ == key) return;
        disconnect();
        if (u.tls && !tls_context_)
            throw SdcError(Errc::invalid_argument, key + " is https: TLS needs a certificate, key and CA "
                                                         "(--tls-cert, --tls-key, --tls-ca)");
        if (!u.tls && tls_context_)
            throw SdcError(Errc::invalid_argument, key + " is plain http, but a TLS identity was given: "
                                                         "SDC over TLS uses https:// addresses");
        tls_.reset();
        plain_.reset();
        std::shared_ptr<std::string> name_mismatch;
        if (u.tls) {
            tls_ = std::make_unique<tls_stream>(io_, *tls_context_);
            name_mismatch = expect_server_name(*tls_, u.host);
        } else plain_ = std::make_unique<beast::tcp_stream>(io_);
        tcp::resolver resolver(io_);
        boost::system::error_code ec;
        const auto endpoints = resolver.resolve(u.host, u.port, ec);
        if (ec) throw SdcError(Errc::unreachable, "cannot resolve " + key + ": " + ec.message());
        lowest().expires_after(options_.timeout);
        lowest().async_connect(endpoints, [&ec](beast::error_code e, const tcp::endpoint&) { ec = e; });
        run();
        if (ec)
            throw SdcError(ec == beast::error::timeout ? Errc::timeout : Errc::unreachable,
                           "cannot connect to " + key + ": " + ec.message());
        lowest().socket().set_option(tcp::no_delay(true), ec);
        if (tls_) {
            tls_->async_handshake(ssl::stream_base::client, [&ec](beast::error_code e) { ec = e; });
            run();
            if (ec)
                throw SdcError(ec == beast::error::timeout ? Errc::timeout : Errc::unreachable,
                               "TLS handshake with " + key +
                                   " failed: " + (name_mismatch->empty() ? ec.message() : *name_mismatch));
        }
        local_ip_ = lowest().socket().local_endpoint().address().to_string();
        connected_to_ = key;
    }

    void exchange(http::request<http::string_body>& request, http::response<http::string_body>& response)
    {
        beast::error_code ec;
        lowest().expires_after(options_.timeout);
        times_.t1 = monotonic_ns();
        if (tls_) http::async_write(*tls_, request, [&ec](beast::error_code e, std::size_t) { ec = e; });
        else http::async_write(*plain_, request, [&ec](beast::error_code e, std::size_t) { ec = e; });
        run();
        if (ec)
            throw SdcError(ec == beast::error::timeout ? Errc::timeout : Errc::unreachable,
                           "sending the request: " + ec.message());
        http::response_parser<http::string_body> parser;
        parser.body_limit(256 * 1024 * 1024);
        const auto done = [&ec](beast::error_code e, std::size_t) { ec = e; };
        if (tls_) http::async_read_header(*tls_, buffer_, parser, done);
        else http::async_read_header(*plain_, buffer_, parser, done);
        run();
        times_.t5 = monotonic_ns();
        if (!ec) {
            if (tls_) http::async_read(*tls_, buffer_, parser, done);
            else http::async_read(*plain_, buffer_, parser, done);
            run();
        }
        if (ec)
            throw SdcError(ec == beast::error::timeout ? Errc::timeout : Errc::unreachable,
                           "receiving the response: " + ec.message());
        response = parser.release();
    }

    void run()
    {
        io_.restart();
        io_.run();
    }

    void disconnect()
    {
        if (connected_to_.empty()) return;
        beast::error_code ec;
        lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
        lowest().socket().close(ec);
        buffer_.clear();
        connected_to_.clear();
    }

    void read_metadata(const std::string& device_url)
    {
        device_url_ = device_url;
        SoapMessage reply = call(device_url, ns::kTransferGet, {}, {}, "WS-Transfer Get");
        if (!xml::is(reply.body, ns::kWsx, "Metadata"))
            throw SdcError(Errc::protocol_error, "WS-Transfer Get " + device_url + ": the Body holds no wsx:Metadata");
        for (xmlNode* section = xml::first_element(reply.body); section != nullptr;
             section = xml::next_element(section)) {
            if (xml::attribute(section, "Dialect") != ns::kDialectRelationship) continue;
            xmlNode* relationship = xml::child(section, ns::kDpws, "Relationship");
            epr_ = xml::text(
                xml::child(xml::child(xml::child(relationship, ns::kDpws, "Host"), ns::kWsa, "EndpointReference"),
                           ns::kWsa, "Address"));
            for (xmlNode* h = xml::first_element(relationship); h != nullptr; h = xml::next_element(h)) {
                if (!xml::is(h, ns::kDpws, "Hosted")) continue;
                xmlNode* types = xml::child(h, ns::kDpws, "Types");
                std::istringstream words(xml::text(types));
                std::string qname;
                const std::string address =
                    xml::text(xml::child(xml::child(h, ns::kWsa, "EndpointReference"), ns::kWsa, "Address"));
                while (words >> qname) {
                    if (xml::qname_namespace(types, qname) != ns::kSdc) continue;
                    const std::string local = xml::qname_local(qname);
                    if (local == "GetService") get_url_ = address;
                    else if (local == "StateEventService") services_.state_event = address;
                    else if (local == "DescriptionEventService") services_.description_event = address;
                    else if (local == "ContextService") services_.context = address;
                }
            }
            if (!get_url_.empty()) {
                services_.get = get_url_;
                return;
            }
        }
        throw SdcError(Errc::protocol_error,
                       "WS-Transfer Get " + device_url + ": the metadata hosts no sdc:GetService");
    }

    std::string handle_refs(const std::vector<std::string>& handles) const
    {
        std::string refs;
        for (const auto& h : handles) refs += "<msg:HandleRef>" + xml::escape(h) + "</msg:HandleRef>";
        return refs;
    }

    std::uint64_t read_version(const xmlNode* response)
    {
        const std::string v = xml::attribute(response, "MdibVersion");
        version_ = v.empty() ? 0 : std::strtoull(v.c_str(), nullptr, 10);
        return version_;
    }

    ConsumerOptions options_;
    std::shared_ptr<ssl::context> tls_context_;
    net::io_context io_;
    std::unique_ptr<beast::tcp_stream> plain_;
    std::unique_ptr<tls_stream> tls_;
    beast::flat_buffer buffer_;
    ServiceUrls services_;
    std::string local_ip_;
    std::string device_url_;
    std::string connected_to_;
    std::string epr_;
    std::string get_url_;
    CallTimes times_;
    std::uint64_t version_ = 0;
};

namespace {
const std::string kMsgNs = std::string(" xmlns:msg=\"") + ns::kMsg + "\"";
}

State parse_state(const xmlNode* s)
{
    State state;
    for (xmlAttr* a = s->properties; a != nullptr; a = a->next) {
        const std::string name = reinterpret_cast<const char*>(a->name);
        xmlChar* value = xmlNodeListGetString(s->doc, a->children, 1);
        const std::string v = value != nullptr ? reinterpret_cast<const char*>(value) : "";
        xmlFree(value);
        if (name == "type" && a->ns != nullptr && std::string(reinterpret_cast<const char*>(a->ns->href)) == ns::kXsi) {
            state.type = xml::qname_local(v);
            continue;
        }
        if (name == "DescriptorHandle") state.descriptor_handle = v;
        else if (name == "Handle") state.handle = v;
        else if (name == "StateVersion") state.state_version = v;
        state.attributes.emplace_back(name, v);
    }
    if (const xmlNode* mv = xml::child(s, ns::kPm, "MetricValue")) state.value = xml::attribute(mv, "Value");
    return state;
}

SoapMessage ConsumerAccess::call(Consumer& c, const std::string& url, const std::string& action,
                                 const std::string& body, const std::string& extra_ns, const char* what,
                                 const std::string& extra_headers)
{
    return c.impl_->call(url, action, body, extra_ns, what, extra_headers);
}
const ServiceUrls& ConsumerAccess::services(const Consumer& c) { return c.impl_->services_; }
std::string ConsumerAccess::local_ip(const Consumer& c) { return c.impl_->local_ip_; }
const ConsumerOptions& ConsumerAccess::options(const Consumer& c) { return c.impl_->options_; }

Consumer::Consumer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Consumer::Consumer(Consumer&&) noexcept = default;
Consumer& Consumer::operator=(Consumer&&) noexcept = default;
Consumer::~Consumer() = default;

Consumer Consumer::connect(const std::string& device_url, ConsumerOptions options)
{
    auto impl = std::make_unique<Impl>(options);
    impl->read_metadata(device_url);
    return Consumer(std::move(impl));
}

std::vector<State> Consumer::get_md_state(const std::vector<std::string>& handles)
{
    Impl& i = *impl_;
    SoapMessage reply = i.call(i.get_url_, std::string(ns::kGetService) + "GetMdState",
                               "<msg:GetMdState>" + i.handle_refs(handles) + "</msg:GetMdState>", kMsgNs, "GetMdState");
    if (!reply.body_is(ns::kMsg, "GetMdStateResponse"))
        throw SdcError(Errc::protocol_error, "GetMdState " + i.get_url_ + ": the Body holds no msg:GetMdStateResponse");
    i.read_version(reply.body);
    std::vector<State> states;
    for (xmlNode* s = xml::first_element(xml::child(reply.body, ns::kMsg, "MdState")); s != nullptr;
         s = xml::next_element(s))
        states.push_back(parse_state(s));
    i.times_.t6 = monotonic_ns();
    return states;
}

std::string Consumer::get_md_description(const std::vector<std::string>& handles)
{
    Impl& i = *impl_;
    SoapMessage reply = i.call(i.get_url_, std::string(ns::kGetService) + "GetMdDescription",
                               "<msg:GetMdDescription>" + i.handle_refs(handles) + "</msg:GetMdDescription>", kMsgNs,
                               "GetMdDescription");
    if (!reply.body_is(ns::kMsg, "GetMdDescriptionResponse"))
        throw SdcError(Errc::protocol_error,
                       "GetMdDescription " + i.get_url_ + ": the Body holds no msg:GetMdDescriptionResponse");
    i.read_version(reply.body);
    std::string text = xml::serialize_scoped(reply.body);
    i.times_.t6 = monotonic_ns();
    return text;
}

std::string Consumer::get_mdib()
{
    Impl& i = *impl_;
    SoapMessage reply =
        i.call(i.get_url_, std::string(ns::kGetService) + "GetMdib", "<msg:GetMdib/>", kMsgNs, "GetMdib");
    if (!reply.body_is(ns::kMsg, "GetMdibResponse"))
        throw SdcError(Errc::protocol_error, "GetMdib " + i.get_url_ + ": the Body holds no msg:GetMdibResponse");
    i.read_version(reply.body);
    std::string text = xml::serialize_scoped(reply.body);
    i.times_.t6 = monotonic_ns();
    return text;
}

ProviderTimes Consumer::provider_times(const std::string& message_id)
{
    Impl& i = *impl_;
    const Url u = parse_url(i.get_url_);
    std::string escaped;
    for (const unsigned char c : message_id) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == ':') {
            escaped += static_cast<char>(c);
        } else {
            char hex[4];
            std::snprintf(hex, sizeof hex, "%%%02X", c);
            escaped += hex;
        }
    }
    http::request<http::string_body> request{http::verb::get, "/timestamps?id=" + escaped, 11};
    request.set(http::field::host, u.host + ":" + u.port);
    request.keep_alive(true);
    http::response<http::string_body> response;
    const CallTimes saved = i.times_;
    try {
        i.ensure_connected(u);
        i.exchange(request, response);
    } catch (const SdcError& e) {
        i.disconnect();
        i.times_ = saved;
        throw SdcError(e.code(), "GET /timestamps from " + u.host + ":" + u.port + ": " + e.what());
    }
    i.times_ = saved;
    if (response.result_int() != 200)
        throw SdcError(Errc::protocol_error, "GET /timestamps from " + u.host + ":" + u.port + ": HTTP " +
                                                 std::to_string(response.result_int()) + " " + response.body());
    const std::string& body = response.body();
    const auto field = [&body](const char* name) {
        const auto at = body.find(std::string("\"") + name + "\":");
        return at == std::string::npos ? 0LL : std::atoll(body.c_str() + at + 5);
    };
    return ProviderTimes{field("t2"), field("t3"), field("t4")};
}

std::uint64_t Consumer::mdib_version() const { return impl_->version_; }
const CallTimes& Consumer::last_call() const { return impl_->times_; }
std::string Consumer::epr() const { return impl_->epr_; }
std::string Consumer::get_service_url() const { return impl_->get_url_; }
std::string Consumer::device_url() const { return impl_->device_url_; }

namespace {

/// Probes and collects ProbeMatches for `wait`; with `first`, returns as soon
/// as a match (with EPR `epr`, if given) has arrived.
std::vector<DiscoveredProvider> probe_for(const std::string& interface_ip, std::chrono::milliseconds wait,
                                          const std::string& epr, bool first)
{
    UdpFd fd;
    if (fd.get() < 0) throw SdcError(Errc::unreachable, "WS-Discovery: cannot open a UDP socket");
    in_addr iface{};
    if (inet_pton(AF_INET, interface_ip.c_str(), &iface) != 1)
        throw SdcError(Errc::invalid_argument, "WS-Discovery: \"" + interface_ip + "\" is not an IPv4 address");
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_addr = iface;
    const unsigned char ttl = 1;
    const unsigned char loop = 1;
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
        setsockopt(fd.get(), IPPROTO_IP, IP_MULTICAST_IF, &iface, sizeof iface) != 0 ||
        setsockopt(fd.get(), IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl) != 0 ||
        setsockopt(fd.get(), IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) != 0)
        throw SdcError(Errc::unreachable, "WS-Discovery: cannot prepare a multicast socket on " + interface_ip);
    const std::string id = make_urn_uuid();
    const std::string message =
        make_envelope(ns::kProbe, id, {}, ns::kDiscoveryTo,
                      "<wsd:Probe><wsd:Types>dpws:Device mdpws:MedicalDevice</wsd:Types></wsd:Probe>",
                      std::string(" xmlns:wsd=\"") + ns::kWsd + "\" xmlns:dpws=\"" + ns::kDpws + "\" xmlns:mdpws=\"" +
                          ns::kMdpws + "\"");
    sockaddr_in group{};
    group.sin_family = AF_INET;
    group.sin_port = htons(3702);
    inet_pton(AF_INET, "239.255.255.250", &group.sin_addr);

    std::vector<DiscoveredProvider> found;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    int sends = 0;
    for (int round = 0; round < 10000; ++round) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) break;
        if (sends < 2 && (sends == 0 || (found.empty() && now >= deadline - wait / 2))) {
            sendto(fd.get(), message.data(), message.size(), 0, reinterpret_cast<sockaddr*>(&group), sizeof group);
            ++sends;
        }
        pollfd p{fd.get(), POLLIN, 0};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
        if (poll(&p, 1, static_cast<int>(std::min<long long>(left, 50) + 1)) <= 0) continue;
        char buffer[65536];
        const ssize_t n = recv(fd.get(), buffer, sizeof buffer, 0);
        if (n <= 0) continue;
        SoapMessage reply;
        SoapFault fault;
        if (!parse_soap(std::string_view(buffer, static_cast<std::size_t>(n)), false, reply, fault) ||
            reply.action != ns::kProbeMatches || reply.relates_to != id)
            continue;
        for (xmlNode* m = xml::first_element(reply.body); m != nullptr; m = xml::next_element(m)) {
            if (!xml::is(m, ns::kWsd, "ProbeMatch")) continue;
            DiscoveredProvider p2;
            p2.epr = xml::text(xml::child(xml::child(m, ns::kWsa, "EndpointReference"), ns::kWsa, "Address"));
            std::istringstream words(xml::text(xml::child(m, ns::kWsd, "XAddrs")));
            std::string addr;
            while (words >> addr) p2.xaddrs.push_back(addr);
            bool duplicate = false;
            for (const auto& f : found) duplicate = duplicate || f.epr == p2.epr;
            if (!duplicate) found.push_back(std::move(p2));
        }
        if (first) {
            for (const auto& f : found)
                if ((epr.empty() || f.epr == epr) && !f.xaddrs.empty()) return found;
        }
    }
    return found;
}

}  // namespace

std::vector<DiscoveredProvider> Consumer::probe(const std::string& interface_ip, std::chrono::milliseconds wait)
{
    return probe_for(interface_ip, wait, {}, false);
}

Consumer Consumer::discover(const std::string& interface_ip, std::chrono::milliseconds wait, const std::string& epr,
                            ConsumerOptions options)
{
    for (const auto& p : probe_for(interface_ip, wait, epr, true)) {
        if ((epr.empty() || p.epr == epr) && !p.xaddrs.empty()) return connect(p.xaddrs.front(), options);
    }
    throw SdcError(Errc::no_provider, "WS-Discovery: no provider" + (epr.empty() ? std::string() : " " + epr) +
                                          " answered a Probe on " + interface_ip + " within " +
                                          std::to_string(wait.count()) + " ms");
}

}  // namespace blobstreaming::sdc
