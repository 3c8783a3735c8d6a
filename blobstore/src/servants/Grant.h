#pragma once
/// A read grant (IDL ReadGrant) as the daemon's fetches use it: the source
/// and the pull ticket of a whole committed version, which is the only
/// authority the daemon presents to the source (docs/PROTOCOL.md, "Copies
/// by capability").

#include <blobstreaming/transporter/Protocol.h>
#include <blobstreaming/transporter/client/Ticket.h>

#include <BlobStreaming.hh>
#include <omniORB4/omniORB.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace blobstreaming::corba {

struct Grant {
    BlobStreaming::BlobStore_var source;
    std::string source_name;   ///< BlobStore::name of the source
    std::string key;           ///< the source's control endpoint
    dataplane::Ticket ticket;  ///< a pull of the whole Blob; its version
    std::string name() const { return ticket.version ? ticket.version->name : std::string(); }
};

/// The grant's ticket id, for an IDL call.
inline void to_idl_id(const dataplane::Ticket& ticket, BlobStreaming::TicketId out)
{
    std::copy(ticket.id.begin(), ticket.id.end(), out);
}

/// The ticket's tag in messages (protocol::ticket_tag).
inline std::string ticket_tag(const dataplane::Ticket& ticket)
{
    protocol::TicketId id{};
    std::copy(ticket.id.begin(), ticket.id.end(), id.begin());
    return protocol::ticket_tag(id);
}

/// `source` with each call bounded by `timeout`.
inline BlobStreaming::BlobStore_var bounded(BlobStreaming::BlobStore_ptr source, std::chrono::milliseconds timeout)
{
    BlobStreaming::BlobStore_var ref = BlobStreaming::BlobStore::_duplicate(source);
    omniORB::setClientCallTimeout(ref, static_cast<CORBA::ULong>(timeout.count()));
    return ref;
}

}  // namespace blobstreaming::corba
