#pragma once
/// Errors of the SDC get-service path (library setup, MDIB, client calls).
/// They use the codes of blobstreaming::Errc (common/Error.h), so that an
/// exit status means the same in sdc-get as in blob: invalid_argument,
/// invalid_mdib, unknown_handle, not_a_metric, peer_fault,
/// timeout, unreachable, protocol_error (HTTP status or
/// response shape not as expected), no_provider.

#include <blobstreaming/common/Error.h>

#include <string>

namespace blobstreaming::sdc {

/// The one exception type of this module; `what()` says what failed, on which object, and why.
class SdcError : public Error {
public:
    SdcError(Errc code, const std::string& message) : Error(code, message) {}
};

}  // namespace blobstreaming::sdc
