#pragma once
/// Which store an operation uses when the caller may leave it out: the one
/// rule for pushes (a store must be named or be the default) and the one
/// for operations on an existing Blob (they may also find it).

#include "ControlPlane.h"

#include <cstdint>
#include <optional>
#include <string>

namespace blobstreaming::client {

/// The store a push of `size` bytes writes to: `given`; else, without a
/// `tier`, the Session's `default_store`; else where the placement rule
/// puts it (ControlPlane::place: the locator's default store, then a store
/// of `tier` with room, nearest first; control thread only).
/// Errc::invalid_argument when both `given` and `tier` are.
std::string store_to_write(ControlPlane& control, const std::string& given, std::optional<Tier> tier,
                           const std::string& default_store, std::uint64_t size, const std::string& what);

/// The store an operation on the Blob `name` asks: `given`, else the
/// Session's `default_store`, else the nearest store holding `name` (asked
/// on the control plane: control thread only; Errc::no_such_blob naming the
/// stores asked when none holds it).
std::string store_holding(ControlPlane& control, const std::string& given, const std::string& default_store,
                          const std::string& name, const std::string& what);

}  // namespace blobstreaming::client
