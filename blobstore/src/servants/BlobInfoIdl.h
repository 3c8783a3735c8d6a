#pragma once
/// BlobInfo between the store's type and the IDL struct (the servants' side
/// of the boundary; the client library has its own in ControlPlane.cpp).

#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/transporter/corba/ChecksumIdl.h>

#include <BlobStreaming.hh>

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

}  // namespace blobstreaming::corba
