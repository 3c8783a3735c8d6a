#include "HttpServer.h"

#include "Uuid.h"
#include "blobstreaming/sdc/SdcError.h"

#include <algorithm>
#include <cerrno>
#include <list>
#include <optional>
#include <unordered_map>


namespace blobstreaming::sdc {

/// A session as the caps see it.
class Connection {
public:
    virtual ~Connection() = default;
    /// Closes the connection at once: its slot goes to a newcomer.
    virtual void evict() = 0;
};

/// The caps of HttpServerOptions: open connections per peer address and in
/// all, and which connections are idle (no request under way), oldest idle
/// first. The same rule as the data port's ConnectionLimits
/// (blobstore/src/server/), which sdc/ cannot include (tests/test_layers.py:
/// sdc/ sits below blobstore/ and uses only common/), with one difference:
/// an SDC request proves nothing (no ticket), so the per-peer cap counts
/// every open connection and the total cap evicts the longest idle one,
/// whether it has made requests before or not.
class HttpServer::Admission {
public:
    explicit Admission(const HttpServerOptions& o) : per_peer_cap_(o.max_connections_per_peer), cap_(o.max_connections)
    {}

    /// Counts `c` from `peer` as open and idle, evicting the longest idle
    /// connection when the total cap is reached. False (nothing counted):
    /// refuse `c`, the peer holds its cap or every slot has a request under way.
    bool admit(Connection* c, const std::string& peer)
    {
        const auto from = per_peer_.find(peer);
        if (from != per_peer_.end() && from->second >= per_peer_cap_) return false;
        while (open_.size() >= cap_) {
            if (idle_.empty()) return false;
            Connection* oldest = idle_.front();
            remove(oldest);
            oldest->evict();
        }
        auto& entry = open_[c];
        entry.peer = peer;
        entry.idle = idle_.insert(idle_.end(), c);
        entry.is_idle = true;
        ++per_peer_[peer];
        return true;
    }

    /// `c` waits for a request: it becomes the newest idle connection.
    void idle(Connection* c)
    {
        const auto it = open_.find(c);
        if (it == open_.end()) return;
        if (it->second.is_idle) idle_.erase(it->second.idle);
        it->second.idle = idle_.insert(idle_.end(), c);
        it->second.is_idle = true;
    }

    /// A request of `c` is under way: it is not evicted meanwhile.
    void busy(Connection* c)
    {
        const auto it = open_.find(c);
        if (it == open_.end() || !it->second.is_idle) return;
        idle_.erase(it->second.idle);
        it->second.is_idle = false;
    }

    /// `c` is closed (unknown or already removed: nothing happens).
    void remove(Connection* c)
    {
        const auto it = open_.find(c);
        if (it == open_.end()) return;
        if (it->second.is_idle) idle_.erase(it->second.idle);
        const auto from = per_peer_.find(it->second.peer);
        if (from != per_peer_.end() && --from->second == 0) per_peer_.erase(from);
        open_.erase(it);
    }

private:
    struct Entry {
        std::string peer;
        std::list<Connection*>::iterator idle;
        bool is_idle = false;
    };

    std::size_t per_peer_cap_;
    std::size_t cap_;
    std::unordered_map<Connection*, Entry> open_;
    std::list<Connection*> idle_;  ///< idle connections, longest idle first
    std::unordered_map<std::string, std::size_t> per_peer_;
};

namespace {

/// Connections accepted and closed in one go when out of descriptors.
constexpr int kDropBurst = 64;
/// How long the port is not watched after running out of descriptors.
constexpr std::chrono::milliseconds kOutOfDescriptorsPause{100};
/// ... and after another accept error.
constexpr std::chrono::milliseconds kErrorPause{50};

tcp::socket& socket_of(beast::tcp_stream& s) { return s.socket(); }
tcp::socket& socket_of(tls_stream& s) { return beast::get_lowest_layer(s).socket(); }

/// The peer's IP address as the per-peer cap counts it (an IPv4-mapped
/// IPv6 address as the IPv4 one: one peer, one key).
std::string peer_of(const tcp::socket& socket)
{
    beast::error_code ec;
    auto address = socket.remote_endpoint(ec).address();
    if (ec) return "unknown";
    if (address.is_v6() && address.to_v6().is_v4_mapped())
        address = net::ip::make_address_v4(net::ip::v4_mapped, address.to_v6());
    return address.to_string();
}

bool out_of_resources(const beast::error_code& ec)
{
    return ec.category() == net::error::get_system_category() && out_of_descriptors(ec.value());
}

/// One keep-alive HTTP connection: (TLS handshake,) wait for a request (idle
/// timeout), read its header (header timeout; t2), read the body (body
/// limit), answer with header and body in one gather write, repeat. Until
/// its first request is read completely, one deadline bounds it all: the
/// handshake timeout from connecting. Counted by the server's Admission
/// until close(), and idle there while waiting for a request.
template <class Stream>
class HttpSession final : public Connection, public std::enable_shared_from_this<HttpSession<Stream>> {
public:
    template <class... Args>
    HttpSession(RequestHandler& handler, const HttpServerOptions& options,
                std::shared_ptr<HttpServer::Admission> admission, Args&&... args)
        : stream_(std::forward<Args>(args)...), handler_(handler), options_(options),
          admission_(std::move(admission)),
          first_deadline_(net::steady_timer::clock_type::now() + options.handshake_timeout)
    {}

