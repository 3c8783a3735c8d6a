/// MetricsEndpoint (MetricsEndpoint.h): a small asynchronous HTTP server.
#include "MetricsEndpoint.h"

#include <blobstreaming/common/Error.h>

// GCC 12 reports a -Wnull-dereference inside Asio's scheduler once it is
// inlined here (as in sdc/src/Asio.h): not ours, silenced for these headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#pragma GCC diagnostic pop
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace blobstreaming::daemon {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr int kMaxSessions = 16;
constexpr std::chrono::seconds kSessionTimeout{10};
constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace

struct MetricsEndpoint::Impl {
    asio::io_context io{1};
    tcp::acceptor acceptor{io};
    std::function<std::string()> render;
    std::string address;
    std::atomic<int> sessions{0};
    std::thread thread;

    void accept();
};

namespace {

/// One connection: requests answered in turn (keep-alive) until the peer
/// closes, errs or stays silent for kSessionTimeout.
class Session : public std::enable_shared_from_this<Session> {
public:
    Session(tcp::socket socket, MetricsEndpoint::Impl& endpoint) : stream_(std::move(socket)), endpoint_(endpoint)
    {
        ++endpoint_.sessions;
    }
    ~Session() { --endpoint_.sessions; }

    void read()
    {
        request_ = {};
        stream_.expires_after(kSessionTimeout);
        http::async_read(stream_, buffer_, request_,
                         [self = shared_from_this()](beast::error_code ec, std::size_t) { self->answer(ec); });
    }

private:
    void answer(beast::error_code ec)
    {
        if (ec) return;  // closed, timed out or malformed: the connection ends
        response_ = {};
        response_.version(request_.version());
        response_.keep_alive(request_.keep_alive());
        response_.set(http::field::server, "blobstored");
        if (request_.method() != http::verb::get && request_.method() != http::verb::head) {
            response_.result(http::status::method_not_allowed);
            response_.set(http::field::allow, "GET, HEAD");
            response_.body() = "only GET /metrics\n";
        } else if (request_.target() != "/metrics") {
            response_.result(http::status::not_found);
            response_.body() = "not found: " + std::string(request_.target()) + " (the metrics are at /metrics)\n";
        } else {
            response_.result(http::status::ok);
            response_.set(http::field::content_type, kContentType);
            try {
                response_.body() = endpoint_.render();
            } catch (const std::exception& e) {
                response_.result(http::status::internal_server_error);
                response_.body() = std::string("metrics unavailable: ") + e.what() + "\n";
            }
            if (request_.method() == http::verb::head) {
                response_.content_length(response_.body().size());
                response_.body().clear();
            }
        }
        if (response_.result() != http::status::ok) response_.set(http::field::content_type, "text/plain");
        response_.prepare_payload();
        http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code written, std::size_t) {
            if (!written && self->response_.keep_alive()) self->read();
        });
    }

    beast::tcp_stream stream_;
    MetricsEndpoint::Impl& endpoint_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> request_;
    http::response<http::string_body> response_;
};

}  // namespace

void MetricsEndpoint::Impl::accept()
{
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted) return;
        if (!ec) {
            if (sessions.load() >= kMaxSessions) {
                beast::error_code ignored;
                socket.close(ignored);  // over the bound: closed at once
            } else {
                std::make_shared<Session>(std::move(socket), *this)->read();
            }
        }
        accept();
    });
}

MetricsEndpoint::MetricsEndpoint(const HostPort& where, std::function<std::string()> render)
    : impl_(std::make_unique<Impl>())
{
    impl_->render = std::move(render);
    const std::string text = where.host + ":" + std::to_string(where.port);
    beast::error_code ec;
    const auto host = asio::ip::make_address(where.host == "" ? "0.0.0.0" : where.host, ec);
    if (ec) throw Error(Errc::invalid_argument, "--metrics-address: \"" + text + "\": " + ec.message());
    const tcp::endpoint endpoint(host, where.port);
    impl_->acceptor.open(endpoint.protocol(), ec);
    if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) impl_->acceptor.bind(endpoint, ec);
    if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw Error(Errc::unreachable, "--metrics-address: cannot listen on " + text + ": " + ec.message());
    const tcp::endpoint bound = impl_->acceptor.local_endpoint();
    impl_->address = bound.address().to_string() + ":" + std::to_string(bound.port());
    impl_->accept();
    impl_->thread = std::thread([impl = impl_.get()] {
        try {
            impl->io.run();
        } catch (const std::exception& e) {
            spdlog::error("metrics endpoint {}: stopped: {}", impl->address, e.what());
        }
    });
}

MetricsEndpoint::~MetricsEndpoint()
{
    impl_->io.stop();
    if (impl_->thread.joinable()) impl_->thread.join();
}

const std::string& MetricsEndpoint::address() const noexcept { return impl_->address; }

}  // namespace blobstreaming::daemon
