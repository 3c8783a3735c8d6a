#pragma once
/// Error codes of Blob Streaming, grouped by range, and the exception type
/// that carries one with a specific message.
///
/// Setup and control paths throw `Error`; data paths return
/// `std::error_code` in `error_category()`. The values double as the exit
/// codes of every program (blob, blobstored, bsbench, sdc-get, sdc-provider,
/// sdc-bench; docs/CLI.md, "Exit codes"), so that a status means the same in
/// all of them: 0 success, 1 usage, then these. The SDC codes (13-15, 56-57)
/// live here too; a new code takes a free value in its range.

#include <stdexcept>
#include <string>
#include <system_error>

namespace blobstreaming {

enum class Errc {
    ok = 0,
    // 10-19: the caller's input
    invalid_argument = 10,
    invalid_name = 11,
    invalid_range = 12,
    /// SDC: an MDIB document that is not well-formed or not a BICEPS MDIB.
    invalid_mdib = 13,
    /// SDC: a descriptor or state handle the MDIB does not have.
    unknown_handle = 14,
    /// SDC: a handle that names something other than a metric.
    not_a_metric = 15,
    // 20-29: the Blob's or the reservation's state
    no_such_blob = 20,
    already_exists = 21,
    reservation_closed = 22,
    incomplete = 23,
    digest_mismatch = 24,
    no_such_reservation = 25,
    unknown_store = 26,
    /// The Blob was replaced or removed after the ticket for one committed
    /// version of it was issued: the transfer delivered nothing of another.
    blob_changed = 27,
    // 30-39: resources
    out_of_space = 30,
    store_busy = 31,
    /// A bound on open connections, reservations or queued work is reached.
    limit_reached = 32,
    // 40-49: the local store's storage
    io_error = 40,
    corrupt = 41,
    // 50-59: transport
    transfer_failed = 50,
    timeout = 51,
    unreachable = 52,
    refused = 53,
    protocol_error = 54,
    cancelled = 55,
    /// SDC: the peer answered with a SOAP Fault.
    peer_fault = 56,
    /// SDC: WS-Discovery found no matching provider.
    no_provider = 57,
    /// An operation across every registered store answered for some of them
    /// only: the results are those of the stores that answered.
    partial = 58,
};

/// The category of `Errc`; its name is "blobstreaming".
const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(Errc e) noexcept { return {static_cast<int>(e), error_category()}; }

/// An `Errc` with a message that says what failed, on which object, and why.
/// `what()` is the message alone (the code's generic text is not appended).
class Error : public std::runtime_error {
public:
    Error(Errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
    Errc code() const noexcept { return code_; }
    std::error_code error_code() const noexcept { return make_error_code(code_); }

private:
    Errc code_;
};

/// Throws `Error(Errc::io_error, "<what>: <strerror(err)>")`.
[[noreturn]] void throw_io_error(const std::string& what, int err);

}  // namespace blobstreaming

namespace std {
template <>
struct is_error_code_enum<blobstreaming::Errc> : true_type {};
}  // namespace std
