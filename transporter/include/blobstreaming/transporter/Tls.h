#pragma once
/// TLS for the data plane: an OpenSSL context built from PEM files and a
/// non-blocking byte channel over a connected socket that is either plain TCP
/// or TLS (an SSL object on the socket's descriptor). Internal header: never
/// installed; OpenSSL types appear only as opaque forward declarations.

#include <blobstreaming/common/TlsFiles.h>

#include <cstddef>
#include <memory>
#include <string>

struct ssl_ctx_st;
struct ssl_st;

namespace blobstreaming {

/// The subject of an X509 certificate as RFC 2253 text ("CN=ws1,O=Radiology");
/// the form access lists use. `cert` is an X509*; "" for null.
std::string certificate_subject(const void* cert);

/// An SSL_CTX: TLS 1.2 or later, peer verification against `ca` required in
/// both directions (servers demand a client certificate), no session tickets
/// (a TLS 1.3 ticket left unread in a client's socket makes its close reset
/// the connection and lose the tail). Thread-safe once built.
class TlsContext {
public:
    enum class Role { server, client };
    /// Loads and checks the files now. Throws Error(invalid_argument) naming
    /// the file and OpenSSL's reason (unreadable, not PEM, key does not match
    /// the certificate).
    TlsContext(Role role, const TlsFiles& files);
    ~TlsContext();
    TlsContext(const TlsContext&) = delete;
    TlsContext& operator=(const TlsContext&) = delete;

    Role role() const noexcept { return role_; }
    ssl_ctx_st* native() const noexcept { return ctx_; }
    /// The subject of its own certificate, as a peer's is named
    /// (certificate_subject): what the other end sees of this one.
    std::string subject() const;

private:
    Role role_;
    ssl_ctx_st* ctx_ = nullptr;
};

/// A connected, non-blocking socket seen as a byte stream, plain or TLS.
/// Does not own the descriptor. Reads and writes follow recv()/send():
/// > 0 bytes moved, 0 end of stream (read), -1 with errno set; EAGAIN means
/// "try again when the socket is ready" — for TLS, wants_write() says
/// whether that means writable rather than readable. Any other failure of a
/// TLS call sets errno to EPROTO and error_text() says what happened.
/// A TLS write that returned EAGAIN must be retried with at least as many
/// bytes (the same data; the buffer may move).
class Channel {
public:
    /// Plain TCP.
    explicit Channel(int fd);
    /// TLS over `fd` in the context's role; `peer_host` (client only, may be
    /// empty) is the host name or IP literal the server certificate must name.
    Channel(int fd, const TlsContext& context, const std::string& peer_host = {});
    ~Channel();
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

    bool tls() const noexcept { return ssl_ != nullptr; }
    int fd() const noexcept { return fd_; }

    enum class Handshake { done, want_read, want_write, failed };
    /// Drives the TLS handshake (plain: done at once). After `failed`,
    /// error_text() says why (e.g. certificate verify failed).
    Handshake handshake();
    bool handshake_done() const noexcept { return !ssl_ || established_; }

    long read(void* data, std::size_t size);
    /// `more`: more bytes follow at once (plain: MSG_MORE, so that a small
    /// frame leaves in one segment with the first of them; TLS: ignored).
    long write(const void* data, std::size_t size, bool more = false);
    /// Idle check without consuming: > 0 bytes are waiting, 0 the peer
    /// closed, -1 errno (EAGAIN: nothing yet).
    long probe();
    /// Decrypted bytes buffered inside the TLS layer: readable without the
    /// socket becoming readable again.
    std::size_t pending() const noexcept;
    bool wants_write() const noexcept { return want_write_; }

    /// Sends TLS close_notify (best effort, never blocks); plain: nothing.
    void close_notify() noexcept;

    /// The verified peer certificate's subject (RFC 2253); "" when plain or
    /// the peer sent none.
    std::string peer_subject() const;
    /// What the last failed call reported: "TLS: " and the TLS reason, else
    /// strerror.
    std::string error_text(int err) const;
    /// Why handshake() failed (no prefix).
    const std::string& handshake_error() const noexcept { return error_; }

private:
    long result(int rc);

    int fd_;
    ssl_st* ssl_ = nullptr;
    bool established_ = false;
    bool want_write_ = false;
    std::string error_;
};

}  // namespace blobstreaming
