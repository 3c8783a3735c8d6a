/// What every transfer does alike: its start, how it fails, and how it ends
/// (the active count, metrics, one logfmt line, the completion notice).
#include "Transfer.h"

#include <blobstreaming/transporter/DataIo.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace blobstreaming::server {

namespace {

/// A logfmt value: as it is when it needs no quoting, else in double quotes
/// with `"` and `\` escaped and control characters as \n, \t or \xHH.
std::string logfmt_value(const std::string& text)
{
    const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return static_cast<unsigned char>(c) > ' ' && c != '"' && c != '=' && c != '\\' && c != 0x7f;
    });
    if (plain) return text;
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (static_cast<unsigned char>(c) < ' ' || c == 0x7f) {
            out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
            out += c;
        }
    }
    return out + "\"";
}

double seconds_since(Transfer::SteadyTime start) noexcept
{
    return std::max(1e-6, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

Transfer::Transfer(DataServer::Impl& server, TransferLink& link, const protocol::Request& request,
                   TicketBinding binding)
    : server_(server), link_(link), request_(request), binding_(std::move(binding)),
      started_(std::chrono::steady_clock::now())
{
    ++server_.active;
}

void Transfer::fail(Errc status, const std::string& reason, bool tell_peer)
{
    abandon(status);
    end(false, reason);
    if (tell_peer && request_.type == protocol::FrameType::push) {
        // Best effort, never blocking: the peer may be stuck sending.
        protocol::Response response;
        response.status = status;
        response.length = body_done_;
        response.message = reason;
        const std::string frame = protocol::encode(response);
        [[maybe_unused]] const IoResult r = write_some(link_.io(), frame.data(), frame.size());
    }
}

void Transfer::record_throughput(std::uint64_t bytes) noexcept
{
    server_.last_mbps = static_cast<double>(bytes) / 1e6 / seconds_since(started_);
}

void Transfer::log_line(bool succeeded, const std::string& reason, double seconds) const
{
    const bool push = request_.type == protocol::FrameType::push;
    const std::string line =
        fmt::format("transfer direction={} blob={} bytes={} seconds={:.6f} MBps={:.2f} peer={} outcome={}",
                    push ? "push" : "pull", logfmt_value(binding_.blob), body_done_, seconds,
                    static_cast<double>(body_done_) / 1e6 / seconds, logfmt_value(link_.peer_name()),
                    succeeded ? "ok" : "failed") +
        (compressed_ ? fmt::format(" wire=zstd wire_bytes={}", wire_bytes_) : std::string());
    if (succeeded) spdlog::info("{}", line);
    else spdlog::warn("{} reason={}", line, logfmt_value(reason));
}

void Transfer::end(bool succeeded, const std::string& reason)
{
    if (ended_) return;
    ended_ = true;
    --server_.active;
    const bool push = request_.type == protocol::FrameType::push;
    const double seconds = seconds_since(started_);
    server_.metrics.transfer_ended(push ? TransferMetrics::Direction::push : TransferMetrics::Direction::pull,
                                   succeeded, body_done_, seconds);
    if (server_.config.on_transfer_end) server_.config.on_transfer_end();
    // One line per transfer in logfmt (docs/DEPLOYMENT.md, "Logs"): the
    // fields stay, whatever the message around them becomes. Made only
    // when it is logged (a quiet daemon's small transfers would pay for it).
    if (spdlog::should_log(succeeded ? spdlog::level::info : spdlog::level::warn)) log_line(succeeded, reason, seconds);
    if (binding_.control && binding_.control->on_finished) {
        TransferOutcome outcome;
        outcome.ticket = request_.ticket;
        outcome.succeeded = succeeded;
        outcome.bytes = body_done_;
        outcome.reason = reason;
        try {
            binding_.control->on_finished(outcome);
        } catch (...) {
            spdlog::warn("data connection {}: the completion notice of ticket {} failed", link_.peer_name(),
                         protocol::ticket_tag(request_.ticket));
        }
    }
}

}  // namespace blobstreaming::server
