/// HttpServer (HttpServer.h): Beast connections on one I/O thread, the
/// handler on a worker pool.
// Beast's parser (Boost 1.74) keeps a boost::optional whose storage GCC 12
// reports as maybe uninitialized once the parser is inlined here under the
// sanitizers (--enable-sanitizers with --enable-werror failed on it); the
// warning is about the header's code, and a pragma around its include does
// not reach the inlined copy.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "HttpServer.h"


#include "Spool.h"

#include <blobstreaming/common/DescriptorReserve.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>

// GCC 12 reports a -Wnull-dereference inside Asio's scheduler once it is
// inlined here (as in sdc/src/Asio.h): not ours, silenced for these headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#pragma GCC diagnostic pop
#include <openssl/crypto.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

namespace blobstreaming::dicom::web {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using tls_stream = beast::ssl_stream<beast::tcp_stream>;

/// Accepting pauses this long when the process is out of descriptors (or
/// memory), kErrorPause after any other failure of accept(2).
constexpr std::chrono::milliseconds kOutOfDescriptorsPause{1000};
constexpr std::chrono::milliseconds kErrorPause{100};
/// Pending connections closed at most, out of descriptors, before the pause.
constexpr int kMaxConnectionsShed = 64;
/// Worker threads: requests answered at once (more wait for one).
constexpr unsigned kMaxWorkers = 16;
/// Spool numbers of request bodies, apart from the DIMSE side's.
constexpr unsigned long kSpoolBase = 1ul << 40;

bool out_of_resources(const beast::error_code& ec)
{
    return ec.category() == boost::system::system_category() && out_of_descriptors(ec.value());
}

/// The tokens of --http-token-file: its lines, less empty ones and comments.
std::vector<std::string> read_tokens(const std::string& path)
{
    std::ifstream in(path);
    if (!in) throw Error(Errc::invalid_argument, "--http-token-file " + path + ": cannot be read");
    std::vector<std::string> tokens;
    std::string line;
    while (std::getline(in, line)) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
        const auto start = line.find_first_not_of(" \t");
        if (start == std::string::npos || line[start] == '#') continue;
        tokens.push_back(line.substr(start));
    }
    if (tokens.empty())
        throw Error(Errc::invalid_argument, "--http-token-file " + path + ": holds no token (one per line)");
    return tokens;
}

/// Waits until `socket` can take more bytes, at most until `deadline`.
bool wait_writable(int socket, std::chrono::steady_clock::time_point deadline, std::string& why)
{
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            why = "the client did not take the part within --http-timeout";
            return false;
        }
        pollfd p{socket, POLLOUT, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30)));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            why = std::string("poll: ") + std::strerror(errno);
            return false;
        }
        if (n > 0) return true;
    }
}

/// Sends every byte of `iov` (advanced as it goes) with `flags`.
bool send_all(int socket, iovec* iov, std::size_t count, int flags, std::chrono::steady_clock::time_point deadline,
              std::string& why)
{
    while (count > 0) {
        msghdr m{};
        m.msg_iov = iov;
        m.msg_iovlen = count;
        const ssize_t n = ::sendmsg(socket, &m, flags | MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_writable(socket, deadline, why)) return false;
            continue;
        }
        if (n < 0) {
            why = std::string("send: ") + std::strerror(errno);
            return false;
        }
        auto sent = static_cast<std::size_t>(n);
        while (count > 0 && sent >= iov->iov_len) {
            sent -= iov->iov_len;
            ++iov;
            --count;
        }
        if (count > 0) {
            iov->iov_base = static_cast<char*>(iov->iov_base) + sent;
            iov->iov_len -= sent;
        }
    }
    return true;
}

