#include "HttpServer.h"

#include "Uuid.h"
#include "blobstreaming/sdc/SdcError.h"

#include <optional>

namespace blobstreaming::sdc {

namespace {

tcp::socket& socket_of(beast::tcp_stream& s) { return s.socket(); }
tcp::socket& socket_of(tls_stream& s) { return beast::get_lowest_layer(s).socket(); }

/// One keep-alive HTTP connection: (TLS handshake,) wait for a request (idle
/// timeout), read its header (header timeout; t2), read the body (body
/// limit), answer with header and body in one gather write, repeat.
template <class Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
public:
    template <class... Args>
    HttpSession(RequestHandler& handler, const HttpServerOptions& options, Args&&... args)
        : stream_(std::forward<Args>(args)...), handler_(handler), options_(options)
    {}

    void start()
    {
        if constexpr (std::is_same_v<Stream, tls_stream>) {
            // The handshake is bounded like a request header (a silent peer is dropped).
            beast::get_lowest_layer(stream_).expires_after(options_.header_timeout);
            stream_.async_handshake(ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code ec) {
                if (ec) {
                    if (self->options_.on_handshake_failure && ec != beast::error::timeout)
                        self->options_.on_handshake_failure(ec.message());
                    return self->close();
                }
                self->wait_for_request();
            });
        } else {
            wait_for_request();
        }
    }

private:
    void wait_for_request()
    {
        parser_.emplace();
        parser_->header_limit(16 * 1024);
        parser_->body_limit(options_.max_body_bytes);
        if (buffer_.size() > 0) {
            read_header();
            return;
        }
        beast::get_lowest_layer(stream_).expires_after(options_.idle_timeout);
        stream_.async_read_some(buffer_.prepare(16 * 1024),
                                [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
                                    if (ec) return self->close();
                                    self->buffer_.commit(n);
                                    self->read_header();
                                });
    }

    void read_header()
    {
        beast::get_lowest_layer(stream_).expires_after(options_.header_timeout);
        http::async_read_header(
            stream_, buffer_, *parser_,
            [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
    }

    void on_header(beast::error_code ec)
    {
        t2_ = monotonic_ns();
        if (ec == http::error::body_limit)
            return respond(handler_.reject(413, "request body larger than the limit of " +
                                                    std::to_string(options_.max_body_bytes) + " bytes"));
        if (ec == http::error::header_limit)
            return respond(handler_.reject(431, "request header larger than 16384 bytes"));
        if (ec) {
            if (ec != beast::error::timeout && ec != http::error::end_of_stream && ec != net::error::eof &&
                ec != net::error::connection_reset && ec.category() != net::error::get_ssl_category() &&
                ec != net::ssl::error::stream_truncated)
                return respond(handler_.reject(400, "malformed HTTP request: " + ec.message()));
            return close();
        }
        http::async_read(stream_, buffer_, *parser_,
                         [self = this->shared_from_this()](beast::error_code e, std::size_t) { self->on_request(e); });
    }

    void on_request(beast::error_code ec)
    {
        if (ec == http::error::body_limit)
            return respond(handler_.reject(413, "request body larger than the limit of " +
                                                    std::to_string(options_.max_body_bytes) + " bytes"));
        if (ec) return close();
        http::request<http::string_body> request = parser_->release();
        keep_alive_ = request.keep_alive();
        const std::string_view target(request.target().data(), request.target().size());
        HttpReply reply;
        if (request.method() == http::verb::post) reply = handler_.post(target, request.body(), t2_);
        else if (request.method() == http::verb::get) reply = handler_.get(target);
        else reply = handler_.reject(405, "HTTP method " + std::string(request.method_string()) + " is not served");
        respond(std::move(reply));
    }

    void respond(HttpReply reply)
    {
        close_after_ = reply.close || !keep_alive_;
        response_ = {};
        response_.version(11);
        response_.result(reply.status);
        response_.set(http::field::server, "blobstreaming-sdc");
        if (!reply.body.empty() || reply.status != 202) response_.set(http::field::content_type, reply.content_type);
        response_.keep_alive(!close_after_);
        response_.body() = std::move(reply.body);
        response_.prepare_payload();
        beast::get_lowest_layer(stream_).expires_after(options_.header_timeout);
        handler_.record_sent(reply.request_id, monotonic_ns());
        http::async_write(stream_, response_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec || self->close_after_) return self->close();
            self->wait_for_request();
        });
    }

    void close()
    {
        beast::error_code ec;
        socket_of(stream_).shutdown(tcp::socket::shutdown_send, ec);
        socket_of(stream_).close(ec);
    }

    Stream stream_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    http::response<http::string_body> response_;
    RequestHandler& handler_;
    const HttpServerOptions& options_;
    long long t2_ = 0;
    bool keep_alive_ = true;
    bool close_after_ = false;
};

}  // namespace

std::pair<std::string, unsigned short> split_address(const std::string& address)
{
    const auto colon = address.rfind(':');
    if (colon == std::string::npos || colon == 0)
        throw SdcError(Errc::invalid_argument, "address \"" + address + "\": expected HOST:PORT");
    std::string host = address.substr(0, colon);
    if (host == "localhost") host = "127.0.0.1";
    unsigned long port = 0;
    try {
        std::size_t used = 0;
        port = std::stoul(address.substr(colon + 1), &used);
        if (used != address.size() - colon - 1 || port > 65535) throw std::out_of_range("port");
    } catch (const std::exception&) {
        throw SdcError(Errc::invalid_argument, "address \"" + address + "\": the port must be 0..65535");
    }
    return {host, static_cast<unsigned short>(port)};
}

HttpServer::HttpServer(net::io_context& io, const std::string& address, RequestHandler& handler,
                       HttpServerOptions options)
    : io_(io), handler_(handler), options_(std::move(options)), acceptor_(io), accept_retry_(io)
{
    const auto [host, port] = split_address(address);
    boost::system::error_code ec;
    const auto ip = net::ip::make_address(host, ec);
    if (ec)
        throw SdcError(Errc::invalid_argument, "address \"" + address + "\": \"" + host + "\" is not an IP address");
    const tcp::endpoint endpoint(ip, port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) throw SdcError(Errc::unreachable, "cannot listen on " + address + ": " + ec.message());
}

void HttpServer::start() { accept(); }

tcp::endpoint HttpServer::endpoint() const { return acceptor_.local_endpoint(); }

std::string HttpServer::address() const
{
    const auto bound = acceptor_.local_endpoint();
    return bound.address().to_string() + ":" + std::to_string(bound.port());
}

void HttpServer::accept()
{
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted) return;
        if (ec) {
            // Out of descriptors or memory: try again a little later rather than spin.
            accept_retry_.expires_after(std::chrono::milliseconds(50));
            accept_retry_.async_wait([this](beast::error_code e) {
                if (!e) accept();
            });
            return;
        }
        beast::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        if (options_.tls)
            std::make_shared<HttpSession<tls_stream>>(handler_, options_, std::move(socket), *options_.tls)->start();
        else std::make_shared<HttpSession<beast::tcp_stream>>(handler_, options_, std::move(socket))->start();
        accept();
    });
}

}  // namespace blobstreaming::sdc
