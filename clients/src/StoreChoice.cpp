// The store-resolution rules of StoreChoice.h.
#include "StoreChoice.h"

#include <blobstreaming/common/Error.h>

namespace blobstreaming::client {

std::string store_to_write(const std::string& given, const std::string& default_store, const std::string& what)
{
    if (!given.empty()) return given;
    if (!default_store.empty()) return default_store;
    throw Error(Errc::invalid_argument, what + ": no store given (use --store NAME or Options::default_store)");
}

std::string store_holding(ControlPlane& control, const std::string& given, const std::string& default_store,
                          const std::string& name, const std::string& what)
{
    if (!given.empty()) return given;
    if (!default_store.empty()) return default_store;
    return control.nearest_holder(name, what);
}

}  // namespace blobstreaming::client
