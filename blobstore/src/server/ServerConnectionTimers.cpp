/// ServerConnection's deadlines: the inactivity, handshake and idle
/// timeouts (docs/PROTOCOL.md, "Connections") and a cancellation on the
/// control plane, noticed within a second.
#include "ServerConnection.h"

#include <blobstreaming/common/Error.h>

#include <ace/Reactor.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace blobstreaming::server {

void ServerConnection::progress() noexcept { last_progress_ = std::chrono::steady_clock::now(); }

std::chrono::milliseconds ServerConnection::timeout() const noexcept
{
    // A client may ask for a shorter timeout, never a longer one: a stalled
    // (or hostile) client must not hold a reservation past the daemon's limit.
    if (in_transfer() && transfer_->binding().inactivity_timeout.count() > 0)
        return std::min(transfer_->binding().inactivity_timeout, server_->config.inactivity_timeout);
    return server_->config.inactivity_timeout;
}

ServerConnection::Deadline ServerConnection::deadline() const noexcept
{
    if (in_transfer()) return {last_progress_ + timeout(), Deadline::Kind::inactivity};
    if (!authenticated_) {
        // Counted from the accept, not from the last byte: a Request (or a
        // TLS handshake) trickled in byte by byte does not keep the slot.
        SteadyTime at = accepted_ + server_->config.handshake_timeout;
        if (phase_ == Phase::draining) at = std::min(at, last_progress_ + timeout());
        return {at, Deadline::Kind::handshake};
    }
    if (phase_ == Phase::request && request_frame_.got() == 0)
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
    if (in_transfer()) wake = std::min(wake, now + seconds(1));
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
    if (in_transfer() && transfer_->cancelled()) {
        transfer_->fail(Errc::cancelled,
                        "cancelled on the control plane after " + std::to_string(transfer_->bytes_done()) + " bytes",
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
    if (in_transfer()) {
        transfer_->fail(Errc::timeout, why + " after " + std::to_string(transfer_->bytes_done()) + " bytes", true);
        return -1;
    }
    switch (due.kind) {
    case Deadline::Kind::handshake:
        if (phase_ != Phase::draining && server_->expired_log.allow())
            spdlog::warn("data connection {}: closed: no valid Request within {:.1f} s of connecting (handshake "
                         "timeout; {})",
                         peer_, seconds_of(server_->config.handshake_timeout),
                         phase_ == Phase::handshake ? std::string("still in the TLS handshake")
                         : request_frame_.got() > 0
                             ? fmt::format("{} of {} bytes of a Request received", request_frame_.got(),
                                           protocol::kRequestSize)
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
