#pragma once
/// Errors of the SDC get-service path (library setup, MDIB, client calls).

#include <stdexcept>
#include <string>

namespace blobstreaming::sdc {

/// What went wrong, grouped by range like the blob CLI's exit codes.
enum class SdcErrc {
    invalid_argument = 10,
    invalid_mdib = 20,
    unknown_handle = 21,
    not_a_metric = 22,
    malformed_message = 50,
    fault = 51,          ///< the peer answered with a SOAP Fault
    timeout = 52,
    unreachable = 53,
    protocol_error = 54, ///< HTTP status or response shape not as expected
    not_found = 55,      ///< discovery found no matching provider
};

/// The one exception type of this module; `what()` says what failed, on which object, and why.
class SdcError : public std::runtime_error {
public:
    SdcError(SdcErrc code, const std::string& message) : std::runtime_error(message), code_(code) {}
    SdcErrc code() const noexcept { return code_; }

private:
    SdcErrc code_;
};

} // namespace blobstreaming::sdc
