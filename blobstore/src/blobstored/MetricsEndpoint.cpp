/// MetricsEndpoint (MetricsEndpoint.h): a small asynchronous HTTP server.
#include "MetricsEndpoint.h"

#include <blobstreaming/common/DescriptorReserve.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Tls.h>

// GCC 12 reports a -Wnull-dereference inside Asio's scheduler once it is
// inlined here (as in sdc/src/Asio.h): not ours, silenced for these headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#pragma GCC diagnostic pop
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <type_traits>

namespace blobstreaming::daemon {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr int kMaxSessions = 16;
/// Of them from one address: a few peers cannot take every session and
/// keep the scraper out.
constexpr int kMaxSessionsPerPeer = 4;
constexpr std::chrono::seconds kSessionTimeout{10};
constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";
/// Accepting pauses this long when the process is out of descriptors (or
/// memory), and kErrorPause after any other failure of accept(2).
constexpr std::chrono::milliseconds kOutOfDescriptorsPause{1000};
constexpr std::chrono::milliseconds kErrorPause{100};
/// At most one warning of a kind per this interval (refused certificates,
/// out of descriptors); the others are counted into the next one.
constexpr std::chrono::seconds kLogInterval{10};
using tls_stream = beast::ssl_stream<beast::tcp_stream>;

bool out_of_resources(const beast::error_code& ec)
{
    return ec.category() == boost::system::system_category() && out_of_descriptors(ec.value());
}

/// One warning per kLogInterval at most; used on the endpoint's thread only.
class LogLimit {
public:
    /// True when a line may be written now; `suppressed` is then the
    /// number of lines held back since the previous one.
    bool allow(int& suppressed)
    {
        const auto now = std::chrono::steady_clock::now();
        if (last_ && now - *last_ < kLogInterval) {
            ++held_;
            return false;
        }
        last_ = now;
        suppressed = held_;
        held_ = 0;
        return true;
    }

private:
    std::optional<std::chrono::steady_clock::time_point> last_;
    int held_ = 0;
};

}  // namespace

struct MetricsEndpoint::Impl {
    std::function<std::string()> render;
    std::string address;
    /// Null for plain HTTP; else the store's server context (TlsContext:
    /// client certificates required and verified against its CA).
    std::unique_ptr<asio::ssl::context> tls;
    /// Given up to accept and close the pending connections when out of
    /// descriptors (DescriptorReserve.h).
    DescriptorReserve reserve;
    std::atomic<int> sessions{0};
    std::mutex peers_mutex;
    std::map<std::string, int> per_peer;  ///< open sessions by remote address
    struct Open {
        std::string peer;
        std::function<void()> end;  ///< closes its socket (io thread)
    };
    std::map<std::uint64_t, Open> open;  ///< by admission, oldest first
    std::uint64_t last_id = 0;
    LogLimit refused_log;
    LogLimit descriptors_log;
    /// Declared after everything a session touches: a session still
    /// queued when the endpoint stops is destroyed with the io_context and
    /// releases its admission (`open`, `per_peer`) and its TLS stream then.
    asio::io_context io{1};
    tcp::acceptor acceptor{io};
    asio::steady_timer pause{io};
    std::thread thread;

    void accept();
    void shed_pending(const beast::error_code& ec);
    /// Counts a session of `peer` and returns its id, 0 when it is refused:
    /// `peer` holds kMaxSessionsPerPeer already, or every session is taken
    /// and no address holds two more than `peer` (otherwise the oldest
    /// session of the address holding the most is ended for it). io thread.
    std::uint64_t admit(const std::string& peer);
    /// How admitted session `id` is ended to make room.
    void on_end(std::uint64_t id, std::function<void()> end);
    void release(const std::string& peer, std::uint64_t id);
};

std::uint64_t MetricsEndpoint::Impl::admit(const std::string& peer)
{
    std::function<void()> evict;
    std::uint64_t id = 0;
    {
        std::lock_guard<std::mutex> lock(peers_mutex);
        int& mine = per_peer[peer];
        if (mine >= kMaxSessionsPerPeer) return 0;
        if (open.size() >= static_cast<std::size_t>(kMaxSessions)) {
            auto most = per_peer.end();
            for (auto it = per_peer.begin(); it != per_peer.end(); ++it)
                if (it->second > mine + 1 && (most == per_peer.end() || it->second > most->second)) most = it;
            if (most == per_peer.end()) return 0;
            for (auto& [held, o] : open) {
                if (o.peer != most->first || !o.end) continue;
                evict = std::move(o.end);
                break;
            }
            if (!evict) return 0;
        }
        ++mine;
        id = ++last_id;
        open[id] = Open{peer, {}};
    }
    if (evict) evict();
    return id;
}

void MetricsEndpoint::Impl::on_end(std::uint64_t id, std::function<void()> end)
{
    std::lock_guard<std::mutex> lock(peers_mutex);
    if (auto it = open.find(id); it != open.end()) it->second.end = std::move(end);
}

void MetricsEndpoint::Impl::release(const std::string& peer, std::uint64_t id)
{
    std::lock_guard<std::mutex> lock(peers_mutex);
    open.erase(id);
    auto it = per_peer.find(peer);
    if (it != per_peer.end() && --it->second <= 0) per_peer.erase(it);
}

