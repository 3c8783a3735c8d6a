// IDL types <-> the library's types (IdlConversion.h).
#include "IdlConversion.h"

#include <blobstreaming/transporter/corba/BlobInfoIdl.h>

#include <algorithm>
#include <string>

namespace blobstreaming::client {

Tier tier_of(BlobStreaming::StoreTier tier) noexcept
{
    switch (tier) {
    case BlobStreaming::TIER_MEMORY: return Tier::memory;
    case BlobStreaming::TIER_WORKSTATION: return Tier::workstation;
    case BlobStreaming::TIER_CLUSTER: return Tier::cluster;
    default: return Tier::central;
    }
}

BlobInfo info_of(const BlobStreaming::BlobInfo& in)
{
    return corba::from_idl(in, "the store's answer for " + std::string(in.name.in()));
}

std::vector<BlobInfo> infos_of(const BlobStreaming::BlobInfoSeq& in)
{
    std::vector<BlobInfo> out;
    out.reserve(in.length());
    for (CORBA::ULong i = 0; i < in.length(); ++i) out.push_back(info_of(in[i]));
    std::sort(out.begin(), out.end(), [](const BlobInfo& a, const BlobInfo& b) { return a.name < b.name; });
    return out;
}

Ticket ticket_of(const BlobStreaming::TransferTicket& in) { return corba::ticket_of(in); }

LocalFile local_file_of(const BlobStreaming::LocalFile& in)
{
    return LocalFile{in.path.in(), in.dataOffset, info_of(in.info)};
}

void fill_status(StoreStatus& out, const BlobStreaming::StoreStatus& status, const BlobStreaming::DataEndpoint& data)
{
    out.kind = status.kind.in();
    out.tier = tier_of(status.tier);
    out.capacity = status.capacity;
    out.used = status.used;
    out.reserved = status.reserved;
    out.blobs = status.blobCount;
    out.data_endpoint = std::string(data.host.in()) + ":" + std::to_string(data.port);
    out.host = status.host.in();
    out.local_files = status.localFiles;
}

BlobStreaming::TimeValue time_value(std::chrono::milliseconds ms) noexcept
{
    BlobStreaming::TimeValue tv;
    tv.seconds = static_cast<CORBA::ULongLong>(ms.count() / 1000);
    tv.microseconds = static_cast<CORBA::ULong>((ms.count() % 1000) * 1000);
    return tv;
}

}  // namespace blobstreaming::client
