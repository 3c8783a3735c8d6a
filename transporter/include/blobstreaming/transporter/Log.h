#pragma once
/// The logger of the libraries (libblobtransporter, libblobclient): every
/// line they log goes through library_log(), never through spdlog's default
/// logger, which belongs to the application (and writes to its stdout).
/// Programs of ours hand it their own logger (set_library_logger); an
/// application does so through client::set_logger (Logging.h).

#include <spdlog/logger.h>

#include <memory>

namespace blobstreaming {

/// The current library logger; by default one writing to standard error at
/// warning level. Thread-safe; never null.
std::shared_ptr<spdlog::logger> library_log() noexcept;

/// Replaces the library logger (its level is the logger's own); nullptr
/// restores the default. Thread-safe: lines being logged meanwhile go to
/// the old or the new logger, and the old one stays alive until they have.
void set_library_logger(std::shared_ptr<spdlog::logger> logger);

}  // namespace blobstreaming