namespace {

/// One connection: (the TLS handshake, then) requests answered in turn
/// (keep-alive) until the peer closes, errs or stays silent for
/// kSessionTimeout.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
public:
    /// `peer` was admitted (Impl::admit) for this session as `id`.
    template <class... Args>
    Session(MetricsEndpoint::Impl& endpoint, std::string peer, std::uint64_t id, Args&&... args)
        : stream_(std::forward<Args>(args)...), endpoint_(endpoint), peer_(std::move(peer)), id_(id)
    {
        ++endpoint_.sessions;
    }
    ~Session()
    {
        endpoint_.release(peer_, id_);
        --endpoint_.sessions;
    }

    void start()
    {
        endpoint_.on_end(id_, [weak = this->weak_from_this()] {
            if (auto self = weak.lock()) beast::get_lowest_layer(self->stream_).close();
        });
        if constexpr (std::is_same_v<Stream, tls_stream>) {
            beast::get_lowest_layer(stream_).expires_after(kSessionTimeout);
            stream_.async_handshake(asio::ssl::stream_base::server,
                                    [self = this->shared_from_this()](beast::error_code ec) {
                                        if (ec) return self->refused(ec);
                                        self->read();
                                    });
        } else {
            read();
        }
    }

private:
    /// A TLS handshake that failed (no certificate, another CA, not TLS):
    /// the connection ends without an HTTP answer; the log says why.
    void refused(const beast::error_code& ec)
    {
        int suppressed = 0;
        if (ec == beast::error::timeout || !endpoint_.refused_log.allow(suppressed)) return;
        beast::error_code ignored;
        const auto peer = beast::get_lowest_layer(stream_).socket().remote_endpoint(ignored);
        spdlog::warn("metrics endpoint {}: TLS handshake from {} failed, no figures sent: {}{}", endpoint_.address,
                     ignored ? std::string("?") : peer.address().to_string(), ec.message(),
                     suppressed > 0 ? fmt::format(" ({} more since the previous line)", suppressed) : std::string());
    }

    void read()
    {
        request_ = {};
        beast::get_lowest_layer(stream_).expires_after(kSessionTimeout);
        http::async_read(stream_, buffer_, request_,
                         [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->answer(ec); });
    }

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
        }
        if (response_.result() != http::status::ok) response_.set(http::field::content_type, "text/plain");
        response_.prepare_payload();
        if (request_.method() == http::verb::head) {
            // GET's headers, Content-Length included, without the body
            // (prepare_payload() would count the emptied body: 0).
            const auto length = response_.body().size();
            response_.body().clear();
            response_.content_length(length);
        }
        http::async_write(stream_, response_,
                          [self = this->shared_from_this()](beast::error_code written, std::size_t) {
                              if (!written && self->response_.keep_alive()) self->read();
                          });
    }

    Stream stream_;
    MetricsEndpoint::Impl& endpoint_;
    const std::string peer_;
    const std::uint64_t id_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> request_;
    http::response<http::string_body> response_;
};

}  // namespace

void MetricsEndpoint::Impl::accept()
{
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted) return;
        if (ec == asio::error::connection_aborted || ec == asio::error::interrupted) return accept();
        if (ec) {
            // Accepting again at once would fail again at once: a busy loop
            // for as long as a connection is pending.
            if (out_of_resources(ec)) {
                shed_pending(ec);
            } else {
                int suppressed = 0;
                if (descriptors_log.allow(suppressed))
                    spdlog::error("metrics endpoint {}: accept failed: {}; accepting again in {} ms", address,
                                  ec.message(), kErrorPause.count());
            }
            pause.expires_after(out_of_resources(ec) ? kOutOfDescriptorsPause : kErrorPause);
            pause.async_wait([this](beast::error_code e) {
                if (!e) accept();
            });
            return;
        }
        beast::error_code no_peer;
        const auto remote = socket.remote_endpoint(no_peer);
        std::string peer = no_peer ? std::string() : remote.address().to_string();
        const std::uint64_t id = admit(peer);
        if (id == 0) {
            beast::error_code ignored;
            socket.close(ignored);  // over a bound: closed at once
        } else if (tls) {
            std::make_shared<Session<tls_stream>>(*this, std::move(peer), id, std::move(socket), *tls)->start();
        } else {
            std::make_shared<Session<beast::tcp_stream>>(*this, std::move(peer), id, std::move(socket))->start();
        }
        accept();
    });
}

void MetricsEndpoint::Impl::shed_pending(const beast::error_code& ec)
{
    const int dropped = reserve.shed_pending(acceptor.native_handle(), kMaxSessions);
    int suppressed = 0;
    if (descriptors_log.allow(suppressed))
        spdlog::warn("metrics endpoint {}: out of descriptors ({}): {} pending connection(s) closed unanswered; "
                     "accepting again in {} ms{}",
                     address, ec.message(), dropped, kOutOfDescriptorsPause.count(),
                     suppressed > 0 ? fmt::format(" ({} more since the previous line)", suppressed) : std::string());
}

MetricsEndpoint::MetricsEndpoint(const HostPort& where, std::function<std::string()> render, const TlsFiles& tls)
    : impl_(std::make_unique<Impl>())
{
    impl_->render = std::move(render);
    if (tls.enabled()) {
        // The data plane's server context (TLS 1.2+, client certificates
        // required and verified against the CA), shared with Asio's stream.
        const TlsContext context(TlsContext::Role::server, tls);
        SSL_CTX_up_ref(context.native());
        impl_->tls = std::make_unique<asio::ssl::context>(context.native());
    }
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

const char* MetricsEndpoint::scheme() const noexcept { return impl_->tls ? "https" : "http"; }

}  // namespace blobstreaming::daemon
