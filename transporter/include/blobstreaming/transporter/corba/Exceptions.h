#pragma once
/// The one boundary between IDL exceptions and our Error type.

#include <blobstreaming/blobstore/Error.h>

#include <BlobStreaming.hh>

#include <string>

namespace blobstreaming::corba {

/// Servant side: throws the IDL exception that corresponds to `error`
/// (NoSuchBlob, InvalidName, InvalidRange, OutOfSpace, AlreadyExists,
/// NoSuchReservation, Timeout, otherwise TransferFailed with the message).
[[noreturn]] void throw_idl(const Error& error, const std::string& store);

/// An access-list refusal travels as CORBA::NO_PERMISSION (legal from every
/// operation, no IDL change) whose minor code is kNoPermissionMinor plus the
/// permission (1 read, 2 write, 3 delete); rethrow_as_error() turns it into
/// Errc::refused "permission denied: client "CN=ws1" may not write".
inline constexpr unsigned long kNoPermissionMinor = 0x42530000UL;

/// Client side: call from a catch block. Rethrows the current exception as
/// Error: IDL exceptions keep their class and context; TRANSIENT and
/// COMM_FAILURE (and OBJECT_NOT_EXIST) become Errc::unreachable,
/// "store <store> unreachable at <endpoint>"; other system exceptions
/// become Errc::transfer_failed naming the operation. `what` names the
/// operation, e.g. `push "CT.1"`.
[[noreturn]] void rethrow_as_error(const std::string& what, const std::string& store,
                                   const std::string& endpoint);

/// Host:port of the first IIOP profile of an object reference, for messages.
std::string endpoint_of(CORBA::Object_ptr ref);

/// Whether `ref` can be reached over TLS only (giop:ssl, no giop:tcp).
bool ssl_only(CORBA::Object_ptr ref);

/// Whether every way into `ref` is TLS that its server insists on: every
/// profile is IIOP with port 0 (no plain TCP), no alternate or Unix-socket
/// address, and a TAG_SSL_SEC_TRANS component whose "requires" holds
/// integrity, confidentiality and trust in the client. A client that uses
/// TLS sends nothing to a reference that fails this (a plaintext impostor
/// registered under a store's name, or a misconfigured store). Nil: false.
bool requires_tls(CORBA::Object_ptr ref);

}  // namespace blobstreaming::corba