/// One chunk of a chunked body written straight to `socket` (non-blocking,
/// as Asio leaves it): its size line and `head`, then `size` bytes from
/// `fd` at `file_offset` with sendfile(2) (`fd` >= 0) or from `data`, then
/// its CRLF. False and `why` when the client is gone or too slow, or the
/// file ends early.
bool send_chunk(int socket, const std::string& head, const char* data, std::size_t size, int fd,
                std::uint64_t file_offset, std::chrono::steady_clock::time_point deadline, std::string& why)
{
    char line[24];
    const int length = std::snprintf(line, sizeof line, "%zx\r\n", head.size() + size);
    static const char crlf[] = "\r\n";
    iovec iov[4] = {{line, static_cast<std::size_t>(length)},
                    {const_cast<char*>(head.data()), head.size()},
                    {const_cast<char*>(data), size},
                    {const_cast<char*>(crlf), 2}};
    // The chunk's CRLF waits for what follows (MSG_MORE): a chunked body
    // always goes on (the next chunk, or the last chunk sent through Asio,
    // which pushes), and the receiver needs the next part's boundary before
    // it can end this part anyway; sent alone it would be one 2-byte
    // segment per part on a TCP_NODELAY socket.
    if (fd < 0) return send_all(socket, iov, 4, MSG_MORE, deadline, why);
    if (!send_all(socket, iov, 2, MSG_MORE, deadline, why)) return false;
    auto offset = static_cast<off_t>(file_offset);
    for (std::size_t left = size; left > 0;) {
        const ssize_t n = ::sendfile(socket, fd, &offset, left);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_writable(socket, deadline, why)) return false;
            continue;
        }
        if (n <= 0) {
            why = n < 0 ? std::string("sendfile: ") + std::strerror(errno) : "sendfile: the file ended early";
            return false;
        }
        left -= static_cast<std::size_t>(n);
    }
    return send_all(socket, iov + 3, 1, MSG_MORE, deadline, why);
}

}  // namespace

http::response<http::string_body> text_response(http::status status, const std::string& text)
{
    http::response<http::string_body> r{status, 11};
    r.set(http::field::content_type, "text/plain; charset=utf-8");
    r.body() = text + "\n";
    return r;
}

struct HttpServer::Impl {
    Impl(const GatewayOptions& o, Handler h)
        : options(o), handler(std::move(h)), workers(std::min(kMaxWorkers, o.http_max_connections))
    {
    }

    const GatewayOptions& options;
    Handler handler;
    /// Given up to accept and close the pending connections when out of
    /// descriptors, which would otherwise wait in the backlog until their
    /// own timeout (DescriptorReserve.h).
    DescriptorReserve reserve;
    std::unique_ptr<asio::ssl::context> tls;
    std::vector<std::string> tokens;
    std::string address;
    asio::thread_pool workers;
    std::atomic<unsigned long> spool_counter{0};
    std::mutex mutex;
    std::map<std::string, unsigned> per_peer;  ///< open connections by remote address
    struct Open {
        std::string peer;
        bool busy = false;          ///< a request being read or answered: never evicted
        std::function<void()> end;  ///< closes its socket (I/O thread)
    };
    std::map<std::uint64_t, Open> open;  ///< by admission, oldest first
    std::uint64_t last_id = 0;
    /// Declared after everything a connection touches: a connection still
    /// queued when the server stops is destroyed with the io_context and
    /// releases its admission (`open`, `per_peer`) and its TLS stream then.
    asio::io_context io{1};
    tcp::acceptor acceptor{io};
    asio::steady_timer pause{io};
    std::thread thread;

    void accept();
    /// Counts a connection of `peer` and returns its id, 0 when it is
    /// refused (HttpServer.h, "Limits"). I/O thread.
    std::uint64_t admit(const std::string& peer);
    void set_end(std::uint64_t id, std::function<void()> end);
    void set_busy(std::uint64_t id, bool busy);
    void release(const std::string& peer, std::uint64_t id);

    /// Whether `header` carries one of the tokens (or none is required).
    bool authorised(const http::request_header<>& header) const;
    /// The CORS headers of a response to `request`'s origin.
    template <class Fields>
    void add_cors(const http::request_header<>& request, Fields& response) const;
};

