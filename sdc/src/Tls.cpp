#include "Tls.h"

#include "blobstreaming/sdc/SdcError.h"

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
    context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                         ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    const auto load = [](const char* what, const std::string& file, auto&& f) {
        boost::system::error_code ec;
        f(ec);
        if (ec)
            throw SdcError(Errc::invalid_argument,
                           std::string("TLS ") + what + " " + file + ": cannot load it: " + ec.message());
    };
    load("certificate", files.cert, [&](auto& ec) { context->use_certificate_chain_file(files.cert, ec); });
    load("key", files.key, [&](auto& ec) { context->use_private_key_file(files.key, ssl::context::pem, ec); });
    load("CA", files.ca, [&](auto& ec) { context->load_verify_file(files.ca, ec); });
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    return context;
}

}  // namespace blobstreaming::sdc
