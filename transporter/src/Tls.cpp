#include <blobstreaming/transporter/Tls.h>

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/TlsPolicy.h>
#include <blobstreaming/transporter/SocketOptions.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace blobstreaming {

std::string certificate_subject(const void* cert)
{
    if (!cert) return {};
    X509_NAME* name = X509_get_subject_name(static_cast<const X509*>(cert));
    BIO* bio = BIO_new(BIO_s_mem());
    if (!bio) return {};
    X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string out(data, n > 0 ? static_cast<std::size_t>(n) : 0);
    BIO_free(bio);
    return out;
}

TlsContext::TlsContext(Role role, const TlsFiles& files) : role_(role)
{
    files.check("--tls-");
    ERR_clear_error();
    ctx_ = SSL_CTX_new(role == Role::server ? TLS_server_method() : TLS_client_method());
    if (!ctx_) throw Error(Errc::io_error, "cannot create a TLS context: " + openssl_errors());
    try {
        apply_tls_policy(ctx_, files);
        // The data plane's own: no session tickets (an unread TLS 1.3 ticket
        // would make a client's close reset the connection), and writes
        // that may be partial and resumed from a moved buffer.
        SSL_CTX_set_options(ctx_, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(ctx_, 0);
        SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    } catch (...) {
        SSL_CTX_free(ctx_);
        throw;
    }
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Channel::Channel(int fd) : fd_(fd) {}

Channel::Channel(int fd, const TlsContext& context, const std::string& peer_host) : fd_(fd)
{
    ignore_sigpipe();  // OpenSSL writes to the socket without MSG_NOSIGNAL
    ssl_ = SSL_new(context.native());
    if (!ssl_ || SSL_set_fd(ssl_, fd) != 1) {
        if (ssl_) SSL_free(ssl_);
        ssl_ = nullptr;
        throw Error(Errc::io_error, "cannot set up TLS on the connection: " + openssl_errors());
    }
    if (context.role() == TlsContext::Role::server) {
        SSL_set_accept_state(ssl_);
        return;
    }
    SSL_set_connect_state(ssl_);
    if (!peer_host.empty()) {
        X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
        unsigned char addr[16];
        const bool ip =
            ::inet_pton(AF_INET, peer_host.c_str(), addr) == 1 || ::inet_pton(AF_INET6, peer_host.c_str(), addr) == 1;
        if (ip) X509_VERIFY_PARAM_set1_ip_asc(param, peer_host.c_str());
        else X509_VERIFY_PARAM_set1_host(param, peer_host.c_str(), 0);
        if (!ip) {  // SNI carries names only
            std::string name = peer_host;
            SSL_ctrl(ssl_, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, name.data());
        }
    }
}

Channel::~Channel()
{
    if (ssl_) SSL_free(ssl_);
}

long Channel::result(int rc)
{
    want_write_ = false;
    const int err = SSL_get_error(ssl_, rc);
    switch (err) {
    case SSL_ERROR_WANT_READ: errno = EAGAIN; return -1;
    case SSL_ERROR_WANT_WRITE:
        want_write_ = true;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_SYSCALL:
        if (ERR_peek_error() == 0) {
            if (errno == 0) return 0;  // EOF without close_notify
            error_.clear();
            return -1;  // the socket's own error, errno as set
        }
        break;
    default: break;
    }
    const long verify = SSL_get_verify_result(ssl_);
    error_ = openssl_errors();
    if (verify != X509_V_OK && error_.find("certificate verify failed") != std::string::npos)
        error_ += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
    errno = EPROTO;
    return -1;
}

Channel::Handshake Channel::handshake()
{
    if (!ssl_ || established_) return Handshake::done;
    ERR_clear_error();
    const int rc = SSL_do_handshake(ssl_);
    if (rc == 1) {
        established_ = true;
        want_write_ = false;
        return Handshake::done;
    }
    if (result(rc) == 0) {
        error_ = "the peer closed the connection during the TLS handshake";
        return Handshake::failed;
    }
    if (errno == EAGAIN) return want_write_ ? Handshake::want_write : Handshake::want_read;
    if (error_.empty()) error_ = std::strerror(errno);
    return Handshake::failed;
}

long Channel::read(void* data, std::size_t size)
{
    if (!ssl_) return ::recv(fd_, data, size, MSG_DONTWAIT);
    ERR_clear_error();
    errno = 0;
    const int n = SSL_read(ssl_, data, static_cast<int>(std::min<std::size_t>(size, 1u << 30)));
    if (n > 0) {
        want_write_ = false;
        return n;
    }
    return result(n);
}

long Channel::write(const void* data, std::size_t size, bool more)
{
    if (!ssl_) return ::send(fd_, data, size, MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));
    ERR_clear_error();
    errno = 0;
    const int n = SSL_write(ssl_, data, static_cast<int>(std::min<std::size_t>(size, 1u << 30)));
    if (n > 0) {
        want_write_ = false;
        return n;
    }
    const long r = result(n);
    if (r == 0) {  // close_notify received while writing: the peer is gone
        errno = EPIPE;
        return -1;
    }
    return r;
}

long Channel::probe()
{
    if (!ssl_) {
        char byte;
        return ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    }
    ERR_clear_error();
    errno = 0;
    char byte;
    const int n = SSL_peek(ssl_, &byte, 1);
    if (n > 0) return n;
    return result(n);
}

std::size_t Channel::pending() const noexcept { return ssl_ ? static_cast<std::size_t>(SSL_pending(ssl_)) : 0; }

void Channel::close_notify() noexcept
{
    if (!ssl_ || !established_) return;
    ERR_clear_error();
    SSL_shutdown(ssl_);
    ERR_clear_error();
}

std::string TlsContext::subject() const { return certificate_subject(SSL_CTX_get0_certificate(ctx_)); }

std::string Channel::peer_subject() const
{
    if (!ssl_) return {};
    X509* cert = SSL_get1_peer_certificate(ssl_);
    std::string out = certificate_subject(cert);
    X509_free(cert);
    return out;
}

std::string Channel::error_text(int err) const
{
    if (ssl_ && err == EPROTO && !error_.empty()) return "TLS: " + error_;
    return std::strerror(err);
}

}  // namespace blobstreaming
