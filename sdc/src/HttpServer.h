#pragma once
// The HTTP/1.1 server under the provider and under a consumer's event sink:
// keep-alive sessions on Boost.Beast, plain or TLS, each request handed to a
// RequestHandler that knows nothing about the network.

#include "Asio.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace blobstreaming::sdc {

struct HttpReply {
    unsigned status = 200;
    std::string content_type = "application/soap+xml; charset=utf-8";
    std::string body;
    /// MessageID of the request (for record_sent); empty if it had none.
    std::string request_id;
    /// Close the connection after this reply.
    bool close = false;
};

/// What a server does with requests. Called on the server's I/O thread.
class RequestHandler {
public:
    virtual ~RequestHandler() = default;
    /// A POST to `target`; `t2` is when its HTTP header had been received.
    virtual HttpReply post(std::string_view target, std::string_view body, long long t2) = 0;
    virtual HttpReply get(std::string_view target) = 0;
    /// A reply for a request rejected at the HTTP layer (e.g. body too large).
    virtual HttpReply reject(unsigned status, const std::string& reason) = 0;
    /// The reply to `request_id` is being handed to the socket at `t4`.
    virtual void record_sent(const std::string& request_id, long long t4) = 0;
};

struct HttpServerOptions {
    std::uint64_t max_body_bytes = 4 * 1024 * 1024;
    std::chrono::milliseconds header_timeout{10000};
    std::chrono::milliseconds idle_timeout{300000};
    /// Non-null: every connection is TLS with this (server) context, which
    /// decides whether client certificates are required.
    std::shared_ptr<ssl::context> tls;
    /// TLS: called on the server's I/O thread with OpenSSL's reason when a
    /// client's handshake fails (e.g. the client refused this server's
    /// certificate). Anyone can cause one: a hint, not a verdict.
    std::function<void(const std::string& reason)> on_handshake_failure;
};

/// Listens on one address; sessions run on `io`'s threads. Not copyable.
class HttpServer {
public:
    /// Binds and listens; throws SdcError(invalid_argument / unreachable)
    /// naming the address and the reason. Accepting starts with start().
    HttpServer(net::io_context& io, const std::string& address, RequestHandler& handler, HttpServerOptions options);
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    void start();
    /// "HOST:PORT" actually bound.
    std::string address() const;
    tcp::endpoint endpoint() const;
    bool tls() const { return options_.tls != nullptr; }

private:
    void accept();

    net::io_context& io_;
    RequestHandler& handler_;
    HttpServerOptions options_;
    tcp::acceptor acceptor_;
    net::steady_timer accept_retry_;
};

/// "HOST:PORT" split (localhost becomes 127.0.0.1); throws
/// SdcError(invalid_argument) naming the address.
std::pair<std::string, unsigned short> split_address(const std::string& address);

}  // namespace blobstreaming::sdc
