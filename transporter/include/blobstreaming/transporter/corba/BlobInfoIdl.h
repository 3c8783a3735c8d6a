#pragma once
/// BlobInfo and a transfer ticket between our types and the IDL structs,
/// for both sides of the boundary: the servants and the daemon's fetches,
/// and the client library.

#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/client/Ticket.h>
#include <blobstreaming/transporter/corba/ChecksumIdl.h>

#include <BlobStreaming.hh>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

namespace blobstreaming::corba {

inline void to_idl(const blobstreaming::BlobInfo& in, BlobStreaming::BlobInfo& out)
{
    out.name = in.name.c_str();
    out.size = in.size;
    to_idl(in.checksum, out.checksum);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(in.committed.time_since_epoch()).count();
    out.committedNs = static_cast<CORBA::ULongLong>(ns < 0 ? 0 : ns);
}

/// The IDL struct as the store's type; `what` names it in a checksum error.
inline blobstreaming::BlobInfo from_idl(const BlobStreaming::BlobInfo& in, const std::string& what)
{
    blobstreaming::BlobInfo out;
    out.name = in.name.in();
    out.size = in.size;
    out.checksum = checksum_of(in.checksum, what);
    out.committed = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(in.committedNs)));
    return out;
}

inline BlobStreaming::BlobInfo* to_idl(const blobstreaming::BlobInfo& in)
{
    auto* out = new BlobStreaming::BlobInfo;
    to_idl(in, *out);
    return out;
}

/// A ticket the store issued, as the data plane's client presents it: its
/// version for a pull; its checksum algorithm, which must be one this
/// release knows (Errc::protocol_error otherwise).
inline dataplane::Ticket ticket_of(const BlobStreaming::TransferTicket& in)
{
    dataplane::Ticket out;
    std::copy(in.id, in.id + 16, out.id.begin());
    out.offset = in.offset;
    out.length = in.length;
    out.host = in.endpoint.host.in();
    out.port = in.endpoint.port;
    if (in.direction == BlobStreaming::PULL)
        out.version = from_idl(in.version, "the store's answer for " + std::string(in.version.name.in()));
    const auto algorithm = algorithm_of(in.checksum);
    if (!algorithm)
        throw Error(Errc::protocol_error, "the store's ticket for " + std::string(in.blob.in()) +
                                              " names no checksum algorithm (a store of another release?)");
    out.checksum = *algorithm;
    return out;
}

}  // namespace blobstreaming::corba
