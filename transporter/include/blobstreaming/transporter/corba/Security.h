#pragma once
/// TLS on the control plane: omniORB's SSL transport (giop:ssl endpoints)
/// and the identity of the client a servant is serving. Internal header.

#include <blobstreaming/transporter/Tls.h>

#include <string>

namespace blobstreaming::corba {

/// Sets up omniORB's SSL transport from `files` (certificate, key and CA as
/// separate PEM files): TLS 1.2 or later, the peer's certificate required
/// and verified against the CA in both directions. Must run before the ORB
/// is initialised, once per process. Throws Error(invalid_argument) naming
/// the file that cannot be used.
void configure_ssl(const TlsFiles& files);

/// The subject of this process's own certificate (configure_ssl()), or "".
std::string own_subject();

/// Whether configure_ssl() has run in this process.
bool ssl_configured() noexcept;

/// Server side, after ORB_init (of every ORB: omniORB forgets interceptors
/// when an ORB is destroyed): records, for every incoming request, the
/// verified subject of the client's certificate and the client's address so
/// that the servant's upcall can ask caller_subject(), caller_address() and
/// caller_client(). Idempotent.
void install_caller_identity();

/// Who sent the request this omniORB thread is serving: the RFC 2253
/// subject of its verified certificate; "" for a plain TCP connection or an
/// in-process call.
std::string caller_subject();

/// The address the request this omniORB thread is serving came from, as
/// omniORB sees the connection, without the port ("127.0.0.1", "::1"); ""
/// for an in-process call.
std::string caller_address();

/// The host part of an omniORB peer address: "giop:tcp:10.0.0.7:41234" ->
/// "10.0.0.7", "giop:ssl:[::1]:41234" -> "::1", "giop:unix:/tmp/s" ->
/// "local" (every client of a Unix socket is on this host).
std::string host_of_peer(const std::string& peer);

/// The client to which per-client limits apply: caller_subject() when TLS
/// identified it, else caller_address(); "local" for an in-process call.
std::string caller_client();

/// The last TLS failure omniORB's SSL transport met in this process (a
/// certificate that did not verify, a fatal alert from the peer), or "".
/// omniORB itself only reports TRANSIENT; this says why.
std::string last_ssl_failure();

}  // namespace blobstreaming::corba
