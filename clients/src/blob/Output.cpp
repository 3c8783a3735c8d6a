#include "Output.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Checksum.h>

#include <cctype>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <pthread.h>
#include <unistd.h>

namespace blobstreaming::cli {

const char* errc_name(Errc code) noexcept
{
    switch (code) {
    case Errc::ok: return "ok";
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::invalid_name: return "invalid_name";
    case Errc::invalid_range: return "invalid_range";
    case Errc::no_such_blob: return "no_such_blob";
    case Errc::already_exists: return "already_exists";
    case Errc::reservation_closed: return "reservation_closed";
    case Errc::incomplete: return "incomplete";
    case Errc::digest_mismatch: return "digest_mismatch";
    case Errc::no_such_reservation: return "no_such_reservation";
    case Errc::unknown_store: return "unknown_store";
    case Errc::blob_changed: return "blob_changed";
    case Errc::out_of_space: return "out_of_space";
    case Errc::store_busy: return "store_busy";
    case Errc::limit_reached: return "limit_reached";
    case Errc::io_error: return "io_error";
    case Errc::corrupt: return "corrupt";
    case Errc::transfer_failed: return "transfer_failed";
    case Errc::timeout: return "timeout";
    case Errc::unreachable: return "unreachable";
    case Errc::refused: return "refused";
    case Errc::protocol_error: return "protocol_error";
    case Errc::cancelled: return "cancelled";
    case Errc::invalid_mdib: return "invalid_mdib";
    case Errc::unknown_handle: return "unknown_handle";
    case Errc::not_a_metric: return "not_a_metric";
    case Errc::peer_fault: return "peer_fault";
    case Errc::no_provider: return "no_provider";
    case Errc::partial: return "partial";
    }
    return "unknown";
}

std::string rfc3339(std::chrono::system_clock::time_point t)
{
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
    return buf;
}

nlohmann::json transfer_json(const char* command, const std::string& name, const client::Result& r)
{
    const double mbps = r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds / 1e6 : 0.0;
    return {{"command", command},   {"store", r.store},    {"name", name},
            {"offset", r.offset},   {"length", r.length},  {"bytes", r.bytes},
            {"seconds", r.seconds}, {"MBps", mbps},        {"checksum", r.info.checksum.text()},
            {"local", r.local},     {"streams", r.streams},
            {"compression", r.compressed ? "zstd" : "none"}, {"wire_bytes", r.wire_bytes}};
}

nlohmann::json notice_json(const client::TransferNotice& n)
{
    return {{"store", n.store},
            {"name", n.blob},
            {"direction", client::to_string(n.direction)},
            {"ticket", n.ticket},
            {"offset", n.offset},
            {"length", n.length},
            {"bytes", n.bytes},
            {"succeeded", n.succeeded},
            {"reason", n.reason},
            {"received", rfc3339(n.received)}};
}

std::string notice_line(const client::TransferNotice& n)
{
    return std::string("notice: ") + client::to_string(n.direction) + " " + quote_name(n.blob) + " store \"" + n.store +
           "\": " + (n.succeeded ? "succeeded" : "failed (" + n.reason + ")") + ", " + std::to_string(n.bytes) +
           " bytes, ticket " + n.ticket;
}

std::string json_line(nlohmann::json j)
{
    if (j.is_object()) j["version"] = kJsonVersion;
    // Never throws on a string that is not UTF-8 (callers escape values read
    // from data; what slips through is replaced, the line is still written).
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

nlohmann::json blob_json(const std::string& store, const BlobInfo& info)
{
    return {{"store", store},
            {"name", info.name},
            {"size", info.size},
            {"checksum", info.checksum.text()},
            // null: served while the store was still receiving it (read-through)
            {"committed", info.committed.time_since_epoch().count() == 0 ? nlohmann::json(nullptr)
                                                                         : nlohmann::json(rfc3339(info.committed))}};
}

nlohmann::json error_json(Errc code, const std::string& message)
{
    return {{"error", {{"code", static_cast<int>(code)}, {"name", errc_name(code)}, {"message", message}}}};
}

ProgressBar::ProgressBar(std::FILE* out, bool enabled, std::string label)
    : out_(out), active_(enabled && ::isatty(::fileno(out)) != 0), label_(std::move(label)), start_(Clock::now())
{
    if (active_) ticker_ = std::thread([this] { tick(); });
}

ProgressBar::~ProgressBar()
{
    clear();
    if (ticker_.joinable()) ticker_.join();
}

void ProgressBar::clear()
{
    std::lock_guard lock(mutex_);
    if (drawn_) std::fputs("\r\033[K", out_);
    std::fflush(out_);
    drawn_ = false;
    finished_ = true;
    stop_.notify_all();
}

void ProgressBar::tick()
{
    std::unique_lock lock(mutex_);
    while (!finished_) {
        stop_.wait_for(lock, std::chrono::milliseconds(250));
        const auto now = Clock::now();
        if (!finished_ && started_ && now - last_draw_ >= std::chrono::milliseconds(250)) draw(now);
    }
}

namespace {

/// 1536 -> "1.5 KiB": bytes in binary units, as rsync's and curl's bars.
std::string binary_units(std::uint64_t bytes)
{
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < std::size(units)) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
    return text;
}

/// 75 -> "1:15", 3725 -> "1:02:05".
std::string clock_time(double seconds)
{
    const auto s = static_cast<unsigned long long>(seconds + 0.5);
    char text[32];
    if (s >= 3600) std::snprintf(text, sizeof text, "%llu:%02llu:%02llu", s / 3600, s / 60 % 60, s % 60);
    else std::snprintf(text, sizeof text, "%llu:%02llu", s / 60, s % 60);
    return text;
}

}  // namespace

void ProgressBar::update(std::uint64_t done, std::uint64_t total)
{
    if (!active_) return;
    std::lock_guard lock(mutex_);
    if (finished_) return;
    const auto now = Clock::now();
    if (!started_) {
        started_ = true;
        if (whole_ > total && base_ == 0) base_ = whole_ - total;
        last_progress_ = now;
    }
    if (done != done_) last_progress_ = now;
    done_ = done;
    total_ = total;
    if (done < total && drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    draw(now);
}

void ProgressBar::draw(Clock::time_point now)
{
    last_draw_ = now;
    const std::uint64_t whole_done = base_ + done_, whole_total = base_ + total_;
    constexpr int kWidth = 24;
    const double fraction = whole_total == 0 ? 1.0 : static_cast<double>(whole_done) / static_cast<double>(whole_total);
    std::string bar(static_cast<std::size_t>(fraction * kWidth), '#');
    bar.resize(kWidth, '.');
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    std::string rate = "--- MB/s", left = "ETA --:--";
    if (elapsed > 0 && done_ > 0) {  // since the bar was made, just before the transfer
        const double per_second = static_cast<double>(done_) / elapsed;
        char text[32];
        std::snprintf(text, sizeof text, "%.1f MB/s", per_second / 1e6);
        rate = text;
        if (total_ >= done_) left = "ETA " + clock_time(static_cast<double>(total_ - done_) / per_second);
    }
    if (total_ == 0 && done_ > 0) {
        // A push of unknown length: no fraction, no ETA.
        std::fprintf(out_, "\r\033[K%s %s (length unknown until its end)  %s", label_.c_str(),
                     binary_units(whole_done).c_str(), rate.c_str());
        std::fflush(out_);
        drawn_ = true;
        return;
    }
    const auto still = std::chrono::duration_cast<std::chrono::seconds>(now - last_progress_);
    if (done_ < total_ && still >= std::chrono::seconds(1)) left = "stalled " + clock_time(static_cast<double>(still.count()));
    std::fprintf(out_, "\r\033[K%s [%s] %5.1f%% %s / %s  %s  %s", label_.c_str(), bar.c_str(), fraction * 100.0,
                 binary_units(whole_done).c_str(), binary_units(whole_total).c_str(), rate.c_str(), left.c_str());
    std::fflush(out_);
    drawn_ = true;
}

void end_on_closed_output()
{
    std::signal(SIGPIPE, SIG_DFL);
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_UNBLOCK, &pipe, nullptr);
    std::raise(SIGPIPE);
    std::_Exit(128 + SIGPIPE);  // not reached: the default action ends the process
}

}  // namespace blobstreaming::cli
