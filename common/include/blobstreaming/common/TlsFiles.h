#pragma once
/// Which PEM files make a program's TLS identity: plain data that the option
/// parsers of every tool, the client library and the daemon share. The
/// OpenSSL side (contexts, channels) is transporter/Tls.h.

#include <string>

namespace blobstreaming {

/// Certificate, private key and trusted CA, all PEM files. TLS is on when
/// any is set; then all three are required (check()).
struct TlsFiles {
    std::string cert;  ///< this side's certificate (may include the chain)
    std::string key;   ///< its private key, unencrypted
    std::string ca;    ///< the CA certificates that peers must chain to

    bool enabled() const noexcept { return !cert.empty() || !key.empty() || !ca.empty(); }
    /// Throws Error(invalid_argument) naming the missing option (`prefix`
    /// "--tls-" gives "--tls-key is required with --tls-cert ...").
    void check(const std::string& prefix) const;
};

}  // namespace blobstreaming
