#pragma once
/// The BlobLocator servant: which registered stores hold a Blob.

#include <BlobStreaming.hh>
#include <omniORB4/Naming.hh>

#include <string>

namespace blobstreaming::corba {

/// Answers from the stores registered under BlobStreaming/Stores by asking
/// each whether it holds the Blob (`contains`) and for its tier (`status`);
/// unreachable stores are skipped. Nearest tier first (memory, workstation,
/// cluster, central), by store name within a tier. Thread-safe.
class BlobLocator_i : public POA_BlobStreaming::BlobLocator {
public:
    /// `naming`: the root naming context (duplicated).
    BlobLocator_i(CosNaming::NamingContext_ptr naming, std::string naming_url);

    BlobStreaming::LocationSeq* locate(const char* name) override;
    BlobStreaming::NameSeq* stores() override;

private:
    CosNaming::NamingContext_var naming_;
    std::string naming_url_;
};

/// Binds `locator` as BlobStreaming/Locator (rebinding an older one).
void bind_locator(CosNaming::NamingContext_ptr root, CORBA::Object_ptr locator);
/// Whether BlobStreaming/Locator is bound to a locator that answers.
/// Throws CORBA system exceptions when the naming service does not answer.
bool locator_is_alive(CosNaming::NamingContext_ptr root);
/// Removes BlobStreaming/Locator when it is still `locator`; quiet otherwise.
void unbind_locator(CosNaming::NamingContext_ptr root, CORBA::Object_ptr locator) noexcept;

}  // namespace blobstreaming::corba
