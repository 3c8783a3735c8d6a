#include "Tls.h"

#include "blobstreaming/sdc/SdcError.h"

#include <blobstreaming/common/TlsPolicy.h>

#include <openssl/x509v3.h>

namespace blobstreaming::sdc {

std::shared_ptr<ssl::context> make_tls_context(const TlsFiles& files, bool server)
{
    if (!files.enabled()) return nullptr;
    try {
        files.check("--tls-");
    } catch (const Error& e) {
        throw SdcError(Errc::invalid_argument, e.what());
    }
    auto context = std::make_shared<ssl::context>(server ? ssl::context::tls_server : ssl::context::tls_client);
    context->set_options(ssl::context::default_workarounds);
    try {
        apply_tls_policy(context->native_handle(), files);
    } catch (const Error& e) {
        throw SdcError(Errc::invalid_argument, e.what());
    }
    return context;
}

namespace {

/// "DNS:a, IP:127.0.0.1" of the certificate's subjectAltName, or "CN=x" when
/// it has none.
std::string names_of(X509* cert)
{
    std::string names;
    const auto add = [&names](const std::string& n) { names += (names.empty() ? "" : ", ") + n; };
    auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
    for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans); ++i) {
        const GENERAL_NAME* n = sk_GENERAL_NAME_value(sans, i);
        if (n->type == GEN_DNS) {
            add("DNS:" + std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(n->d.dNSName)),
                                     static_cast<std::size_t>(ASN1_STRING_length(n->d.dNSName))));
        } else if (n->type == GEN_IPADD) {
            const int length = ASN1_STRING_length(n->d.iPAddress);
            const unsigned char* bytes = ASN1_STRING_get0_data(n->d.iPAddress);
            if (length == 4) {
                add("IP:" + net::ip::address_v4({bytes[0], bytes[1], bytes[2], bytes[3]}).to_string());
            } else if (length == 16) {
                net::ip::address_v6::bytes_type b;
                std::copy(bytes, bytes + 16, b.begin());
                add("IP:" + net::ip::address_v6(b).to_string());
            }
        }
    }
    if (sans) GENERAL_NAMES_free(sans);
    if (names.empty()) {
        char cn[256] = {};
        if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn) > 0)
            add(std::string("CN=") + cn);
    }
    return names.empty() ? "no names" : names;
}

}  // namespace

std::shared_ptr<std::string> expect_server_name(tls_stream& stream, const std::string& host)
{
    SSL* ssl = stream.native_handle();
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    boost::system::error_code ec;
    const auto ip = net::ip::make_address(host, ec);
    const int set = ec ? X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size())
                       : X509_VERIFY_PARAM_set1_ip_asc(param, ip.to_string().c_str());
    if (set != 1) throw SdcError(Errc::invalid_argument, "TLS: cannot check the server's certificate for " + host);
    // SNI: SSL_set_tlsext_host_name() is a macro with a C cast.
    if (ec)
        SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 static_cast<void*>(const_cast<char*>(host.c_str())));
    auto mismatch = std::make_shared<std::string>();
    stream.set_verify_callback([mismatch, host](bool preverified, ssl::verify_context& context) {
        X509_STORE_CTX* store = context.native_handle();
        const int error = X509_STORE_CTX_get_error(store);
        if (!preverified && (error == X509_V_ERR_HOSTNAME_MISMATCH || error == X509_V_ERR_IP_ADDRESS_MISMATCH))
            *mismatch = "the server's certificate is not for " + host +
                        " (its names: " + names_of(X509_STORE_CTX_get_current_cert(store)) + ")";
        return preverified;
    });
    return mismatch;
}

}  // namespace blobstreaming::sdc
