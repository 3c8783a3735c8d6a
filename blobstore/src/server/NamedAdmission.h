#pragma once
/// What the data plane asks when a pooled connection names a Blob instead
/// of presenting a ticket (docs/PROTOCOL.md, "Named requests"): the store
/// decides as its control plane does (service/NamedRequests.h implements
/// it with the StoreService), so that there is one rule for who may do
/// what and which version a transfer serves.

#include "TicketRegistry.h"

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/transporter/Protocol.h>

#include <string>

namespace blobstreaming::server {

class NamedAdmission {
public:
    virtual ~NamedAdmission() = default;
    /// A ticket for `request`, issued to the client `subject` (the TLS
    /// certificate's; "" without TLS) at `client` (the subject, else the
    /// peer's address), registered and ready to be consumed at once.
    /// Throws Error (refused for a permission, the store's own errors) as
    /// the control plane's push and send do. Runs on the reactor thread for
    /// a store that answers in place (memory, local files), on the
    /// CommitPool for one whose reads may wait on another host
    /// (Store::read_waits(): a read-through fetch, RADOS).
    struct Issued {
        protocol::TicketId ticket{};
        TicketBinding binding;
    };
    virtual Issued admit(const std::string& subject, const std::string& client,
                         const protocol::NamedRequest& request) = 0;
    /// The checksum a push gets that asks for the store's default.
    virtual ChecksumAlgorithm default_checksum() const noexcept = 0;
};

}  // namespace blobstreaming::server
