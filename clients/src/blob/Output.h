#pragma once
/// Formatting for the blob CLI: sizes, times, JSON shapes of docs/CLI.md,
/// human-readable tables and the progress bar.

#include <blobstreaming/client/Result.h>
#include <blobstreaming/common/Error.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>
#include <mutex>
#include <condition_variable>
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
/// A transfer notice (--notices): store, name, direction, ticket, offset,
/// length, succeeded, bytes, reason, received (RFC 3339).
nlohmann::json notice_json(const client::TransferNotice& n);
/// The one-line text form: `notice: push "NAME" store "S": succeeded, N bytes, ticket HEX`.
std::string notice_line(const client::TransferNotice& n);
nlohmann::json blob_json(const std::string& store, const BlobInfo& info);
nlohmann::json error_json(Errc code, const std::string& message);

/// The version of `--json` objects (docs/CLI.md, "JSON output"): 2 since
/// `MBps` replaced `mbps` and every object carries it.
constexpr int kJsonVersion = 2;
/// `j` with its "version" (objects) as one line, newline included.
std::string json_line(nlohmann::json j);

/// A one-line progress bar redrawn on a terminal (at most 10 times a
/// second, and at the end); silent otherwise: percentage, bytes in binary
/// units, the rate in MB/s (10^6 bytes/s) and the time left.
class ProgressBar {
public:
    /// Draws on `out` only when it is a terminal and `enabled`; then also
    /// redraws four times a second on a thread of its own, so that a
    /// transfer whose bytes stop shows it: "stalled N s" in place of the
    /// time left once no byte has moved for a second.
    ProgressBar(std::FILE* out, bool enabled, std::string label);
    ~ProgressBar();
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;
    /// A resumed transfer moves the rest of the Blob: with the bytes there
    /// before (set_base), or the whole Blob's size (set_whole: the rest is
    /// then the difference), the bar counts the whole Blob. Before the
    /// first update().
    void set_base(std::uint64_t bytes_before) { base_ = bytes_before; }
    void set_whole(std::uint64_t whole_size) { whole_ = whole_size; }
    /// Any thread.
    void update(std::uint64_t done, std::uint64_t total);
    /// Erases the bar for good (before a summary line is printed).
    void clear();

private:
    using Clock = std::chrono::steady_clock;
    void draw(Clock::time_point now);  ///< mutex_ held
    void tick();

    std::FILE* out_;
    const bool active_;
    std::string label_;
    std::uint64_t base_ = 0;
    std::uint64_t whole_ = 0;
    std::mutex mutex_;  ///< everything below
    bool started_ = false;
    bool finished_ = false;
    std::uint64_t done_ = 0;
    std::uint64_t total_ = 0;
    Clock::time_point start_;
    Clock::time_point last_draw_{};
    Clock::time_point last_progress_{};
    bool drawn_ = false;
    std::condition_variable stop_;
    std::thread ticker_;
};

/// Standard output's reader went away (EPIPE: `blob ls | head -3`): ends
/// the process as ls(1) and cat(1) end, by SIGPIPE, silently (status 141 in
/// a shell), even where the libraries ignore the signal. Never returns.
[[noreturn]] void end_on_closed_output();

}  // namespace blobstreaming::cli
