#pragma once
// OpenSSL contexts of the SDC module (IEEE 11073-20701: TLS with mutual
// authentication): both sides present a certificate and verify the peer's
// against the CA file. Internal.

#include "Asio.h"

#include <blobstreaming/common/TlsFiles.h>

#include <memory>
#include <string>

namespace blobstreaming::sdc {

/// A TLS 1.2+ context that presents `files.cert`/`files.key` and requires
/// and verifies the peer's certificate against `files.ca` (a server refuses
/// a client without one). Null when `files` is not enabled. Throws
/// SdcError(invalid_argument) naming the file and OpenSSL's reason.
std::shared_ptr<ssl::context> make_tls_context(const TlsFiles& files, bool server);

/// Makes the client side of `stream` check that the server's certificate is
/// for `host` (the host of the URL it connects to): its IP SAN when `host` is
/// an IP address, else its DNS SAN (or CN without DNS SANs), and sends `host`
/// as SNI when it is a name. Call before the handshake. When the handshake
/// fails on the name, the returned string (filled in during the handshake)
/// says which host was expected and which names the certificate has;
/// it stays empty for any other failure.
std::shared_ptr<std::string> expect_server_name(tls_stream& stream, const std::string& host);

}  // namespace blobstreaming::sdc
