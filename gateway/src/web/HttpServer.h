#pragma once
/// blob-dicomd's HTTP front end (--http-address; docs/DICOM.md "DICOMweb"):
/// HTTP/1.1 with keep-alive on Boost.Beast, beside the DIMSE port.
///
/// One I/O thread runs every connection asynchronously: the TLS handshake,
/// the request's headers and body, and the writes of responses. A request
/// read whole is handed to a pool of worker threads (the index and the
/// stores are asked synchronously there); the worker's Reply posts each
/// write to the I/O thread and waits for it, except the parts of a plain
/// connection's multipart body (Reply::write_part), which the worker
/// writes to the socket itself while the I/O thread leaves it alone. So a
/// slow or silent client holds no thread while it sends, and a worker at
/// most --http-timeout per write while it reads slowly.
///
/// Limits: --http-max-connections at once (at the cap, a newcomer ends the
/// idle connection of the address holding the most if that address holds
/// two more; otherwise it is closed), --http-max-connections-per-peer from
/// one address (more are closed at accept), headers at most kMaxHeader
/// bytes (431), a body at most --http-max-body (413, told from
/// Content-Length before any of it is read), and the whole request (TLS
/// handshake, headers, body) within --http-timeout of the accept or of the
/// previous response, else the connection is closed. Out of descriptors,
/// accepting pauses instead of spinning.
///
/// Before the handler: a bearer token (--http-token-file; 401 otherwise)
/// and CORS (--http-cors-origin: the headers on every response, and OPTIONS
/// preflight answered 204 without a token, as browsers send none).

#include "GatewayOptions.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/beast/http.hpp>
#pragma GCC diagnostic pop

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace blobstreaming::dicom::web {

namespace http = boost::beast::http;

/// Largest request header block, bytes.
constexpr std::size_t kMaxHeader = 16 * 1024;

/// A request as the handler sees it: its headers, and its body in a spool
/// file (POST and PUT only; "" otherwise), removed after the handler.
struct Request {
    http::request_header<> header;
    std::string body_path;
    std::uint64_t body_size = 0;
    std::string peer;  ///< the client's IP address
};

/// How a handler answers, from its worker thread: respond() once, or
/// begin(), write() any number of times, then end(). Each call returns once
/// its bytes are with the kernel, or false when the connection failed or
/// the peer did not read within --http-timeout (the connection is then
/// closed; the handler should stop). Server, CORS and Connection headers are
/// added here.
class Reply {
public:
    virtual ~Reply() = default;
    virtual bool respond(http::response<http::string_body> response) = 0;
    /// Sends `header` with chunked transfer coding: the body follows in write()s.
    virtual bool begin(http::response<http::empty_body> header) = 0;
    virtual bool write(const void* data, std::size_t size) = 0;
    /// One part of a body written with begin(), as one chunk: `head` (the
    /// part's delimiter and headers), then its `size` bytes at `data`. With
    /// `fd` >= 0 those bytes are also bytes [file_offset, file_offset +
    /// size) of the open file `fd` (unchanged meanwhile): a plain
    /// connection then sends them from the file with sendfile(2), written
    /// by the worker itself (no copy through the process, no hand-off to
    /// the I/O thread); a TLS connection encrypts them from `data`, in one
    /// hand-off. Returns as write() does.
    virtual bool write_part(const std::string& head, const void* data, std::size_t size, int fd = -1,
                            std::uint64_t file_offset = 0) = 0;
    virtual bool end() = 0;
    /// Whether respond() or begin() was called.
    virtual bool answered() const = 0;
};

using Handler = std::function<void(const Request&, Reply&)>;

class HttpServer {
public:
    /// Binds options.http_host:http_port and serves with `handler`, called
    /// on a worker thread per request. Throws Error: unreachable naming the
    /// address when it cannot be listened on, invalid_argument naming the
    /// file when a TLS or token file cannot be used.
    HttpServer(const GatewayOptions& options, Handler handler);
    /// Stops accepting and serving, joins the threads.
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    /// HOST:PORT as bound (the actual port).
    const std::string& address() const noexcept;
    /// "https" or "http".
    const char* scheme() const noexcept;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

/// A plain-text response (`text` and a newline) with `status`.
http::response<http::string_body> text_response(http::status status, const std::string& text);

}  // namespace blobstreaming::dicom::web
