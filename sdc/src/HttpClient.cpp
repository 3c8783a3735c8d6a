#include "HttpClient.h"

#include "Tls.h"
#include "blobstreaming/sdc/SdcError.h"

#include <openssl/x509.h>

namespace blobstreaming::sdc {

ClientConnection::ClientConnection(net::any_io_executor executor, Url target, std::shared_ptr<ssl::context> tls,
                                   std::chrono::milliseconds timeout)
    : executor_(std::move(executor)), target_(std::move(target)), tls_context_(std::move(tls)), timeout_(timeout),
      resolver_(executor_)
{}

beast::tcp_stream& ClientConnection::lowest() { return tls_ ? beast::get_lowest_layer(*tls_) : *plain_; }

void ClientConnection::post(const std::string& path, std::string body, Done done)
{
    done_ = std::move(done);
    request_ = {http::verb::post, path, 11};
    request_.set(http::field::host, target_.netloc());
    request_.set(http::field::content_type, "application/soap+xml; charset=utf-8");
    request_.keep_alive(true);
    request_.body() = std::move(body);
    request_.prepare_payload();
    reused_ = connected_;
    if (connected_) write();
    else connect();
}

void ClientConnection::connect()
{
    close();
    verify_failure_.clear();
    if (target_.tls) {
        if (!tls_context_) return finish(net::error::make_error_code(net::error::no_protocol_option));
        tls_ = std::make_unique<tls_stream>(executor_, *tls_context_);
        try {
            name_mismatch_ = expect_server_name(*tls_, target_.host);
        } catch (const SdcError&) {
            return finish(net::error::make_error_code(net::error::invalid_argument));
        }
    } else {
        plain_ = std::make_unique<beast::tcp_stream>(executor_);
    }
    lowest().expires_after(timeout_);
    resolver_.async_resolve(
        target_.host, target_.port,
        [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type results) {
            if (ec) return self->finish(ec);
            self->lowest().async_connect(results, [self](beast::error_code e, const tcp::endpoint&) {
                if (e) return self->finish(e);
                beast::error_code ignored;
                self->lowest().socket().set_option(tcp::no_delay(true), ignored);
                if (!self->tls_) {
                    self->connected_ = true;
                    return self->write();
                }
                self->tls_->async_handshake(ssl::stream_base::client, [self](beast::error_code h) {
                    if (h) {
                        const long verify = SSL_get_verify_result(self->tls_->native_handle());
                        if (self->name_mismatch_ && !self->name_mismatch_->empty())
                            self->verify_failure_ = *self->name_mismatch_;
                        else if (verify != X509_V_OK)
                            self->verify_failure_ = X509_verify_cert_error_string(verify);
                        return self->finish(h);
                    }
                    self->connected_ = true;
                    self->write();
                });
            });
        });
}

void ClientConnection::write()
{
    lowest().expires_after(timeout_);
    auto on_written = [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return self->finish(ec);
        self->parser_.emplace();
        self->parser_->body_limit(1024 * 1024);
        auto on_read = [self](beast::error_code e, std::size_t) { self->finish(e); };
        if (self->tls_) http::async_read(*self->tls_, self->buffer_, *self->parser_, std::move(on_read));
        else http::async_read(*self->plain_, self->buffer_, *self->parser_, std::move(on_read));
    };
    if (tls_) http::async_write(*tls_, request_, std::move(on_written));
    else http::async_write(*plain_, request_, std::move(on_written));
}

void ClientConnection::finish(beast::error_code ec)
{
    unsigned status = 0;
    if (ec) {
        close();
    } else {
        status = parser_->get().result_int();
        if (!parser_->get().keep_alive()) close();
    }
    Done done = std::move(done_);
    done_ = nullptr;
    if (done) done(ec, status, reused_);
}

void ClientConnection::close()
{
    connected_ = false;
    buffer_.clear();
    beast::error_code ec;
    if (tls_) {
        beast::get_lowest_layer(*tls_).socket().shutdown(tcp::socket::shutdown_both, ec);
        beast::get_lowest_layer(*tls_).socket().close(ec);
    }
    if (plain_) {
        plain_->socket().shutdown(tcp::socket::shutdown_both, ec);
        plain_->socket().close(ec);
    }
}

}  // namespace blobstreaming::sdc
