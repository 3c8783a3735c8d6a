#include "AutoStreams.h"

#include <blobstreaming/client/Transfer.h>
#include <blobstreaming/transporter/Log.h>
#include <blobstreaming/transporter/WireCompression.h>

namespace blobstreaming::client {

std::size_t auto_streams(const std::string& what, const dataplane::Ticket& ticket, std::uint64_t length,
                         Compression compress)
{
    if (length < 2 * kMinStreamRange) return 1;  // one stream whatever was asked: nothing to say
    if (compress == Compression::zstd) {
        library_log()->info("{}: streams auto: 1 stream: --compress zstd compresses one stream only", what);
        return 1;
    }
    if (wire::host_is_loopback(ticket.host)) {
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
    if (streams <= 1 || !wire::host_is_loopback(ticket.host)) return;
    library_log()->warn("{}: {} streams to a data endpoint on loopback ({}): they share this host's CPUs and are "
                        "slower than one stream there (streams auto picks one)",
                        what, streams, ticket.endpoint());
}

}  // namespace blobstreaming::client
