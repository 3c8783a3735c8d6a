#pragma once
// Boost.Asio and Boost.Beast (with their OpenSSL streams), included in one
// place. GCC 12 reports a -Wnull-dereference inside Asio's scheduler once it
// is inlined into our code; it is not ours, so it is silenced for these
// headers only. (With the sanitizers GCC also reports a
// -Wmaybe-uninitialized in Beast's parser that a pragma cannot reach: see
// sdc/local.mk.)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/multicast.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#pragma GCC diagnostic pop

namespace blobstreaming::sdc {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using tls_stream = beast::ssl_stream<beast::tcp_stream>;

}  // namespace blobstreaming::sdc
