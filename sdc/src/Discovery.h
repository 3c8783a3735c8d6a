#pragma once
// WS-Discovery (SOAP-over-UDP) for the provider: answers Probe with
// ProbeMatches, sends Hello and Bye. Runs on the provider's io_context.

#include "Asio.h"

#include <array>
#include <deque>
#include <string>

namespace blobstreaming::sdc {

class Discovery {
public:
    /// Joins 239.255.255.250:3702 on `interface_ip` (multicast loopback on,
    /// TTL 1) and opens a unicast socket on `interface_ip`. Throws
    /// boost::system::system_error when a socket cannot be set up.
    Discovery(boost::asio::io_context& io, const std::string& interface_ip, std::string epr, std::string xaddrs);

    /// Starts receiving (call on or before the io_context runs).
    void start();
    /// Multicast Hello / Bye, sent synchronously (call while the io_context is not running them concurrently).
    void send_hello();
    void send_bye();
    /// Closes both sockets (pending receives end).
    void close();

private:
    void receive(boost::asio::ip::udp::socket& socket, std::array<char, 65536>& buffer,
                 boost::asio::ip::udp::endpoint& from);
    void handle(const std::string& datagram, const boost::asio::ip::udp::endpoint& from);
    std::string app_sequence();

    boost::asio::ip::udp::socket multicast_;
    boost::asio::ip::udp::socket unicast_;
    std::array<char, 65536> multicast_buffer_{};
    std::array<char, 65536> unicast_buffer_{};
    boost::asio::ip::udp::endpoint multicast_from_;
    boost::asio::ip::udp::endpoint unicast_from_;
    std::string epr_;
    std::string xaddrs_;
    unsigned long long instance_id_;
    unsigned long long message_number_ = 0;
    std::deque<std::string> recent_probes_;
};

}  // namespace blobstreaming::sdc
