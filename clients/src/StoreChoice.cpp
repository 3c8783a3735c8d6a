// The store-resolution rules of StoreChoice.h.
#include "StoreChoice.h"

#include <blobstreaming/common/Error.h>

namespace blobstreaming::client {

std::string store_to_write(ControlPlane& control, const std::string& given, std::optional<Tier> tier,
                           const std::string& default_store, std::uint64_t size, const std::string& what)
{
    if (!given.empty() && tier)
        throw Error(Errc::invalid_argument, what + ": both a store (\"" + given + "\") and a tier (" +
                                                tier_name(*tier) + ") given: give one (--store or --tier)");
    if (!given.empty()) return given;
    if (!tier && !default_store.empty()) return default_store;
    return control.place(size, tier, what);
}

std::string store_holding(ControlPlane& control, const std::string& given, const std::string& default_store,
                          const std::string& name, const std::string& what)
{
    if (!given.empty()) return given;
    if (!default_store.empty()) return default_store;
    return control.nearest_holder(name, what);
}

}  // namespace blobstreaming::client