std::uint64_t HttpServer::Impl::admit(const std::string& peer)
{
    std::function<void()> evict;
    std::uint64_t id = 0;
    {
        std::lock_guard<std::mutex> lock(mutex);
        unsigned& mine = per_peer[peer];
        if (mine >= options.http_max_connections_per_peer) return 0;
        if (open.size() >= options.http_max_connections) {
            auto most = per_peer.end();
            for (auto it = per_peer.begin(); it != per_peer.end(); ++it)
                if (it->second > mine + 1 && (most == per_peer.end() || it->second > most->second)) most = it;
            if (most == per_peer.end()) return 0;
            for (auto& [held, o] : open) {
                if (o.peer != most->first || o.busy || !o.end) continue;
                evict = std::move(o.end);
                break;
            }
            if (!evict) return 0;
        }
        ++mine;
        id = ++last_id;
        open[id] = Open{peer, false, {}};
    }
    if (evict) evict();
    return id;
}

void HttpServer::Impl::set_end(std::uint64_t id, std::function<void()> end)
{
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = open.find(id); it != open.end()) it->second.end = std::move(end);
}

void HttpServer::Impl::set_busy(std::uint64_t id, bool busy)
{
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = open.find(id); it != open.end()) it->second.busy = busy;
}

void HttpServer::Impl::release(const std::string& peer, std::uint64_t id)
{
    std::lock_guard<std::mutex> lock(mutex);
    open.erase(id);
    auto it = per_peer.find(peer);
    if (it != per_peer.end() && --it->second == 0) per_peer.erase(it);
}

bool HttpServer::Impl::authorised(const http::request_header<>& header) const
{
    if (tokens.empty()) return true;
    const auto field = header.find(http::field::authorization);
    if (field == header.end()) return false;
    const beast::string_view value = field->value();
    constexpr beast::string_view kBearer = "Bearer ";
    if (value.size() <= kBearer.size() || !beast::iequals(value.substr(0, kBearer.size()), kBearer)) return false;
    const beast::string_view given = value.substr(kBearer.size());
    bool found = false;
    for (const std::string& t : tokens)  // every token compared, in constant time each
        found |= t.size() == given.size() && CRYPTO_memcmp(t.data(), given.data(), t.size()) == 0;
    return found;
}

template <class Fields>
void HttpServer::Impl::add_cors(const http::request_header<>& request, Fields& response) const
{
    const std::string& allowed = options.http_cors_origin;
    const auto origin = request.find(http::field::origin);
    if (allowed.empty() || origin == request.end()) return;
    if (allowed == "*") {
        response.set(http::field::access_control_allow_origin, "*");
    } else if (origin->value() == allowed) {
        response.set(http::field::access_control_allow_origin, allowed);
        response.set(http::field::vary, "Origin");
    } else {
        return;
    }
    response.set(http::field::access_control_expose_headers,
                 "Content-Type, Content-Length, Content-Range, Accept-Ranges, Warning, Location");
}

namespace {

/// One connection: (the TLS handshake, then) requests answered in turn
/// (keep-alive) until the peer closes, errs, or misses --http-timeout.
template <class Stream>
class Connection : public std::enable_shared_from_this<Connection<Stream>>, public Reply {
public:
    template <class... Args>
    Connection(HttpServer::Impl& server, std::string peer, std::uint64_t id, Args&&... args)
        : stream_(std::forward<Args>(args)...), server_(server), peer_(std::move(peer)), id_(id)
    {
    }
    ~Connection() override
    {
        if (!body_path_.empty()) std::remove(body_path_.c_str());
        server_.release(peer_, id_);
    }

    void start()
    {
        server_.set_end(id_, [weak = this->weak_from_this()] {
            if (auto self = weak.lock()) self->close();
        });
        if constexpr (std::is_same_v<Stream, tls_stream>) {
            beast::get_lowest_layer(stream_).expires_after(server_.options.http_timeout);
            stream_.async_handshake(asio::ssl::stream_base::server,
                                    [self = this->shared_from_this()](beast::error_code ec) {
                                        if (ec) {
                                            spdlog::debug("DICOMweb: TLS handshake from {} failed: {}", self->peer_,
                                                          ec.message());
                                            return self->close();
                                        }
                                        self->read();
                                    });
        } else {
            read();
        }
    }

    // ---- Reply (worker thread) ---------------------------------------------
    bool respond(http::response<http::string_body> response) override
    {
        answered_ = true;
        log_refusal(response);
        finish(response);
        response.prepare_payload();
        if (head()) response.body().clear();  // the GET's header fields, Content-Length included; no content
        auto shared = std::make_shared<http::response<http::string_body>>(std::move(response));
        return on_io([this, shared](std::function<void(bool)> done) {
            http::async_write(stream_, *shared, [shared, done](beast::error_code ec, std::size_t) { done(!ec); });
        });
    }

