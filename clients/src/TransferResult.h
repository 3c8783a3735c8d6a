#pragma once
/// Results of pushes and pulls: built from an Error or from what a data
/// connection reports, and the one INFO line logged per transfer.

#include "DataPlane.h"

#include <blobstreaming/client/Result.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/common.h>

#include <string>

namespace blobstreaming::client {

/// The failed Result of `e` (its code and message) in `store` ("" when not
/// known yet).
Result failure(const Error& e, const std::string& store = {});

/// The Result of a transfer on `ticket` in `store`: where it started, how
/// much moved in how long, and the error when it failed. Success values
/// (`info`) are the caller's to fill.
Result result_of(const JobOutcome& outcome, const std::string& store, const Ticket& ticket);

/// "pushed "N" to store "S": B bytes in T s (R MB/s) via PEER" at INFO
/// (or `level`: a series' slices in place are DEBUG, InPlaceSeries.h).
void log_transfer(const char* verb, const char* dir, const std::string& name, const std::string& store, const Result& r,
                  const std::string& peer, spdlog::level::level_enum level = spdlog::level::info);

}  // namespace blobstreaming::client
