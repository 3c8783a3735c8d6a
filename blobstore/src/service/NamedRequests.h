#pragma once
/// The data plane's named requests (docs/PROTOCOL.md, "Named requests")
/// decided by the StoreService, as the control plane's push and send are:
/// the same permission check, name check, reservation limits, overwrite
/// rule and version binding, then a ticket the connection consumes at once.

#include "server/NamedAdmission.h"
#include "service/StoreService.h"

namespace blobstreaming::service {

class NamedRequests final : public server::NamedAdmission {
public:
    explicit NamedRequests(StoreService& service) : service_(service) {}

    /// A push: StoreService::push with the client's algorithm; a pull:
    /// StoreService::send. No notices, the data server's inactivity timeout.
    Issued admit(const std::string& subject, const std::string& client,
                 const protocol::NamedRequest& request) override;
    ChecksumAlgorithm default_checksum() const noexcept override { return service_.default_checksum(); }

private:
    StoreService& service_;
};

}  // namespace blobstreaming::service