    bool begin(http::response<http::empty_body> header) override
    {
        answered_ = true;
        finish(header);
        header.chunked(true);
        header_ = std::make_unique<http::response<http::empty_body>>(std::move(header));
        serializer_ = std::make_unique<http::response_serializer<http::empty_body>>(*header_);
        const bool sent = on_io([this](std::function<void(bool)> done) {
            http::async_write_header(stream_, *serializer_, [done](beast::error_code ec, std::size_t) { done(!ec); });
        });
        // A HEAD response ends with its header: the handler stops here, the connection reads on.
        return sent && !head();
    }

    bool write(const void* data, std::size_t size) override
    {
        if (size == 0) return !failed_;
        return on_io([this, data, size](std::function<void(bool)> done) {
            asio::async_write(stream_, http::make_chunk(asio::const_buffer(data, size)),
                              [done](beast::error_code ec, std::size_t) { done(!ec); });
        });
    }

    bool write_part(const std::string& head, const void* data, std::size_t size, int fd,
                    std::uint64_t file_offset) override
    {
        if (failed_) return false;
        if constexpr (std::is_same_v<Stream, tls_stream>) {
            const std::array<asio::const_buffer, 2> pieces{asio::buffer(head), asio::const_buffer(data, size)};
            return on_io([this, &pieces](std::function<void(bool)> done) {
                asio::async_write(stream_, http::make_chunk(pieces),
                                  [done](beast::error_code ec, std::size_t) { done(!ec); });
            });
        } else {
            // The I/O thread is not using the socket while a handler answers
            // (the connection is busy: no read, no eviction).
            const int socket = beast::get_lowest_layer(stream_).socket().native_handle();
            std::string why;
            if (!send_chunk(socket, head, static_cast<const char*>(data), size, fd, file_offset,
                            std::chrono::steady_clock::now() + server_.options.http_timeout, why)) {
                spdlog::info("DICOMweb: response to {} cut short: {}", peer_, why);
                failed_ = true;  // closed once the handler returns (dispatch())
            }
            return !failed_;
        }
    }

    bool end() override
    {
        return on_io([this](std::function<void(bool)> done) {
            asio::async_write(stream_, http::make_chunk_last(),
                              [done](beast::error_code ec, std::size_t) { done(!ec); });
        });
    }

    bool answered() const override { return answered_; }

private:
    /// RFC 9110 9.3.2: a HEAD request is answered as GET would be, without content.
    bool head() const { return request_.header.method() == http::verb::head; }

    /// A refusal (4xx, 5xx) in the log with its reason, the response's text.
    void log_refusal(const http::response<http::string_body>& response) const
    {
        if (response.result_int() < 400) return;
        std::string why = response.body().substr(0, 500);
        while (!why.empty() && why.back() == '\n') why.pop_back();
        spdlog::info("DICOMweb {} {} from {}: {} {}", printable(std::string(request_.header.method_string())),
                     printable(std::string(request_.header.target()).substr(0, 300)), peer_, response.result_int(),
                     printable(why));
    }

    void close()
    {
        beast::error_code ignored;
        beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
        beast::get_lowest_layer(stream_).close();
    }

    /// Runs `op` on the I/O thread with a deadline and waits for its outcome.
    bool on_io(std::function<void(std::function<void(bool)>)> op)
    {
        if (failed_) return false;
        std::promise<bool> outcome;
        auto future = outcome.get_future();
        asio::post(stream_.get_executor(), [this, &op, &outcome] {
            beast::get_lowest_layer(stream_).expires_after(server_.options.http_timeout);
            op([this, &outcome](bool ok) {
                if (!ok) close();
                outcome.set_value(ok);
            });
        });
        if (!future.get()) failed_ = true;
        return !failed_;
    }

    template <class Response>
    void finish(Response& response)
    {
        response.version(11);
        response.keep_alive(keep_alive_);
        response.set(http::field::server, "blob-dicomd");
        server_.add_cors(request_.header, response);
    }

