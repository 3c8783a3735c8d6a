#pragma once
/// Which host a control-plane request came from, for limits per client
/// (openTransporter) when TLS gives no client identity.

#include <string>

namespace blobstreaming::corba {

/// Server side, after ORB_init: records, for every incoming request, the
/// address of the connection it came over, so that the servant's upcall can
/// ask caller_host(). Idempotent.
void install_caller_address();

/// The host of the client whose request this omniORB thread is serving
/// ("127.0.0.1", "::1"; "local" over a Unix socket); "" for an in-process
/// call or before install_caller_address().
std::string caller_host();

/// The host part of an omniORB peer address ("giop:tcp:127.0.0.1:4711",
/// "giop:ssl:[::1]:4711", "giop:unix:/tmp/x"). Exposed for tests.
std::string host_of_peer(const std::string& peer);

/// Who a limit per client counts: the caller's certificate subject over
/// TLS, otherwise its host.
std::string caller_identity();

}  // namespace blobstreaming::corba
