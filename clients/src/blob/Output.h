#pragma once
/// Formatting for the blob CLI: sizes, times, JSON shapes of docs/CLI.md,
/// human-readable tables and the progress bar.

#include <blobstreaming/client/Result.h>
#include <blobstreaming/common/Error.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace blobstreaming::cli {

/// "no_such_blob" for Errc::no_such_blob.
const char* errc_name(Errc code) noexcept;

/// RFC 3339 UTC with milliseconds: 2026-11-22T05:31:52.123Z.
std::string rfc3339(std::chrono::system_clock::time_point t);

/// The JSON shapes of docs/CLI.md.
nlohmann::json transfer_json(const char* command, const std::string& name, const client::Result& r);
nlohmann::json blob_json(const std::string& store, const BlobInfo& info);
nlohmann::json error_json(Errc code, const std::string& message);

/// A one-line progress bar redrawn on a terminal; silent otherwise.
class ProgressBar {
public:
    /// Draws on `out` only when it is a terminal and `enabled`.
    ProgressBar(std::FILE* out, bool enabled, std::string label);
    ~ProgressBar();
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;
    void update(std::uint64_t done, std::uint64_t total);
    /// Erases the bar (before a summary line is printed).
    void clear();

private:
    std::FILE* out_;
    bool active_;
    std::string label_;
    bool drawn_ = false;
};

}  // namespace blobstreaming::cli
