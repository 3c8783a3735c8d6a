#include "blobstreaming/sdc/Provider.h"

#include "Asio.h"
#include "Discovery.h"
#include "ServiceHandler.h"
#include "Uuid.h"
#include "blobstreaming/sdc/SdcError.h"

#include <atomic>
#include <iostream>
#include <optional>
#include <thread>

namespace blobstreaming::sdc {

namespace {

/// One keep-alive HTTP connection: wait for a request (idle timeout), read
/// its header (header timeout; t2), read the body (body limit), answer with
/// header and body in one gather write, repeat.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
public:
    HttpSession(tcp::socket socket, ServiceHandler& handler, const ProviderOptions& options)
        : stream_(std::move(socket)), handler_(handler), options_(options)
    {}

    void start() { wait_for_request(); }

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
        stream_.expires_after(options_.idle_timeout);
        stream_.async_read_some(buffer_.prepare(16 * 1024),
                                [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                    if (ec) return self->close();
                                    self->buffer_.commit(n);
                                    self->read_header();
                                });
    }

    void read_header()
    {
        stream_.expires_after(options_.header_timeout);
        http::async_read_header(
            stream_, buffer_, *parser_,
            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
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
                ec != net::error::connection_reset)
                return respond(handler_.reject(400, "malformed HTTP request: " + ec.message()));
            return close();
        }
        http::async_read(stream_, buffer_, *parser_,
                         [self = shared_from_this()](beast::error_code e, std::size_t) { self->on_request(e); });
    }

    void on_request(beast::error_code ec)
    {
        if (ec == http::error::body_limit)
            return respond(handler_.reject(413, "request body larger than the limit of " +
                                                    std::to_string(options_.max_body_bytes) + " bytes"));
        if (ec) return close();
        http::request<http::string_body> request = parser_->release();
        keep_alive_ = request.keep_alive();
        HttpReply reply;
        if (request.method() == http::verb::post) reply = handler_.post(request.body(), t2_);
        else if (request.method() == http::verb::get)
            reply = handler_.get(std::string_view(request.target().data(), request.target().size()));
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
        response_.set(http::field::content_type, reply.content_type);
        response_.keep_alive(!close_after_);
        response_.body() = std::move(reply.body);
        response_.prepare_payload();
        stream_.expires_after(options_.header_timeout);
        handler_.record_sent(reply.request_id, monotonic_ns());
        http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec || self->close_after_) return self->close();
            self->wait_for_request();
        });
    }

    void close()
    {
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
        stream_.close();
    }

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    http::response<http::string_body> response_;
    ServiceHandler& handler_;
    const ProviderOptions& options_;
    long long t2_ = 0;
    bool keep_alive_ = true;
    bool close_after_ = false;
};

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

}  // namespace

class Provider::Impl {
public:
    Impl(Mdib mdib, ProviderOptions options)
        : mdib_(std::move(mdib)), options_(std::move(options)),
          handler_(mdib_, options_, options_.epr.empty() ? make_urn_uuid() : options_.epr), acceptor_(io_)
    {
        const auto [host, port] = split_address(options_.address);
        boost::system::error_code ec;
        const auto ip = net::ip::make_address(host, ec);
        if (ec)
            throw SdcError(Errc::invalid_argument,
                           "address \"" + options_.address + "\": \"" + host + "\" is not an IP address");
        const tcp::endpoint endpoint(ip, port);
        acceptor_.open(endpoint.protocol(), ec);
        if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
        if (!ec) acceptor_.bind(endpoint, ec);
        if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
        if (ec) throw SdcError(Errc::unreachable, "cannot listen on " + options_.address + ": " + ec.message());
        const auto bound = acceptor_.local_endpoint();
        address_ = bound.address().to_string() + ":" + std::to_string(bound.port());
        handler_.set_base_url("http://" + address_);
        if (options_.discovery) {
            try {
                discovery_.emplace(io_, bound.address().to_string(), handler_.epr(), device_url());
                discovery_->start();
                discovery_->send_hello();
            } catch (const std::exception& e) {
                discovery_.reset();
                std::cerr << "sdc: WS-Discovery disabled: cannot join 239.255.255.250:3702 on "
                          << bound.address().to_string() << ": " << e.what() << "\n";
            }
        }
        accept();
        thread_ = std::thread([this] { io_.run(); });
    }

    ~Impl() { stop(); }

    void stop()
    {
        if (stopped_.exchange(true)) return;
        io_.stop();
        if (thread_.joinable()) thread_.join();
        if (discovery_) {
            discovery_->send_bye();
            discovery_->close();
        }
    }

    std::string device_url() const { return handler_.base_url() + handler_.device_path(); }

    Mdib mdib_;
    ProviderOptions options_;
    ServiceHandler handler_;
    net::io_context io_;
    tcp::acceptor acceptor_;
    net::steady_timer accept_retry_{io_};
    std::optional<Discovery> discovery_;
    std::thread thread_;
    std::string address_;
    std::atomic<bool> stopped_{false};

private:
    void accept()
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
            std::make_shared<HttpSession>(std::move(socket), handler_, options_)->start();
            accept();
        });
    }
};

Provider::Provider(Mdib mdib, ProviderOptions options)
    : impl_(std::make_unique<Impl>(std::move(mdib), std::move(options)))
{}

Provider::~Provider() = default;

std::string Provider::address() const { return impl_->address_; }
std::string Provider::epr() const { return impl_->handler_.epr(); }
std::string Provider::device_url() const { return impl_->device_url(); }
void Provider::set_metric(const std::string& handle, double value) { impl_->mdib_.set_metric(handle, value); }
void Provider::set_metric(const std::string& handle, const std::string& value)
{
    impl_->mdib_.set_metric(handle, value);
}
const Mdib& Provider::mdib() const { return impl_->mdib_; }
void Provider::stop() { impl_->stop(); }

}  // namespace blobstreaming::sdc