    ~HttpSession() override { admission_->remove(this); }

    void evict() override { close(); }

    void start()
    {
        if constexpr (std::is_same_v<Stream, tls_stream>) {
            // The handshake counts toward the first request's deadline (a silent peer is dropped).
            beast::get_lowest_layer(stream_).expires_at(first_deadline_);
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
        admission_->idle(this);
        if (buffer_.size() > 0) {
            read_header();
            return;
        }
        if (first_) beast::get_lowest_layer(stream_).expires_at(first_deadline_);
        else beast::get_lowest_layer(stream_).expires_after(options_.idle_timeout);
        stream_.async_read_some(buffer_.prepare(16 * 1024),
                                [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
                                    if (ec) return self->close();
                                    self->buffer_.commit(n);
                                    self->read_header();
                                });
    }

    void read_header()
    {
        // The first request is bounded by both deadlines, whichever comes first.
        const auto header_deadline = net::steady_timer::clock_type::now() + options_.header_timeout;
        beast::get_lowest_layer(stream_).expires_at(first_ ? std::min(first_deadline_, header_deadline)
                                                           : header_deadline);
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
        admission_->busy(this);
        http::async_read(stream_, buffer_, *parser_,
                         [self = this->shared_from_this()](beast::error_code e, std::size_t) { self->on_request(e); });
    }

    void on_request(beast::error_code ec)
    {
        if (ec == http::error::body_limit)
            return respond(handler_.reject(413, "request body larger than the limit of " +
                                                    std::to_string(options_.max_body_bytes) + " bytes"));
        if (ec) return close();
        first_ = false;
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
        admission_->remove(this);
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
    std::shared_ptr<HttpServer::Admission> admission_;
    const net::steady_timer::time_point first_deadline_;
    bool first_ = true;  ///< the first request has not been read completely yet
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
    : io_(io), handler_(handler), options_(std::move(options)), acceptor_(io), accept_retry_(io),
      admission_(std::make_shared<Admission>(options_))
{
    if (options_.max_connections < 1 || options_.max_connections_per_peer < 1)
        throw SdcError(Errc::invalid_argument, "server on " + address + ": max_connections (" +
                                                   std::to_string(options_.max_connections) +
                                                   ") and max_connections_per_peer (" +
                                                   std::to_string(options_.max_connections_per_peer) +
                                                   ") must be at least 1");
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
    if (!ec) acceptor_.non_blocking(true, ec);  // shed_pending() accepts without waiting
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
        if (out_of_resources(ec)) return shed_pending();
        if (ec) return accept_later(kErrorPause);  // e.g. a connection reset before it was accepted
        admit(std::move(socket));
        accept();
    });
}

void HttpServer::admit(tcp::socket socket)
{
    const std::string peer = peer_of(socket);
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    const auto start = [this, &peer](auto session) {
        if (admission_->admit(session.get(), peer)) session->start();
        // else refused: the socket is closed as `session` goes
    };
    if (options_.tls)
        start(std::make_shared<HttpSession<tls_stream>>(handler_, options_, admission_, std::move(socket),
                                                        *options_.tls));
    else start(std::make_shared<HttpSession<beast::tcp_stream>>(handler_, options_, admission_, std::move(socket)));
}

void HttpServer::shed_pending()
{
    // The pending clients would wait in the backlog until their own timeout
    // and keep the port readable: accept and close them with the descriptors
    // kept in reserve for that, then pause.
    reserve_.shed_pending(acceptor_.native_handle(), kDropBurst);
    accept_later(kOutOfDescriptorsPause);
}

void HttpServer::accept_later(std::chrono::milliseconds pause)
{
    accept_retry_.expires_after(pause);
    accept_retry_.async_wait([this](beast::error_code e) {
        if (e) return;
        reserve_.refill();
        accept();
    });
}

}  // namespace blobstreaming::sdc
