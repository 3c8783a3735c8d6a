#include <blobstreaming/transporter/corba/Security.h>

#include "InstallInterceptor.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/TlsPolicy.h>

#include <omniORB4/CORBA.h>
#include <omniORB4/omniInterceptors.h>
#include <omniORB4/sslContext.h>

#include <blobstreaming/transporter/Log.h>

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <cstdio>
#include <mutex>

namespace blobstreaming::corba {
namespace {

std::atomic<bool> configured{false};
std::mutex failure_mutex;
std::string failure;  // guarded by failure_mutex
std::string own;      // guarded by failure_mutex
thread_local std::string current_subject;
thread_local std::string current_address;

std::atomic<bool> server_side{false};

void record_failure(std::string text)
{
    // A daemon says who was refused; a client reports it in its error.
    if (server_side) library_log()->warn("control connection: {}", text);
    else library_log()->debug("control connection: {}", text);
    std::lock_guard<std::mutex> lock(failure_mutex);
    failure = std::move(text);
}

/// Called by OpenSSL for each certificate of the peer's chain.
int on_verify(int ok, X509_STORE_CTX* store)
{
    if (!ok) {
        const int err = X509_STORE_CTX_get_error(store);
        const std::string subject = certificate_subject(X509_STORE_CTX_get_current_cert(store));
        record_failure("certificate verify failed (" + std::string(X509_verify_cert_error_string(err)) +
                       (subject.empty() ? std::string() : "; certificate \"" + subject + "\"") + ")");
    }
    return ok;
}

/// Records fatal alerts: the peer refusing our certificate arrives as one.
void on_info(const SSL*, int where, int ret)
{
    if (!(where & SSL_CB_ALERT) || std::string(SSL_alert_type_string(ret)) != "F") return;
    const std::string desc = SSL_alert_desc_string_long(ret);
    if (where & SSL_CB_READ) record_failure("the peer refused the TLS handshake: " + desc);
}

/// omniORB's context under the house policy (apply_tls_policy: the
/// certificate and the key in separate files, nothing older than TLS 1.2).
/// omniORB calls set_supported_versions() first, then the certificate, key
/// and CA hooks, then sets set_verify_mode() with its verify callback: the
/// policy is applied whole in the first, the others have nothing left to do.
class Context final : public sslContext {
public:
    explicit Context(TlsFiles files) : sslContext(nullptr, nullptr, nullptr), files_(std::move(files)) {}

protected:
    void set_supported_versions() override
    {
        try {
            apply_tls_policy(get_SSL_CTX(), files_);
        } catch (const std::exception& e) {
            // configure_ssl() checked the files: one changed since. Not
            // thrown through omniORB's start-up; handshakes fail instead.
            library_log()->error("control plane TLS: {}", e.what());
        }
    }
    void set_certificate() override {}
    void set_privatekey() override {}
    void set_CA() override {}
    int set_verify_mode() override { return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT; }

private:
    TlsFiles files_;
};

CORBA::Boolean on_receive_request(omni::omniInterceptors::serverReceiveRequest_T::info_T& info)
{
    current_subject = configured ? certificate_subject(info.peerdetails()) : std::string();
    current_address = info.peeraddress() ? host_of_peer(info.peeraddress()) : std::string();
    return true;
}

CORBA::Boolean on_send_reply(omni::omniInterceptors::serverSendReply_T::info_T&)
{
    current_subject.clear();
    current_address.clear();
    return true;
}

CORBA::Boolean on_send_exception(omni::omniInterceptors::serverSendException_T::info_T&)
{
    current_subject.clear();
    current_address.clear();
    return true;
}

}  // namespace

void configure_ssl(const TlsFiles& files)
{
    // The same checks as the data plane, so that a bad file is reported by
    // name here rather than as omniORB's INITIALIZE.
    TlsContext check(TlsContext::Role::server, files);
    sslContext::full_peerdetails = false;  // peerdetails() is the X509*
    sslContext::verify_mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    sslContext::verify_callback = &on_verify;
    sslContext::info_callback = &on_info;
    // omniORB owns the singleton and deletes it when the ORB is destroyed:
    // a later ORB needs a new one.
    if (!sslContext::singleton) sslContext::singleton = new Context(files);
    if (FILE* f = std::fopen(files.cert.c_str(), "r")) {
        X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
        std::fclose(f);
        std::lock_guard<std::mutex> lock(failure_mutex);
        own = certificate_subject(cert);
        X509_free(cert);
    }
    configured = true;
}

std::string own_subject()
{
    std::lock_guard<std::mutex> lock(failure_mutex);
    return own;
}

bool ssl_configured() noexcept { return configured.load(); }

void install_caller_identity()
{
    server_side = true;
    omni::omniInterceptors* interceptors = omniORB::getInterceptors();
    install_interceptor(interceptors->serverReceiveRequest, &on_receive_request);
    install_interceptor(interceptors->serverSendReply, &on_send_reply);
    install_interceptor(interceptors->serverSendException, &on_send_exception);
}

std::string caller_subject() { return current_subject; }

std::string host_of_peer(const std::string& peer)
{
    std::string a = peer;
    if (a.rfind("giop:", 0) == 0) {
        const auto colon = a.find(':', 5);
        const std::string transport = a.substr(5, colon == std::string::npos ? std::string::npos : colon - 5);
        if (transport == "unix") return "local";
        a = colon == std::string::npos ? std::string() : a.substr(colon + 1);
    }
    if (!a.empty() && a.front() == '[') {
        const auto close = a.find(']');
        return close == std::string::npos ? a : a.substr(1, close - 1);
    }
    const auto port = a.rfind(':');
    return port == std::string::npos ? a : a.substr(0, port);
}

std::string caller_address() { return current_address; }

std::string caller_client()
{
    if (!current_subject.empty()) return current_subject;
    if (!current_address.empty()) return current_address;
    return "local";
}

std::string last_ssl_failure()
{
    std::lock_guard<std::mutex> lock(failure_mutex);
    return failure;
}

}  // namespace blobstreaming::corba