    void read()
    {
        server_.set_busy(id_, false);
        request_ = Request{};
        request_.peer = peer_;
        answered_ = false;
        header_parser_.emplace();
        header_parser_->header_limit(kMaxHeader);
        // The body's length is checked in on_header() (413 naming it); the body parser has the limit.
        // (Not boost::none: Beast 1.74 compares a Content-Length with it as "greater than none".)
        header_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
        beast::get_lowest_layer(stream_).expires_after(server_.options.http_timeout);
        http::async_read_header(stream_, buffer_, *header_parser_,
                                [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                                    self->on_header(ec);
                                });
    }

    /// A response the I/O thread sends itself (refusals before the handler);
    /// the connection then reads on, or ends when `close_after`.
    void refuse(http::response<http::string_body> response, bool close_after)
    {
        if (close_after) keep_alive_ = false;
        log_refusal(response);
        finish(response);
        response.prepare_payload();
        if (head()) response.body().clear();
        auto shared = std::make_shared<http::response<http::string_body>>(std::move(response));
        beast::get_lowest_layer(stream_).expires_after(server_.options.http_timeout);
        http::async_write(stream_, *shared,
                          [self = this->shared_from_this(), shared](beast::error_code ec, std::size_t) {
                              if (ec || !self->keep_alive_) return self->close();
                              self->read();
                          });
    }

    void on_header(beast::error_code ec)
    {
        if (ec == http::error::header_limit)
            return refuse(text_response(http::status::request_header_fields_too_large,
                                        "the request's headers exceed " + std::to_string(kMaxHeader) + " bytes"),
                          true);
        if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::eof ||
            ec == asio::error::operation_aborted || ec == asio::error::connection_reset || ec == asio::error::bad_descriptor)
            return close();
        if (ec) {
            if (ec.category() == http::make_error_code(http::error::bad_version).category())
                return refuse(text_response(http::status::bad_request, "malformed HTTP request: " + ec.message()), true);
            return close();
        }
        server_.set_busy(id_, true);
        request_.header = header_parser_->get().base();
        keep_alive_ = header_parser_->get().keep_alive();
        const auto& header = request_.header;
        if (const auto length = header_parser_->content_length();
            length && *length > server_.options.http_max_body)
            return refuse(text_response(http::status::payload_too_large,
                                        "the request's body of " + std::to_string(*length) + " bytes exceeds " +
                                            std::to_string(server_.options.http_max_body) + " bytes (--http-max-body)"),
                          true);
        if (header.method() == http::verb::options) return preflight();
        if (!server_.authorised(header)) {
            auto r = text_response(http::status::unauthorized,
                                   "this DICOMweb server requires an Authorization: Bearer token "
                                   "(a valid one: --http-token-file)");
            r.set(http::field::www_authenticate, "Bearer realm=\"dicom-web\"");
            // The body (if any) is not read: the connection ends after the answer.
            return refuse(std::move(r), !header_parser_->is_done());
        }
        if (header_parser_->is_done()) return dispatch();
        if (header.method() != http::verb::post && header.method() != http::verb::put)
            return refuse(text_response(http::status::bad_request,
                                        std::string("a ") + std::string(header.method_string()) +
                                            " request has no body here"),
                          true);
        body_parser_.emplace(std::move(*header_parser_));
        body_parser_->body_limit(server_.options.http_max_body);
        body_path_ = spool_file(server_.options.spool, kSpoolBase + ++server_.spool_counter);
        beast::error_code opened;
        body_parser_->get().body().open(body_path_.c_str(), beast::file_mode::write, opened);
        if (opened) {
            spdlog::error("DICOMweb: request from {}: cannot write its body to {}: {}", peer_, body_path_,
                          opened.message());
            return refuse(text_response(http::status::internal_server_error,
                                        "the gateway cannot spool the request's body (see its log)"),
                          true);
        }
        auto read_body = [self = this->shared_from_this()] {
            http::async_read(self->stream_, self->buffer_, *self->body_parser_,
                             [self](beast::error_code e, std::size_t) { self->on_body(e); });
        };
        const auto expect = header.find(http::field::expect);
        if (expect != header.end() && beast::iequals(expect->value(), "100-continue")) {
            auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
            http::async_write(stream_, *cont, [self = this->shared_from_this(), cont, read_body](beast::error_code e,
                                                                                                std::size_t) {
                if (e) return self->close();
                read_body();
            });
            return;
        }
        read_body();
    }

