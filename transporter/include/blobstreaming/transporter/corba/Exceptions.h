#pragma once
/// The one boundary between IDL exceptions and our Error type.

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/corba/References.h>

#include <BlobStreaming.hh>

#include <cstdint>
#include <optional>
#include <string>

namespace blobstreaming::corba {

/// The IDL exceptions of an operation's `raises` clause, as a bit set.
enum Raises : unsigned {
    kRaisesNothing = 0,
    kNoSuchBlob = 1u << 0,
    kInvalidName = 1u << 1,
    kInvalidRange = 1u << 2,
    kOutOfSpace = 1u << 3,
    kAlreadyExists = 1u << 4,
    kNoSuchReservation = 1u << 5,
    kTransferFailed = 1u << 6,
    kTimeout = 1u << 7,
    kCorrupt = 1u << 8,
    kLimitReached = 1u << 9,
};

/// The typed context an IDL exception carries besides its message.
struct IdlContext {
    std::string name;             ///< the Blob's name
    std::uint64_t requested = 0;  ///< OutOfSpace: bytes asked for
    std::uint64_t id = 0;         ///< NoSuchReservation: the reservation
    std::uint64_t offset = 0;     ///< InvalidRange
    std::uint64_t length = 0;     ///< InvalidRange
};

/// Servant side: call from a `catch (...)` block of an operation whose IDL
/// `raises` clause is `declared`. Rethrows the current exception as one the
/// operation may raise, never as CORBA::UNKNOWN:
/// - an Error becomes the IDL exception of its code when declared (Errc::
///   no_such_blob -> NoSuchBlob, io_error -> TransferFailed, ...), else
///   TransferFailed when declared, else a CORBA system exception of its class
///   (BAD_PARAM for input, NO_RESOURCES for space and limits, PERSIST_STORE
///   for storage, INTERNAL otherwise) with minor code kErrorMinor + code;
/// - a CORBA exception the operation declares (or any system exception)
///   passes through; another user exception becomes INTERNAL;
/// - std::bad_alloc becomes NO_MEMORY, another std::exception INTERNAL.
/// Every one of them carries the Errc and the complete message to the client
/// in a service context of the reply (see reply_error()), since a system
/// exception itself has no room for text. `store` names the store in
/// OutOfSpace.
[[noreturn]] void rethrow_declared(unsigned declared, const std::string& store, const IdlContext& context = {});

/// An access-list refusal travels as CORBA::NO_PERMISSION (legal from every
/// operation, no IDL change) whose minor code is kNoPermissionMinor plus the
/// permission (1 read, 2 write, 3 delete); rethrow_as_error() turns it into
/// Errc::refused "permission denied: client "CN=ws1" may not write".
inline constexpr unsigned long kNoPermissionMinor = 0x42530000UL;

/// Minor code of a system exception raised for an Error that the operation
/// has no IDL exception for: kErrorMinor plus the Errc value.
inline constexpr unsigned long kErrorMinor = 0x42530100UL;

/// Service context (IOP::ServiceId) of a reply that ends in an exception:
/// the Errc and the store's message (CDR encapsulation: ulong code, ulong
/// length, that many bytes of UTF-8).
inline constexpr unsigned long kErrorContextId = 0x42530001UL;

/// The error a store sent along with the exception of the last reply this
/// thread received, when it sent one.
struct ReplyError {
    Errc code = Errc::ok;
    std::string message;
};
std::optional<ReplyError> reply_error();

/// Registers the interceptors that send (servant side) and receive (client
/// side) the error context. Call after every ORB_init: omniORB forgets
/// interceptors when an ORB is destroyed. Idempotent. init_orb() calls it.
void install_error_context();

/// Client side: call from a catch block. Rethrows the current exception as
/// Error: IDL exceptions keep their class and context (and the exact Errc
/// when the store sent one, e.g. io_error rather than transfer_failed);
/// TRANSIENT and COMM_FAILURE (and OBJECT_NOT_EXIST) become
/// Errc::unreachable, "store <store> unreachable at <endpoint>"; a system
/// exception that came with the store's error becomes that error; other
/// system exceptions become Errc::transfer_failed naming the operation.
/// `what` names the operation, e.g. `push "CT.1"`.
[[noreturn]] void rethrow_as_error(const std::string& what, const std::string& store, const std::string& endpoint);

}  // namespace blobstreaming::corba
