/// ServerConnection's deadlines and the end of a transfer: the inactivity,
/// handshake and idle timeouts (docs/PROTOCOL.md, "Connections"), a
/// cancellation on the control plane, and how a transfer ends (completion
/// notice, throughput, a push's reservation parked for resuming or aborted).
#include "ServerConnection.h"

#include "CommitPool.h"
#include "ReservationTable.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <ace/Reactor.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>

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

}  // namespace

ServerConnection::Throughput ServerConnection::record_throughput(std::uint64_t bytes) noexcept
{
    const double seconds =
        std::max(1e-6, std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
    const double mbps = static_cast<double>(bytes) / 1e6 / seconds;
    server_->last_mbps = mbps;
    return {seconds, mbps};
}
void ServerConnection::end_transfer(bool succeeded, const std::string& reason)
{
    if (!in_transfer_) return;
    in_transfer_ = false;
    --server_->active;
    const bool push = request_.type == protocol::FrameType::push;
    const double seconds =
        std::max(1e-6, std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
    server_->metrics.transfer_ended(push ? TransferMetrics::Direction::push : TransferMetrics::Direction::pull,
                                    succeeded, body_done_, seconds);
    if (server_->config.on_transfer_end) server_->config.on_transfer_end();
    // One line per transfer in logfmt (docs/DEPLOYMENT.md, "Logs"): the
    // fields stay, whatever the message around them becomes.
    const std::string line =
        fmt::format("transfer direction={} blob={} bytes={} seconds={:.6f} MBps={:.2f} peer={} outcome={}",
                    push ? "push" : "pull", logfmt_value(binding_.blob), body_done_, seconds,
                    static_cast<double>(body_done_) / 1e6 / seconds, logfmt_value(peer_), succeeded ? "ok" : "failed");
    if (succeeded) spdlog::info("{}", line);
    else spdlog::warn("{} reason={}", line, logfmt_value(reason));
    if (binding_.control && binding_.control->on_finished) {
        TransferOutcome outcome;
        outcome.ticket = request_.ticket;
        outcome.succeeded = succeeded;
        outcome.bytes = body_done_;
        outcome.reason = reason;
        try {
            binding_.control->on_finished(outcome);
        } catch (...) {
            spdlog::warn("data connection {}: the completion notice of ticket {} failed", peer_,
                         protocol::ticket_tag(request_.ticket));
        }
    }
}

void ServerConnection::end_reservation_away(bool keep)
{
    // The job owns the reservation (std::function wants a copyable
    // callable); it refers to the table, not to this connection, which may
    // be gone before it runs.
    auto held = std::make_shared<std::unique_ptr<Reservation>>(std::move(reservation_));
    ReservationTable* table = &server_->reservations;
    const std::uint64_t id = binding_.reservation;
    const std::string blob = binding_.blob;
    server_->commits->submit(
        [held, table, id, blob, keep] {
            Reservation& r = **held;
            if (keep) {
                // As below: kept for the grace period, for the client to resume.
                r.suspend();
                spdlog::info("push {}: reservation kept with {} of {} bytes for resuming", quote_name(blob),
                             r.written(), r.size());
                table->park(id, std::move(*held));
            } else {
                r.abort();
                held->reset();
                table->release(id);
            }
        },
        [] {});
}

void ServerConnection::fail_transfer(Errc status, const std::string& reason, bool tell_peer)
{
    const bool push = request_.type == protocol::FrameType::push;
    // A part keeps what landed for the part to continue, unless the store
    // failed (then the whole reservation goes).
    end_part(status == Errc::transfer_failed || status == Errc::timeout || status == Errc::cancelled);
    if (reservation_ && server_->commits && reservation_->ending_waits()) {
        end_reservation_away(status == Errc::transfer_failed || status == Errc::timeout);
    } else if (reservation_) {
        if (status == Errc::transfer_failed || status == Errc::timeout) {
            // The connection broke or stalled: keep what arrived for the
            // grace period, so that the client can resume the push.
            spdlog::info("push {}: reservation kept with {} of {} bytes for resuming", quote_name(binding_.blob),
                         reservation_->written(), reservation_->size());
            server_->reservations.park(binding_.reservation, std::move(reservation_));
        } else {
            reservation_->abort();
            reservation_.reset();
            server_->reservations.release(binding_.reservation);
        }
    }
    release_range();
    end_transfer(false, reason);
    if (tell_peer && push) {
        // Best effort, never blocking: the peer may be stuck sending.
        protocol::Response response;
        response.status = status;
        response.length = body_done_;
        response.message = reason;
        const std::string frame = protocol::encode(response);
        [[maybe_unused]] const IoResult r = write_some(*io_, frame.data(), frame.size());
    }
}

void ServerConnection::progress() noexcept { last_progress_ = std::chrono::steady_clock::now(); }

std::chrono::milliseconds ServerConnection::timeout() const noexcept
{
    // A client may ask for a shorter timeout, never a longer one: a stalled
    // (or hostile) client must not hold a reservation past the daemon's limit.
    if (in_transfer_ && binding_.inactivity_timeout.count() > 0)
        return std::min(binding_.inactivity_timeout, server_->config.inactivity_timeout);
    return server_->config.inactivity_timeout;
}

ServerConnection::Deadline ServerConnection::deadline() const noexcept
{
    if (in_transfer_) return {last_progress_ + timeout(), Deadline::Kind::inactivity};
    if (!authenticated_) {
        // Counted from the accept, not from the last byte: a Request (or a
        // TLS handshake) trickled in byte by byte does not keep the slot.
        SteadyTime at = accepted_ + server_->config.handshake_timeout;
        if (phase_ == Phase::draining) at = std::min(at, last_progress_ + timeout());
        return {at, Deadline::Kind::handshake};
    }
    if (phase_ == Phase::request && frame_.got() == 0)
        return {last_progress_ + server_->config.idle_timeout, Deadline::Kind::idle};
    return {last_progress_ + timeout(), Deadline::Kind::inactivity};
}

void ServerConnection::arm_timer()
{
    if (closed_ || reactor() == nullptr) return;
    using namespace std::chrono;
    const SteadyTime now = steady_clock::now();
    SteadyTime wake = deadline().at;
    // In a transfer, wake at least every second so that a cancellation on
    // the control plane is noticed promptly.
    if (in_transfer_) wake = std::min(wake, now + seconds(1));
    if (timer_id_ != -1) {
        if (timer_at_ <= wake) return;  // early enough: it re-evaluates when it fires
        disarm_timer();
    }
    const auto wait = std::max(duration_cast<milliseconds>(wake - now), milliseconds(1));
    ACE_Time_Value delay;
    delay.msec(static_cast<long>(wait.count()));
    timer_id_ = reactor()->schedule_timer(this, nullptr, delay);
    timer_at_ = now + wait;
}

void ServerConnection::disarm_timer()
{
    if (timer_id_ == -1) return;
    if (reactor()) reactor()->cancel_timer(timer_id_);
    timer_id_ = -1;
}
int ServerConnection::handle_timeout(const ACE_Time_Value&, const void*)
{
    timer_id_ = -1;
    if (closed_) return 0;
    if (in_transfer_ && binding_.control && binding_.control->cancelled) {
        fail_transfer(Errc::cancelled, "cancelled on the control plane after " + std::to_string(body_done_) + " bytes",
                      true);
        return -1;
    }
    using namespace std::chrono;
    const SteadyTime now = steady_clock::now();
    const Deadline due = deadline();
    if (now < due.at) {
        arm_timer();
        return 0;
    }
    const auto seconds_of = [](auto d) { return duration_cast<duration<double>>(d).count(); };
    const auto idle = now - last_progress_;
    const std::string why =
        fmt::format("no progress for {:.1f} s (inactivity timeout {:.1f} s)", seconds_of(idle), seconds_of(timeout()));
    if (in_transfer_) {
        fail_transfer(Errc::timeout, why + " after " + std::to_string(body_done_) + " bytes", true);
        return -1;
    }
    switch (due.kind) {
    case Deadline::Kind::handshake:
        if (phase_ != Phase::draining && server_->expired_log.allow())
            spdlog::warn("data connection {}: closed: no valid Request within {:.1f} s of connecting (handshake "
                         "timeout; {})",
                         peer_, seconds_of(server_->config.handshake_timeout),
                         phase_ == Phase::handshake ? std::string("still in the TLS handshake")
                         : frame_.got() > 0
                             ? fmt::format("{} of {} bytes of a Request received", frame_.got(), protocol::kRequestSize)
                             : std::string("nothing received"));
        break;
    case Deadline::Kind::idle:
        // The reactor runs expired timers before ready sockets: a Request
        // that arrived with the deadline is served, not cut off.
        if (io_ && peek(*io_).done()) {
            progress();
            arm_timer();
            return handle_input(get_handle());
        }
        spdlog::info("data connection {}: closed after {:.1f} s idle between transfers (idle timeout {:.1f} s)", peer_,
                     seconds_of(idle), seconds_of(server_->config.idle_timeout));
        break;
    case Deadline::Kind::inactivity:
        if (phase_ != Phase::draining) spdlog::warn("data connection {}: closed: {} within a Request", peer_, why);
        break;
    }
    return -1;
}

}  // namespace blobstreaming::server
