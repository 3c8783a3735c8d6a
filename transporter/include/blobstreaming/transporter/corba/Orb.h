#pragma once
/// ORB life cycle and Naming Service helpers shared by blobstored and
/// libblobclient. Internal: never included by installed client headers.

#include <BlobStreaming.hh>
#include <omniORB4/CORBA.h>
#include <omniORB4/Naming.hh>

#include <string>
#include <utility>
#include <vector>

namespace blobstreaming::corba {

/// Initialises an ORB from `-ORBxxx value` pairs (no argv needed), e.g.
/// {"endPoint", "giop:tcp:127.0.0.1:"}, {"clientCallTimeOutPeriod", "10000"}.
CORBA::ORB_ptr init_orb(const std::vector<std::pair<std::string, std::string>>& options,
                        const char* orb_id = "omniORB4");

/// The root naming context at `url` (corbaname::HOST:PORT or
/// corbaloc::HOST:PORT/NameService). Throws Error(Errc::unreachable,
/// "cannot contact the naming service at <url>: ...") when it is not there.
CosNaming::NamingContext_ptr naming_context(CORBA::ORB_ptr orb, const std::string& url);

/// The path of a store in the naming graph: BlobStreaming/Stores/<name>.
CosNaming::Name store_path(const std::string& store);

/// The path of the shared BlobLocator: BlobStreaming/Locator.
CosNaming::Name locator_path();

/// Binds (or rebinds, after a restart) `store` under BlobStreaming/Stores,
/// creating the contexts as needed.
void bind_store(CosNaming::NamingContext_ptr root, const std::string& store, CORBA::Object_ptr ref);
/// Removes the binding; quiet when it is already gone.
void unbind_store(CosNaming::NamingContext_ptr root, const std::string& store);

/// The store's reference. Error(Errc::unknown_store, "no store named "X" is
/// registered in the naming service at <url> (registered: a, b)").
BlobStreaming::BlobStore_ptr resolve_store(CosNaming::NamingContext_ptr root, const std::string& store,
                                           const std::string& url);

/// Names of all registered stores, sorted.
std::vector<std::string> list_stores(CosNaming::NamingContext_ptr root);

/// The path of a DICOM gateway's StudyEvents: BlobStreaming/Gateways/<AE title>.
CosNaming::Name gateway_path(const std::string& aetitle);
/// As bind_store and unbind_store, under BlobStreaming/Gateways.
void bind_gateway(CosNaming::NamingContext_ptr root, const std::string& aetitle, CORBA::Object_ptr ref);
void unbind_gateway(CosNaming::NamingContext_ptr root, const std::string& aetitle);
/// AE titles of all registered gateways, sorted.
std::vector<std::string> list_gateways(CosNaming::NamingContext_ptr root);

}  // namespace blobstreaming::corba