    void on_body(beast::error_code ec)
    {
        if (ec == http::error::body_limit)
            return refuse(text_response(http::status::payload_too_large,
                                        "the request's body exceeds " + std::to_string(server_.options.http_max_body) +
                                            " bytes (--http-max-body)"),
                          true);
        if (ec) return close();
        body_parser_->get().body().close();
        request_.body_path = body_path_;
        request_.body_size = body_parser_->content_length().value_or(0);
        if (request_.body_size == 0) {
            beast::error_code ignored;
            beast::file_posix f;
            f.open(body_path_.c_str(), beast::file_mode::scan, ignored);
            if (!ignored) request_.body_size = f.size(ignored);
        }
        dispatch();
    }

    /// CORS preflight, or OPTIONS of a client that is not a browser.
    void preflight()
    {
        const auto& header = request_.header;
        http::response<http::string_body> r{http::status::no_content, 11};
        r.set(http::field::allow, "GET, HEAD, POST, OPTIONS");
        const std::string& allowed = server_.options.http_cors_origin;
        const auto origin = header.find(http::field::origin);
        if (origin != header.end()) {
            if (allowed.empty() || (allowed != "*" && origin->value() != allowed))
                return refuse(text_response(http::status::forbidden,
                                            "origin \"" + std::string(origin->value()) +
                                                "\" is not allowed (--http-cors-origin)"),
                              !header_parser_->is_done());
            r.set(http::field::access_control_allow_methods, "GET, HEAD, POST, OPTIONS");
            std::string wanted = "Authorization, Content-Type, Accept, Range";
            if (const auto h = header.find(http::field::access_control_request_headers); h != header.end()) {
                const std::string asked(h->value());
                if (asked.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_, ") ==
                    std::string::npos)
                    wanted = asked;
            }
            r.set(http::field::access_control_allow_headers, wanted);
            r.set(http::field::access_control_max_age, "600");
        }
        refuse(std::move(r), !header_parser_->is_done());
    }

    /// The handler on a worker; then the next request.
    void dispatch()
    {
        asio::post(server_.workers, [self = this->shared_from_this()] {
            try {
                self->server_.handler(self->request_, *self);
            } catch (const std::exception& e) {
                spdlog::error("DICOMweb: {} {} from {}: {}", printable(std::string(self->request_.header.method_string())),
                              printable(std::string(self->request_.header.target())), self->peer_, printable(e.what()));
                if (!self->answered_)
                    self->respond(text_response(http::status::internal_server_error,
                                                std::string("the gateway failed: ") + e.what()));
                else
                    self->failed_ = true;  // a response cut short: the connection must end
            }
            if (!self->answered_)
                self->respond(text_response(http::status::internal_server_error, "the gateway gave no answer"));
            if (!self->body_path_.empty()) {
                std::remove(self->body_path_.c_str());
                self->body_path_.clear();
            }
            asio::post(self->stream_.get_executor(), [self] {
                self->body_parser_.reset();
                if (self->failed_ || !self->keep_alive_) return self->close();
                self->read();
            });
        });
    }

    Stream stream_;
    HttpServer::Impl& server_;
    const std::string peer_;
    const std::uint64_t id_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::empty_body>> header_parser_;
    std::optional<http::request_parser<http::file_body>> body_parser_;
    std::string body_path_;
    Request request_;
    bool keep_alive_ = true;
    std::atomic<bool> answered_{false};
    std::atomic<bool> failed_{false};
    std::unique_ptr<http::response<http::empty_body>> header_;
    std::unique_ptr<http::response_serializer<http::empty_body>> serializer_;
};

}  // namespace

