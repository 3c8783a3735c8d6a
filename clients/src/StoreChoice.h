#pragma once
/// Which store an operation uses when the caller may leave it out: the one
/// rule for pushes (a store must be named or be the default) and the one
/// for operations on an existing Blob (they may also find it).

#include "ControlPlane.h"

#include <string>

namespace blobstreaming::client {

/// The store a push writes to: `given`, else the Session's `default_store`;
/// Errc::invalid_argument "<what>: no store given ..." when neither.
std::string store_to_write(const std::string& given, const std::string& default_store, const std::string& what);

/// The store an operation on the Blob `name` asks: `given`, else the
/// Session's `default_store`, else the nearest store holding `name` (asked
/// on the control plane: control thread only; Errc::no_such_blob naming the
/// stores asked when none holds it).
std::string store_holding(ControlPlane& control, const std::string& given, const std::string& default_store,
                          const std::string& name, const std::string& what);

}  // namespace blobstreaming::client
