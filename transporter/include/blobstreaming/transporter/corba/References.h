#pragma once
/// What an object reference says about how it will be reached, for messages
/// (endpoint_of) and for the TLS checks a client makes before it sends
/// anything (ssl_only, requires_tls).

#include <BlobStreaming.hh>

#include <string>

namespace blobstreaming::corba {

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