void HttpServer::Impl::accept()
{
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted) return;
        if (ec == asio::error::connection_aborted || ec == asio::error::interrupted) return accept();
        if (ec) {
            // Accepting again at once would fail again at once: a busy loop.
            const bool out = out_of_resources(ec);
            const int closed = out ? reserve.shed_pending(acceptor.native_handle(), kMaxConnectionsShed) : 0;
            spdlog::warn("DICOMweb {}: accept failed: {}{}; accepting again in {} ms", address, ec.message(),
                         out ? fmt::format(" ({} pending connection(s) closed unanswered)", closed) : std::string(),
                         (out ? kOutOfDescriptorsPause : kErrorPause).count());
            pause.expires_after(out ? kOutOfDescriptorsPause : kErrorPause);
            pause.async_wait([this](beast::error_code e) {
                if (e) return;
                reserve.refill();
                accept();
            });
            return;
        }
        beast::error_code no_peer;
        const auto remote = socket.remote_endpoint(no_peer);
        std::string peer = no_peer ? std::string("?") : remote.address().to_string();
        const std::uint64_t id = admit(peer);
        if (id == 0) {
            spdlog::debug("DICOMweb {}: connection from {} closed at once (connection caps)", address, peer);
            beast::error_code ignored;
            socket.close(ignored);
        } else {
            beast::error_code ignored;
            socket.set_option(tcp::no_delay(true), ignored);
            if (tls)
                std::make_shared<Connection<tls_stream>>(*this, std::move(peer), id, std::move(socket), *tls)->start();
            else
                std::make_shared<Connection<beast::tcp_stream>>(*this, std::move(peer), id, std::move(socket))->start();
        }
        accept();
    });
}

HttpServer::HttpServer(const GatewayOptions& options, Handler handler)
    : impl_(std::make_unique<Impl>(options, std::move(handler)))
{
    if (!options.http_token_file.empty()) impl_->tokens = read_tokens(options.http_token_file);
    if (!options.http_tls_cert.empty()) {
        auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
        context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                             asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                             asio::ssl::context::no_tlsv1_1);
        const auto use = [](const char* option, const std::string& file, auto&& load) {
            beast::error_code ec;
            load(ec);
            if (ec) throw Error(Errc::invalid_argument, std::string(option) + " " + file + ": " + ec.message());
        };
        use("--http-tls-cert", options.http_tls_cert,
            [&](beast::error_code& ec) { context->use_certificate_chain_file(options.http_tls_cert, ec); });
        use("--http-tls-key", options.http_tls_key, [&](beast::error_code& ec) {
            context->use_private_key_file(options.http_tls_key, asio::ssl::context::pem, ec);
        });
        if (!options.http_tls_ca.empty()) {
            use("--http-tls-ca", options.http_tls_ca,
                [&](beast::error_code& ec) { context->load_verify_file(options.http_tls_ca, ec); });
            context->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
        }
        impl_->tls = std::move(context);
    }
    const std::string text = options.http_host + ":" + std::to_string(options.http_port);
    beast::error_code ec;
    const auto host = asio::ip::make_address(options.http_host, ec);
    if (ec)
        throw Error(Errc::invalid_argument,
                    "--http-address \"" + text + "\": \"" + options.http_host + "\" is not an IP address: " + ec.message());
    const tcp::endpoint endpoint(host, static_cast<unsigned short>(options.http_port));
    impl_->acceptor.open(endpoint.protocol(), ec);
    if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) impl_->acceptor.bind(endpoint, ec);
    if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw Error(Errc::unreachable, "--http-address: cannot listen on " + text + ": " + ec.message());
    const tcp::endpoint bound = impl_->acceptor.local_endpoint();
    impl_->address = (bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string()) +
                     ":" + std::to_string(bound.port());
    impl_->accept();
    impl_->thread = std::thread([impl = impl_.get()] {
        try {
            impl->io.run();
        } catch (const std::exception& e) {
            spdlog::critical("DICOMweb {}: the I/O thread stopped: {}", impl->address, e.what());
        }
    });
}

HttpServer::~HttpServer()
{
    impl_->io.stop();
    if (impl_->thread.joinable()) impl_->thread.join();
    impl_->workers.stop();
    impl_->workers.join();
}

const std::string& HttpServer::address() const noexcept { return impl_->address; }

const char* HttpServer::scheme() const noexcept { return impl_->tls ? "https" : "http"; }

}  // namespace blobstreaming::dicom::web
