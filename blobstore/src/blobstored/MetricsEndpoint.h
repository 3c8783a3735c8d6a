#pragma once
/// `blobstored --metrics-address HOST:PORT`: Prometheus' text format at
/// GET /metrics over HTTP/1.1 (Boost.Beast), on a thread of its own, so
/// that a scrape never waits for the data plane nor the data plane for a
/// scrape. At most kMaxSessions connections at once (more are closed at
/// accept), each ended after kSessionTimeout without a complete request.
/// A TLS store serves it over TLS only, with the store's certificate, and
/// answers only a scraper whose certificate verifies against the store's CA
/// (as `status`: store-wide figures need a verified certificate).
/// Out of descriptors, accepting pauses instead of spinning.

#include "DaemonOptions.h"

#include <blobstreaming/common/TlsFiles.h>

#include <functional>
#include <memory>
#include <string>

namespace blobstreaming::daemon {

class MetricsEndpoint {
public:
    /// Binds HOST:PORT (port 0: ephemeral) and starts serving `render()`'s
    /// text, called on the endpoint's thread once per scrape; over TLS when
    /// `tls` is enabled (the client must present a certificate of `tls.ca`).
    /// Error (unreachable) naming the address when it cannot be listened
    /// on; Error (invalid_argument) naming the file when a TLS file is bad.
    MetricsEndpoint(const HostPort& address, std::function<std::string()> render, const TlsFiles& tls = {});
    /// Stops serving and joins the thread.
    ~MetricsEndpoint();
    MetricsEndpoint(const MetricsEndpoint&) = delete;
    MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

    /// HOST:PORT as bound (the actual port).
    const std::string& address() const noexcept;
    /// "https" for a TLS endpoint, else "http".
    const char* scheme() const noexcept;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace blobstreaming::daemon
