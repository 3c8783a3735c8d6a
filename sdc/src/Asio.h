#pragma once
// Boost.Asio and Boost.Beast, included in one place. GCC 12 reports a
// -Wnull-dereference inside Asio's scheduler once it is inlined into our
// code, and (with the sanitizers) a -Wmaybe-uninitialized in Beast's
// parser; neither is ours, so they are silenced for these headers only.

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/multicast.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#pragma GCC diagnostic pop
