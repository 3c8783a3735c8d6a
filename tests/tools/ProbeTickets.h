#pragma once
/// The ticket conversions of the test tools that speak the data protocol
/// themselves (ticket_probe, transporter_probe, through the tests' one
/// protocol peer, transporter/tests/ProtocolPeer.h): a ticket issued on the
/// control plane as the data protocol's id, and as hex for their output.

#include <blobstreaming/transporter/Protocol.h>

#include <BlobStreaming.hh>

#include <cstddef>
#include <cstdint>
#include <string>

namespace blobstreaming {

/// The data protocol's id of a ticket issued on the control plane.
inline protocol::TicketId ticket_of(const BlobStreaming::TicketId id)
{
    protocol::TicketId out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = id[i];
    return out;
}

/// A ticket id in full, as lower-case hex (32 characters).
inline std::string hex_of(const protocol::TicketId& id)
{
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (const std::uint8_t b : id) {
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
    }
    return out;
}

}  // namespace blobstreaming
