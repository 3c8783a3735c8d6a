#include "Discovery.h"

#include "Asio.h"
#include "Namespaces.h"
#include "SoapMessage.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>

namespace blobstreaming::sdc {

using udp = net::ip::udp;

namespace {

const char* kGroup = "239.255.255.250";
constexpr unsigned short kPort = 3702;

std::string discovery_ns()
{
    return std::string(" xmlns:wsd=\"") + ns::kWsd + "\" xmlns:dpws=\"" + ns::kDpws + "\" xmlns:mdpws=\"" + ns::kMdpws +
           "\"";
}

/// Every QName of a Types list must be one of ours (dpws:Device, mdpws:MedicalDevice).
bool types_match(const xmlNode* types)
{
    std::istringstream words(xml::text(types));
    std::string qname;
    while (words >> qname) {
        const std::string uri = xml::qname_namespace(types, qname);
        const std::string local = xml::qname_local(qname);
        const bool ours = (uri == ns::kDpws && local == "Device") || (uri == ns::kMdpws && local == "MedicalDevice");
        if (!ours) return false;
    }
    return true;
}

}  // namespace

Discovery::Discovery(net::io_context& io, const std::string& interface_ip, std::string epr, std::string xaddrs)
    : multicast_(io), unicast_(io), epr_(std::move(epr)), xaddrs_(std::move(xaddrs)),
      instance_id_(static_cast<unsigned long long>(
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
              .count()))
{
    const auto iface = net::ip::make_address_v4(interface_ip == "0.0.0.0" ? "127.0.0.1" : interface_ip);
    multicast_.open(udp::v4());
    multicast_.set_option(net::socket_base::reuse_address(true));
    multicast_.bind(udp::endpoint(net::ip::address_v4::any(), kPort));
    multicast_.set_option(net::ip::multicast::join_group(net::ip::make_address_v4(kGroup), iface));
    unicast_.open(udp::v4());
    unicast_.bind(udp::endpoint(iface, 0));
    unicast_.set_option(net::ip::multicast::outbound_interface(iface));
    unicast_.set_option(net::ip::multicast::hops(1));
    unicast_.set_option(net::ip::multicast::enable_loopback(true));
}

void Discovery::start()
{
    receive(multicast_, multicast_buffer_, multicast_from_);
    receive(unicast_, unicast_buffer_, unicast_from_);
}

void Discovery::receive(udp::socket& socket, std::array<char, 65536>& buffer, udp::endpoint& from)
{
    socket.async_receive_from(net::buffer(buffer), from,
                              [this, &socket, &buffer, &from](const boost::system::error_code& ec, std::size_t n) {
                                  if (ec == net::error::operation_aborted || !socket.is_open()) return;
                                  if (!ec) handle(std::string(buffer.data(), n), from);
                                  receive(socket, buffer, from);
                              });
}

std::string Discovery::app_sequence()
{
    return "<wsd:AppSequence InstanceId=\"" + std::to_string(instance_id_) + "\" MessageNumber=\"" +
           std::to_string(++message_number_) + "\"/>";
}

void Discovery::handle(const std::string& datagram, const udp::endpoint& from)
{
    SoapMessage probe;
    SoapFault fault;
    if (!parse_soap(datagram, true, probe, fault) || probe.action != ns::kProbe || !probe.body_is(ns::kWsd, "Probe"))
        return;  // SOAP-over-UDP: not ours or not a Probe, silently ignored
    if (std::find(recent_probes_.begin(), recent_probes_.end(), probe.message_id) != recent_probes_.end())
        return;  // a repetition of a Probe already answered
    recent_probes_.push_back(probe.message_id);
    if (recent_probes_.size() > 64) recent_probes_.pop_front();
    if (const xmlNode* types = xml::child(probe.body, ns::kWsd, "Types"); types != nullptr && !types_match(types))
        return;
    if (const xmlNode* scopes = xml::child(probe.body, ns::kWsd, "Scopes");
        scopes != nullptr && !xml::text(scopes).empty())
        return;  // we advertise no scopes
    const std::string body =
        "<wsd:ProbeMatches><wsd:ProbeMatch><wsa:EndpointReference><wsa:Address>" + xml::escape(epr_) +
        "</wsa:Address></wsa:EndpointReference>"
        "<wsd:Types>dpws:Device mdpws:MedicalDevice</wsd:Types><wsd:XAddrs>" +
        xml::escape(xaddrs_) +
        "</wsd:XAddrs><wsd:MetadataVersion>1</wsd:MetadataVersion></wsd:ProbeMatch></wsd:ProbeMatches>";
    const std::string reply =
        make_envelope(ns::kProbeMatches, {}, probe.message_id, ns::kAnonymous, body, discovery_ns(), app_sequence());
    boost::system::error_code ec;
    unicast_.send_to(net::buffer(reply), from, 0, ec);
}

void Discovery::send_hello()
{
    const std::string body =
        "<wsd:Hello><wsa:EndpointReference><wsa:Address>" + xml::escape(epr_) +
        "</wsa:Address></wsa:EndpointReference><wsd:Types>dpws:Device mdpws:MedicalDevice</wsd:Types>"
        "<wsd:XAddrs>" +
        xml::escape(xaddrs_) + "</wsd:XAddrs><wsd:MetadataVersion>1</wsd:MetadataVersion></wsd:Hello>";
    const std::string message =
        make_envelope(ns::kHello, {}, {}, ns::kDiscoveryTo, body, discovery_ns(), app_sequence());
    boost::system::error_code ec;
    unicast_.send_to(net::buffer(message), udp::endpoint(net::ip::make_address_v4(kGroup), kPort), 0, ec);
}

void Discovery::send_bye()
{
    const std::string body = "<wsd:Bye><wsa:EndpointReference><wsa:Address>" + xml::escape(epr_) +
                             "</wsa:Address></wsa:EndpointReference></wsd:Bye>";
    const std::string message = make_envelope(ns::kBye, {}, {}, ns::kDiscoveryTo, body, discovery_ns(), app_sequence());
    boost::system::error_code ec;
    unicast_.send_to(net::buffer(message), udp::endpoint(net::ip::make_address_v4(kGroup), kPort), 0, ec);
}

void Discovery::close()
{
    boost::system::error_code ec;
    multicast_.close(ec);
    unicast_.close(ec);
}

}  // namespace blobstreaming::sdc
