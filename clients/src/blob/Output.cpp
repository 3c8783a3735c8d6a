#include "Output.h"

#include <blobstreaming/common/Checksum.h>

#include <cctype>
#include <ctime>
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
    return {{"command", command},   {"store", r.store},   {"name", name},
            {"offset", r.offset},   {"length", r.length}, {"bytes", r.bytes},
            {"seconds", r.seconds}, {"mbps", mbps},       {"checksum", r.info.checksum.text()},
            {"local", r.local}};
}

nlohmann::json blob_json(const std::string& store, const BlobInfo& info)
{
    return {{"store", store},
            {"name", info.name},
            {"size", info.size},
            {"checksum", info.checksum.text()},
            {"committed", rfc3339(info.committed)}};
}

nlohmann::json error_json(Errc code, const std::string& message)
{
    return {{"error", {{"code", static_cast<int>(code)}, {"name", errc_name(code)}, {"message", message}}}};
}

ProgressBar::ProgressBar(std::FILE* out, bool enabled, std::string label)
    : out_(out), active_(enabled && ::isatty(::fileno(out)) != 0), label_(std::move(label))
{}

ProgressBar::~ProgressBar() { clear(); }

void ProgressBar::clear()
{
    if (drawn_) std::fputs("\r\033[K", out_);
    drawn_ = false;
}

void ProgressBar::update(std::uint64_t done, std::uint64_t total)
{
    if (!active_) return;
    constexpr int kWidth = 30;
    const double fraction = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(out_, "\r%s [%s] %5.1f%% %llu/%llu bytes", label_.c_str(), bar.c_str(), fraction * 100.0,
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
    std::fflush(out_);
    drawn_ = true;
}

}  // namespace blobstreaming::cli
