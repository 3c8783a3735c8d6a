#pragma once
/// Where libblobclient's log lines go (docs/CLIENT_API.md, "Logging").
///
/// The library never writes to standard output, nor through spdlog's
/// default logger (the application's). By default it logs to standard error
/// at warning level: failures it cannot report through a Result (an
/// exception escaping a completion callback, a reservation it could not
/// abort). At info level it logs one line per transfer, at debug level
/// connection reuse and fallbacks.
///
/// An application that logs with spdlog hands the library a logger of its
/// own: its sinks (file, syslog, a sink of its own class forwarding to any
/// other logging framework) and its level decide what is kept. Build with
/// `pkg-config --cflags --libs blobstreaming spdlog`.
///
///     auto log = std::make_shared<spdlog::logger>("blobclient", app_sink);
///     log->set_level(spdlog::level::info);
///     blobstreaming::client::set_logger(log);

#include <memory>

namespace spdlog {
class logger;
}  // namespace spdlog

namespace blobstreaming::client {

/// Makes `logger` the library's logger, for every Session of the process,
/// from now on (lines being logged meanwhile may still go to the previous
/// one, which the library keeps alive until they have). nullptr restores
/// the default (standard error, warning level). Thread-safe. The logger is
/// called from the library's threads (reactor, control calls): its sinks
/// must be thread-safe (the `_mt` ones).
void set_logger(std::shared_ptr<spdlog::logger> logger);

/// The library's current logger (never null): e.g. `logger()->set_level(
/// spdlog::level::debug)` to see more of the default one.
std::shared_ptr<spdlog::logger> logger() noexcept;

}  // namespace blobstreaming::client
