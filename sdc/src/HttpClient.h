#pragma once
// An asynchronous keep-alive HTTP/1.1 client connection (plain or TLS) for
// the provider's notifications: one POST at a time, every step bounded by a
// timeout. Internal.

#include "Asio.h"
#include "Url.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace blobstreaming::sdc {

class ClientConnection : public std::enable_shared_from_this<ClientConnection> {
public:
    /// `done` runs exactly once per post(), on `executor`: `ec` is set when
    /// the exchange failed (connect, TLS handshake, write, read, timeout),
    /// otherwise `status` is the HTTP status. `reused` tells whether the
    /// exchange ran on a connection that had served an earlier one (a failure
    /// there may just be the peer having closed an idle connection).
    using Done = std::function<void(beast::error_code ec, unsigned status, bool reused)>;

    /// `tls` non-null: https (required when `target.tls`).
    ClientConnection(net::any_io_executor executor, Url target, std::shared_ptr<ssl::context> tls,
                     std::chrono::milliseconds timeout);

    /// POSTs `body` (a SOAP envelope) to the target's host and `path`.
    /// Must not be called while a post is in progress.
    void post(const std::string& path, std::string body, Done done);
    /// Closes the connection (a later post() reconnects).
    void close();
    const Url& target() const { return target_; }
    /// After a post() whose TLS handshake failed on the server's
    /// certificate: why it did not verify ("the server's certificate is not
    /// for 127.0.0.1 (its names: …)", "unsuitable certificate purpose");
    /// empty otherwise.
    const std::string& verify_failure() const { return verify_failure_; }

private:
    void connect();
    void write();
    void finish(beast::error_code ec);
    beast::tcp_stream& lowest();

    net::any_io_executor executor_;
    Url target_;
    std::shared_ptr<ssl::context> tls_context_;
    std::chrono::milliseconds timeout_;
    tcp::resolver resolver_;
    std::unique_ptr<beast::tcp_stream> plain_;
    std::unique_ptr<tls_stream> tls_;
    std::shared_ptr<std::string> name_mismatch_;
    std::string verify_failure_;
    bool connected_ = false;
    bool reused_ = false;
    beast::flat_buffer buffer_;
    http::request<http::string_body> request_;
    std::optional<http::response_parser<http::string_body>> parser_;
    Done done_;
};

}  // namespace blobstreaming::sdc
