#pragma once
/// The BlobLocator servant: which registered stores hold a Blob, and where
/// a new one goes (the placement rule, Placement.h).

#include "ServantContext.h"

#include <BlobStreaming.hh>
#include <omniORB4/Naming.hh>

#include <string>
#include <vector>

namespace blobstreaming::corba {

/// Without TLS: answers from the stores registered under
/// BlobStreaming/Stores by asking each whether it holds the Blob
/// (`contains`) and for its tier (`status`); unreachable stores are skipped.
/// Nearest tier first (memory, workstation, cluster, central), by store name
/// within a tier.
///
/// With TLS (the daemon's access list is enforced): answers for its own
/// store only, and only to a caller with read permission there
/// (NO_PERMISSION otherwise). It never asks another store on a client's
/// behalf: it would ask with the daemon's identity, and only the client's
/// own identity may decide what the client learns (a client asks each store
/// itself, as libblobclient's locate does). Likewise `place` considers its
/// own store only, for a caller with write permission there. Thread-safe.
class BlobLocator_i : public POA_BlobStreaming::BlobLocator {
public:
    /// `naming`: the root naming context (duplicated); `own`: the context of
    /// this daemon's store (outlives the servant) and `own_ref` its
    /// reference (duplicated); `default_store`: the store a placement
    /// tries first (blobstored --default-store; "" : this daemon's own).
    BlobLocator_i(CosNaming::NamingContext_ptr naming, std::string naming_url, const ServantContext& own,
                  CORBA::Object_ptr own_ref, std::string default_store = {});

    BlobStreaming::LocationSeq* locate(const char* name) override;
    /// The registered names (what the Naming Service tells anyone): needs
    /// only a verified certificate.
    BlobStreaming::NameSeq* stores() override;
    /// The placement rule (Placement.h) over the registered stores' status.
    BlobStreaming::Placement* place(BlobStreaming::ByteCount size, const BlobStreaming::StoreTierSeq& tiers) override;

private:
    BlobStreaming::LocationSeq* locate_own(const char* name);
    BlobStreaming::Placement* place_own(BlobStreaming::ByteCount size, const std::vector<int>& tiers);

    CosNaming::NamingContext_var naming_;
    std::string naming_url_;
    const ServantContext& own_;
    BlobStreaming::BlobStore_var own_ref_;
    std::string default_store_;
};

/// Binds `locator` as BlobStreaming/Locator (rebinding an older one).
void bind_locator(CosNaming::NamingContext_ptr root, CORBA::Object_ptr locator);
/// Whether BlobStreaming/Locator is bound to a locator that answers. In a
/// process that uses TLS, a binding whose reference does not require TLS
/// counts as dead (it is not asked; a plaintext impostor is replaced).
/// Throws CORBA system exceptions when the naming service does not answer.
bool locator_is_alive(CosNaming::NamingContext_ptr root);
/// Removes BlobStreaming/Locator when it is still `locator`; quiet otherwise.
void unbind_locator(CosNaming::NamingContext_ptr root, CORBA::Object_ptr locator) noexcept;

}  // namespace blobstreaming::corba
