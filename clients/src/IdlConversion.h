#pragma once
/// IDL structs and sequences (BlobStreaming.idl) to the library's own types
/// and back: the only place that knows both layouts.

#include "DataPlane.h"

#include <blobstreaming/client/Result.h>
#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/transporter/corba/ChecksumIdl.h>

#include <BlobStreaming.hh>

#include <chrono>
#include <vector>

namespace blobstreaming::client {

Tier tier_of(BlobStreaming::StoreTier tier) noexcept;
BlobInfo info_of(const BlobStreaming::BlobInfo& in);
/// Sorted by name.
std::vector<BlobInfo> infos_of(const BlobStreaming::BlobInfoSeq& in);
Ticket ticket_of(const BlobStreaming::TransferTicket& in);
LocalFile local_file_of(const BlobStreaming::LocalFile& in);
/// Fills `out`'s store fields from a store's status and data address (not
/// `name`, `reachable` or `error`).
void fill_status(StoreStatus& out, const BlobStreaming::StoreStatus& status, const BlobStreaming::DataEndpoint& data);
BlobStreaming::TimeValue time_value(std::chrono::milliseconds ms) noexcept;

}  // namespace blobstreaming::client
