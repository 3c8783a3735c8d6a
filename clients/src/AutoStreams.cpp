#include "AutoStreams.h"

#include <blobstreaming/client/Transfer.h>
#include <blobstreaming/transporter/Log.h>

#include <arpa/inet.h>

#include <cstring>

namespace blobstreaming::client {

bool is_loopback_host(const std::string& host)
{
    std::string text = host;
    if (text.size() > 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
    if (text == "localhost") return true;
    in_addr v4{};
    if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    in6_addr v6{};
    if (inet_pton(AF_INET6, text.c_str(), &v6) != 1) return false;
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

std::size_t auto_streams(const std::string& what, const dataplane::Ticket& ticket, std::uint64_t length)
{
    if (length < 2 * kMinStreamRange) return 1;  // one stream whatever was asked: nothing to say
    if (is_loopback_host(ticket.host)) {
        library_log()->info("{}: streams auto: 1 stream: the data endpoint {} is on loopback, where the CPUs "
                            "copying the bytes, not a link, bound the rate (more streams are slower)",
                            what, ticket.endpoint());
        return 1;
    }
    if (length < kAutoStreamsFrom) {
        library_log()->info("{}: streams auto: 1 stream: {} bytes, under the {} from which several streams are used",
                            what, length, kAutoStreamsFrom);
        return 1;
    }
    library_log()->info("{}: streams auto: {} streams to {} ({} bytes, at least {})", what, kAutoStreamCount,
                        ticket.endpoint(), length, kAutoStreamsFrom);
    return kAutoStreamCount;
}

void warn_streams_on_loopback(const std::string& what, const dataplane::Ticket& ticket, std::size_t streams)
{
    if (streams <= 1 || !is_loopback_host(ticket.host)) return;
    library_log()->warn("{}: {} streams to a data endpoint on loopback ({}): they share this host's CPUs and are "
                        "slower than one stream there (streams auto picks one)",
                        what, streams, ticket.endpoint());
}

}  // namespace blobstreaming::client
