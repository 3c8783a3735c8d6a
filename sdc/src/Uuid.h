#pragma once
// Random (version 4) UUIDs for MessageIDs, EPRs and sequence ids.

#include <string>

namespace blobstreaming::sdc {

/// "urn:uuid:xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx"; thread-safe.
std::string make_urn_uuid();

/// Monotonic clock in nanoseconds (CLOCK_MONOTONIC: the same clock in every
/// process of the machine, so provider and consumer timestamps compare).
long long monotonic_ns();

}  // namespace blobstreaming::sdc
