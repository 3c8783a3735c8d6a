#pragma once
/// One timed run's outcome, written as iperf3-shaped JSON (start,
/// intervals, end) plus variant, direction, blob_bytes, socket_buffer, link
/// and run, or as one human-readable line.

#include "Config.h"
#include "Variant.h"

#include <chrono>
#include <cstdint>
#include <string>

namespace blobstreaming::bench {

struct RunRecord {
    std::uint32_t run = 0;  ///< 1-based
    std::chrono::system_clock::time_point started;
    double seconds = 0;       ///< wall time of the `count` transactions
    std::uint64_t bytes = 0;  ///< payload bytes moved
    double cpu_user = 0;      ///< this process's CPU seconds during the run
    double cpu_system = 0;
    bool verified = false;  ///< every digest matched
    std::string error;      ///< "" or what went wrong (digest or transfer)
};

/// One line of JSON (no newline).
std::string run_json(const Config& config, const TransportInfo& info, const RunRecord& record);
/// One line of text (no newline).
std::string run_text(const Config& config, const RunRecord& record);
/// {"error": message, "variant": ..., ...} for a failure before any run.
std::string error_json(const Config& config, const std::string& message);

}  // namespace blobstreaming::bench
