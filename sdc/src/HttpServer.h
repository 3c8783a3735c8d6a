#pragma once
// The HTTP/1.1 server under the provider and under a consumer's event sink:
// keep-alive sessions on Boost.Beast, plain or TLS, each request handed to a
// RequestHandler that knows nothing about the network. Connections are
// capped per peer and in all, and bounded in time (HttpServerOptions).

#include "Asio.h"

#include <blobstreaming/common/DescriptorReserve.h>
#include <blobstreaming/common/UniqueFd.h>

#include <chrono>
#include <cstddef>
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

/// The defaults are those of blobstored's data port (docs/SECURITY.md): a
/// connection costs a descriptor before it has sent anything, and the
/// descriptors are shared with the rest of the process.
struct HttpServerOptions {
    std::uint64_t max_body_bytes = 4 * 1024 * 1024;
    /// From connecting to the first request read completely (TLS handshake
    /// included); a connection that has not sent one by then is closed.
    std::chrono::milliseconds handshake_timeout{5000};
    /// A request (header and body) must arrive completely within this time
    /// once its first byte did (the first request also within
    /// handshake_timeout); also the bound on writing an answer.
    std::chrono::milliseconds header_timeout{10000};
    /// A keep-alive connection idle between requests is closed after this.
    std::chrono::milliseconds idle_timeout{60000};
    /// Open connections from one IP address: a newcomer beyond it is closed
    /// at once (the peer is the one flooding).
    std::size_t max_connections_per_peer = 64;
    /// Open connections in all: a newcomer beyond it takes the slot of the
    /// connection idle longest (no request under way: waiting for its first
    /// or next request), which is closed; with none idle it is closed.
    std::size_t max_connections = 1024;
    /// Non-null: every connection is TLS with this (server) context, which
    /// decides whether client certificates are required.
    std::shared_ptr<ssl::context> tls;
    /// TLS: called on the server's I/O thread with OpenSSL's reason when a
    /// client's handshake fails (e.g. the client refused this server's
    /// certificate). Anyone can cause one: a hint, not a verdict.
    std::function<void(const std::string& reason)> on_handshake_failure;
};

/// Listens on one address; the acceptor and the sessions run on `io`, which
/// must be run by one thread (the caps' bookkeeping is not locked). Not
/// copyable.
///
/// Never spins: when the process is out of descriptors (EMFILE, ENFILE,
/// ENOBUFS, ENOMEM) a descriptor kept in reserve is spent to accept and
/// close the pending connections, then the port is not watched for 100 ms.
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

    /// The caps' bookkeeping (HttpServer.cpp); shared with the sessions,
    /// which may outlive the server until the io_context is destroyed.
    class Admission;

private:
    void accept();
    void admit(tcp::socket socket);
    void shed_pending();  ///< out of descriptors: closes pending connections, pauses
    void accept_later(std::chrono::milliseconds pause);

    net::io_context& io_;
    RequestHandler& handler_;
    HttpServerOptions options_;
    tcp::acceptor acceptor_;
    net::steady_timer accept_retry_;
    std::shared_ptr<Admission> admission_;
    DescriptorReserve reserve_;  ///< given up to accept-and-close when out of descriptors
};

/// "HOST:PORT" split (localhost becomes 127.0.0.1); throws
/// SdcError(invalid_argument) naming the address.
std::pair<std::string, unsigned short> split_address(const std::string& address);

}  // namespace blobstreaming::sdc
