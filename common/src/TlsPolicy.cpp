#include <blobstreaming/common/TlsPolicy.h>

#include <blobstreaming/common/Error.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace blobstreaming {
namespace {

[[noreturn]] void fail_file(const std::string& what, const std::string& file)
{
    throw Error(Errc::invalid_argument, "TLS " + what + " \"" + file + "\": " + openssl_errors());
}

[[noreturn]] void key_mismatch(const TlsFiles& files)
{
    throw Error(Errc::invalid_argument,
                "TLS key \"" + files.key + "\" does not match the certificate \"" + files.cert + "\"");
}

}  // namespace

std::string openssl_errors()
{
    std::string out;
    while (const unsigned long e = ERR_get_error()) {
        const char* reason = ERR_reason_error_string(e);
        std::string text = reason ? reason : ("error " + std::to_string(e));
        if (out.find(text) != std::string::npos) continue;
        out += (out.empty() ? "" : "; ") + text;
    }
    return out.empty() ? std::string("unknown TLS error") : out;
}

void apply_tls_policy(SSL_CTX* ctx, const TlsFiles& files)
{
    ERR_clear_error();
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1) fail_file("certificate", files.cert);
    if (SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
        const std::string why = openssl_errors();
        if (why.find("key values mismatch") != std::string::npos) key_mismatch(files);
        throw Error(Errc::invalid_argument, "TLS key \"" + files.key + "\": " + why);
    }
    if (SSL_CTX_check_private_key(ctx) != 1) key_mismatch(files);
    if (SSL_CTX_load_verify_locations(ctx, files.ca.c_str(), nullptr) != 1) fail_file("CA file", files.ca);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
}

}  // namespace blobstreaming
