#pragma once
/// The house policy of every TLS context we make: the data plane's
/// (transporter/Tls.h), omniORB's on the control plane
/// (transporter/corba/Security.cpp) and the SDC provider's and consumer's
/// (sdc/src/Tls.cpp). One function, so that the three cannot drift apart in
/// what they accept or in how they say which file failed.

#include <blobstreaming/common/TlsFiles.h>

#include <string>

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace blobstreaming {

/// Applies the policy to `ctx` (an SSL_CTX of either role): nothing older
/// than TLS 1.2, no renegotiation, `files.cert` as this side's certificate
/// chain with the key `files.key`, peers verified against `files.ca` and
/// required to present a certificate (SSL_VERIFY_PEER |
/// SSL_VERIFY_FAIL_IF_NO_PEER_CERT, without a callback: a caller that wants
/// one sets the same mode with it). `files` must be complete
/// (TlsFiles::check()). Throws Error(Errc::invalid_argument) naming the file
/// that failed: `TLS certificate "F": reason`, `TLS key "K": reason`, `TLS
/// key "K" does not match the certificate "C"`, `TLS CA file "F": reason`.
/// Clears this thread's OpenSSL error queue first.
void apply_tls_policy(ssl_ctx_st* ctx, const TlsFiles& files);

/// Drains OpenSSL's error queue of this thread into one line ("unknown TLS
/// error" when it is empty).
std::string openssl_errors();

}  // namespace blobstreaming
