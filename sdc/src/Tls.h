#pragma once
// OpenSSL contexts of the SDC module (IEEE 11073-20701: TLS with mutual
// authentication): both sides present a certificate and verify the peer's
// against the CA file. Internal.

#include "Asio.h"

#include <blobstreaming/common/TlsFiles.h>

#include <memory>

namespace blobstreaming::sdc {

/// A TLS 1.2+ context that presents `files.cert`/`files.key` and requires
/// and verifies the peer's certificate against `files.ca` (a server refuses
/// a client without one). Null when `files` is not enabled. Throws
/// SdcError(invalid_argument) naming the file and OpenSSL's reason.
std::shared_ptr<ssl::context> make_tls_context(const TlsFiles& files, bool server);

}  // namespace blobstreaming::sdc
