#include "ServerConnection.h"

#include "ReservationTable.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/blobstore/Store.h>
#include <blobstreaming/transporter/SocketOptions.h>

#include <ace/INET_Addr.h>
#include <ace/Reactor.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/sendfile.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace blobstreaming::server {
namespace {

using Base = ACE_Svc_Handler<ACE_SOCK_Stream, ACE_NULL_SYNCH>;

/// Largest single recv()/send()/sendfile() request.
constexpr std::size_t kChunk = std::size_t{4} << 20;
/// Bytes one dispatch may move before yielding to the other connections.
constexpr std::uint64_t kDispatchBudget = std::uint64_t{32} << 20;
/// Bytes read and discarded after a refusal before giving up on a clean close.
constexpr std::uint64_t kMaxDrain = std::uint64_t{64} << 20;

bool would_block(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

std::string bytes_of(std::uint64_t done, std::uint64_t total)
{
    return std::to_string(done) + " of " + std::to_string(total) + " bytes";
}

/// The Errc of a store's failure to take bytes: its own when it is one of
/// ours (out_of_space), else io_error.
Errc store_errc(const std::error_code& ec)
{
    return ec.category() == error_category() ? static_cast<Errc>(ec.value()) : Errc::io_error;
}

std::string store_error_text(const Reservation& r, const std::error_code& ec)
{
    return r.error_message().empty() ? ec.message() : r.error_message();
}

}  // namespace

// The data server's reactor from the start: ACE_Svc_Handler's default is
// ACE_Reactor::instance(), a select() reactor created on first use whose
// notification pipe aborts the process (FD_SET past FD_SETSIZE) once the
// daemon holds more than 1024 descriptors.
ServerConnection::ServerConnection(DataServer::Impl* server, std::string peer_ip)
    : Base(nullptr, nullptr, server ? server->reactor.get() : nullptr), server_(server), peer_ip_(std::move(peer_ip))
{
}

ServerConnection::~ServerConnection() = default;

int ServerConnection::open(void* acceptor)
{
    ACE_INET_Addr addr;
    if (peer().get_remote_addr(addr) == 0) {
        char host[INET6_ADDRSTRLEN + 1] = {};
        if (addr.get_host_addr(host, sizeof host) != nullptr)
            peer_ = std::string(host) + ":" + std::to_string(addr.get_port_number());
    }
    if (peer().enable(ACE_NONBLOCK) == -1) {
        spdlog::warn("data connection {}: cannot make the socket non-blocking: {}", peer_, std::strerror(errno));
        return -1;
    }
    apply_socket_options(get_handle(), server_->config.socket, peer_);
    try {
        if (server_->config.tls) {
            io_ = std::make_unique<Channel>(get_handle(), *server_->config.tls);
            phase_ = Phase::handshake;
        } else {
            io_ = std::make_unique<Channel>(get_handle());
        }
    } catch (const Error& e) {
        spdlog::warn("data connection {}: {}", peer_, e.what());
        return -1;
    }
    server_->connections.insert(this);
    server_->limits.add(this, peer_ip_);
    spdlog::debug("data connection {}: accepted", peer_);
    if (Base::open(acceptor) == -1) {
        spdlog::warn("data connection {}: cannot register with the reactor: {}", peer_, std::strerror(errno));
        return -1;
    }
    // Whatever the client does, it has the handshake timeout to present a
    // valid Request: the timer runs from now on, plain TCP or TLS.
    accepted_ = std::chrono::steady_clock::now();
    progress();
    arm_timer();
    return phase_ == Phase::handshake ? continue_handshake() : 0;
}

int ServerConnection::continue_handshake()
{
    switch (io_->handshake()) {
    case Channel::Handshake::want_read: return set_mask(ACE_Event_Handler::READ_MASK) ? 0 : -1;
    case Channel::Handshake::want_write: return set_mask(ACE_Event_Handler::WRITE_MASK) ? 0 : -1;
    case Channel::Handshake::failed:
        spdlog::warn("data connection {}: TLS handshake failed: {}", peer_, io_->handshake_error());
        return -1;
    case Channel::Handshake::done: break;
    }
    subject_ = io_->peer_subject();
    spdlog::debug("data connection {}: TLS established with \"{}\"", peer_, subject_);
    phase_ = Phase::request;  // the handshake deadline still runs
    if (!set_mask(ACE_Event_Handler::READ_MASK)) return -1;
    return io_->pending() > 0 ? handle_input(get_handle()) : 0;
}

// ---- input ------------------------------------------------------------------

int ServerConnection::handle_input(ACE_HANDLE)
{
    if (closed_) return -1;
    switch (phase_) {
    case Phase::handshake: return continue_handshake();
    case Phase::request: break;
    case Phase::push_body: return read_push_body();
    case Phase::push_trailer: return read_trailer();
    case Phase::draining: return drain_input();
    case Phase::sending: return 0;  // input is masked while sending
    }
    while (request_got_ < protocol::kRequestSize) {
        const long n = io_->read(request_buf_ + request_got_, protocol::kRequestSize - request_got_);
        if (n > 0) {
            request_got_ += static_cast<std::size_t>(n);
            progress();
            arm_timer();
            continue;
        }
        if (n == 0) {
            if (request_got_ == 0)
                spdlog::debug("data connection {}: closed by the peer", peer_);
            else
                spdlog::warn("data connection {}: closed by the peer after {} of {} bytes of a Request", peer_,
                             request_got_, protocol::kRequestSize);
            return -1;
        }
        if (errno == EINTR) continue;
        if (would_block(errno)) return 0;
        spdlog::warn("data connection {}: receive failed while waiting for a Request: {}", peer_,
                     io_->error_text(errno));
        return -1;
    }
    return on_request();
}

int ServerConnection::on_request()
{
    request_got_ = 0;
    protocol::Request request;
    std::string why;
    if (protocol::decode(request_buf_, request, why)) {
        spdlog::warn("data connection {}: protocol error: {}", peer_, why);
        return refuse(Errc::protocol_error, why);
    }
    try {
        binding_ = server_->tickets.consume(request);
    } catch (const Error& e) {
        spdlog::warn("data connection {}: refused: {}", peer_, e.what());
        return refuse(e.code(), e.what());
    }
    if (server_->config.tls && binding_.client != subject_) {
        const std::string denied = "permission denied: ticket " + protocol::ticket_tag(request.ticket) +
                                   "... was issued to client \"" + binding_.client + "\", not to \"" + subject_ + "\"";
        spdlog::warn("data connection {}: refused: {}", peer_, denied);
        return refuse(Errc::refused, denied);
    }
    authenticate();
    request_ = request;
    in_transfer_ = true;
    ++server_->active;
    body_done_ = 0;
    started_ = std::chrono::steady_clock::now();
    progress();
    arm_timer();

    if (request.type == protocol::FrameType::push) {
        try {
            reservation_ = server_->reservations.claim(binding_.reservation);
        } catch (const Error& e) {
            spdlog::warn("data connection {}: refused: {}", peer_, e.what());
            end_transfer(false, e.what());
            return refuse(Errc::refused, e.what());
        }
        if (reservation_->written() != request.offset) {
            // Another connection resumed this reservation since the ticket was issued.
            const std::string moved = "push " + quote_name(binding_.blob) + " at byte " +
                                      std::to_string(request.offset) + ": the reservation now holds " +
                                      std::to_string(reservation_->written()) + " bytes";
            spdlog::warn("data connection {}: refused: {}", peer_, moved);
            server_->reservations.park(binding_.reservation, std::move(reservation_));
            end_transfer(false, moved);
            return refuse(Errc::refused, moved);
        }
        spdlog::debug("data connection {}: push {} of {} bytes (ticket {}) started", peer_,
                      quote_name(binding_.blob), request.length, protocol::ticket_tag(request.ticket));
        phase_ = Phase::push_body;
        return read_push_body();
    }

    protocol::Response response;
    try {
        range_ = read_ticket_version();
    } catch (const Error& e) {
        range_ = BlobRange{};
        spdlog::warn("data connection {}: pull {} failed: {}", peer_, quote_name(binding_.blob), e.what());
        end_transfer(false, e.what());
        response.status = e.code();
        response.message = e.what();
        return start_sending(protocol::encode(response), false);
    }
    spdlog::debug("data connection {}: pull {} [{}, +{}) (ticket {}) started, {}", peer_,
                  quote_name(binding_.blob), request.offset, request.length, protocol::ticket_tag(request.ticket),
                  range_.fd() >= 0 ? "sendfile" : "from memory");
    response.length = range_.size();
    response.blob_size = range_.blob().size;
    response.digest = range_.blob().digest;
    send_body_ = true;
    return start_sending(protocol::encode(response), false);
}

BlobRange ServerConnection::read_ticket_version() const
{
    const std::uint64_t offset = request_.offset;
    const std::uint64_t length = request_.length;
    if (!binding_.version) return server_->store.read_at(binding_.blob, offset, length);
    const BlobInfo& want = *binding_.version;
    const std::string changed = "pull " + quote_name(binding_.blob) + ": the Blob changed since ticket " +
                                protocol::ticket_tag(request_.ticket) + "... was issued for its version of " +
                                describe_version(want);
    const auto replaced = [&](const BlobInfo& now) {
        return Error(Errc::blob_changed, changed + "; the store now holds " + describe_version(now) +
                                             "; pull again for the current version");
    };
    const Error removed(Errc::blob_changed, changed + "; it was removed since");
    BlobRange range;
    try {
        range = server_->store.read_at(binding_.blob, offset, length);
    } catch (const Error& e) {
        // The range was checked against that version when the ticket was
        // issued: a Blob that is gone or now too short was removed or replaced.
        if (e.code() == Errc::no_such_blob) throw removed;
        if (e.code() != Errc::invalid_range) throw;
        BlobInfo now;
        try {
            now = server_->store.stat(binding_.blob);
        } catch (const Error& gone) {
            if (gone.code() == Errc::no_such_blob) throw removed;
            throw;
        }
        throw replaced(now);
    }
    // The view re-read the Blob's own header: it is one version throughout.
    if (!same_version(range.blob(), want)) throw replaced(range.blob());
    return range;
}

int ServerConnection::read_push_body()
{
    std::uint64_t budget = kDispatchBudget;
    while (body_done_ < request_.length) {
        if (binding_.control && binding_.control->cancelled) {
            fail_transfer(Errc::cancelled, "cancelled on the control plane after " +
                                               bytes_of(body_done_, request_.length), true);
            return -1;
        }
        // More later, after the other connections; but bytes already
        // decrypted would not make the socket readable again: take them.
        const std::uint64_t allowance = budget > 0 ? budget : io_->pending();
        if (allowance == 0) return 0;
        std::error_code ec;
        const std::uint64_t want = std::min<std::uint64_t>({kChunk, request_.length - body_done_, allowance});
        const Reservation::Window w = reservation_->window(static_cast<std::size_t>(want), ec);
        if (ec || w.size == 0) {
            fail_transfer(ec ? store_errc(ec) : Errc::transfer_failed,
                          "the store cannot take byte " + std::to_string(body_done_) + ": " +
                              (ec ? store_error_text(*reservation_, ec) : std::string("no room left in the reservation")),
                          true);
            return -1;
        }
        const long n = io_->read(w.data, w.size);
        if (n > 0) {
            if (auto adv = reservation_->advance(static_cast<std::size_t>(n))) {
                // The store writes the bytes out here on some file systems: a
                // full disk is out_of_space (and the reservation is aborted).
                fail_transfer(store_errc(adv), store_error_text(*reservation_, adv), true);
                return -1;
            }
            body_done_ += static_cast<std::uint64_t>(n);
            budget -= std::min<std::uint64_t>(budget, static_cast<std::uint64_t>(n));
            progress();
            continue;
        }
        if (n == 0) {
            fail_transfer(Errc::transfer_failed,
                          "the peer closed the connection after " + bytes_of(body_done_, request_.length), false);
            return -1;
        }
        if (errno == EINTR) continue;
        if (would_block(errno)) {
            // Everything received so far is consumed: acknowledge it now. A
            // sender with a send buffer smaller than the MSS (64 KiB on
            // loopback) otherwise waits for the delayed ACK, ~40 ms per
            // buffer (a 16 KiB SO_SNDBUF push ran at 1.6 MB/s).
            const int one = 1;
            ::setsockopt(get_handle(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
            return 0;
        }
        fail_transfer(Errc::transfer_failed, "receive failed after " + bytes_of(body_done_, request_.length) +
                                                 ": " + io_->error_text(errno), false);
        return -1;
    }
    phase_ = Phase::push_trailer;
    trailer_got_ = 0;
    return read_trailer();
}

int ServerConnection::read_trailer()
{
    while (trailer_got_ < protocol::kTrailerSize) {
        const long n = io_->read(trailer_buf_ + trailer_got_, protocol::kTrailerSize - trailer_got_);
        if (n > 0) {
            trailer_got_ += static_cast<std::size_t>(n);
            progress();
            continue;
        }
        if (n == 0) {
            fail_transfer(Errc::transfer_failed,
                          "the peer closed the connection after all " + std::to_string(request_.length) +
                              " bytes but before the SHA-256 trailer",
                          false);
            return -1;
        }
        if (errno == EINTR) continue;
        if (would_block(errno)) return 0;
        fail_transfer(Errc::transfer_failed, "receive of the SHA-256 trailer failed: " + io_->error_text(errno),
                      false);
        return -1;
    }
    return finish_push();
}

int ServerConnection::finish_push()
{
    Digest expected{};
    std::memcpy(expected.data(), trailer_buf_, expected.size());
    protocol::Response response;
    response.length = request_.length;
    try {
        const BlobInfo info = reservation_->commit(&expected);
        response.blob_size = info.size;
        response.digest = info.digest;
    } catch (const Error& e) {
        reservation_->abort();
        reservation_.reset();
        server_->reservations.release(binding_.reservation);
        spdlog::warn("data connection {}: push {} failed: {}", peer_, quote_name(binding_.blob), e.what());
        end_transfer(false, e.what());
        response.status = e.code();
        response.message = e.what();
        return start_sending(protocol::encode(response), false);
    }
    reservation_.reset();
    server_->reservations.release(binding_.reservation);
    const Throughput t = record_throughput(request_.length);
    spdlog::info("push {} {} bytes in {:.3f} s ({:.2f} MB/s) from {}", quote_name(binding_.blob),
                 request_.length, t.seconds, t.mbps, peer_);
    end_transfer(true, "");
    return start_sending(protocol::encode(response), false);
}

int ServerConnection::drain_input()
{
    thread_local std::uint8_t sink[65536];
    for (;;) {
        const long n = io_->read(sink, sizeof sink);
        if (n > 0) {
            drained_ += static_cast<std::uint64_t>(n);
            progress();
            if (drained_ > kMaxDrain) return -1;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && would_block(errno)) return 0;
        return -1;  // EOF or error: the refusal is delivered, close
    }
}

// ---- output -----------------------------------------------------------------

int ServerConnection::refuse(Errc status, const std::string& reason)
{
    protocol::Response response;
    response.status = status;
    response.message = reason;
    return start_sending(protocol::encode(response), true);
}

int ServerConnection::start_sending(std::string header, bool close_after)
{
    out_ = std::move(header);
    out_done_ = 0;
    close_after_send_ = close_after;
    phase_ = Phase::sending;
    switch (pump_send()) {
    case Pump::failed: return -1;
    case Pump::again: return set_mask(ACE_Event_Handler::WRITE_MASK) ? 0 : -1;
    case Pump::done: break;
    }
    return after_send();
}

ServerConnection::Pump ServerConnection::pump_send()
{
    while (out_done_ < out_.size()) {
        const long n = io_->write(out_.data() + out_done_, out_.size() - out_done_);
        if (n > 0) {
            out_done_ += static_cast<std::size_t>(n);
            progress();
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && would_block(errno)) return Pump::again;
        const std::string why = "cannot send the Response: " + (n < 0 ? io_->error_text(errno) : std::string());
        if (in_transfer_)
            fail_transfer(Errc::transfer_failed, why, false);
        else
            spdlog::warn("data connection {}: {}", peer_, why);
        return Pump::failed;
    }
    if (!send_body_) return Pump::done;
    std::uint64_t budget = kDispatchBudget;
    const std::uint64_t total = range_.size();
    while (body_done_ < total) {
        if (binding_.control && binding_.control->cancelled) {
            fail_transfer(Errc::cancelled, "cancelled on the control plane after " + bytes_of(body_done_, total),
                          false);
            return Pump::failed;
        }
        if (budget == 0) return Pump::again;
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>({kChunk, total - body_done_, budget}));
        long n;
        if (range_.fd() >= 0 && !io_->tls()) {
            auto off = static_cast<off_t>(range_.file_offset() + body_done_);
            n = ::sendfile(get_handle(), range_.fd(), &off, want);
        } else {  // memory, or TLS (sendfile cannot encrypt): from the mapping
            n = io_->write(range_.data() + body_done_, want);
        }
        if (n > 0) {
            body_done_ += static_cast<std::uint64_t>(n);
            budget -= std::min<std::uint64_t>(budget, static_cast<std::uint64_t>(n));
            progress();
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && would_block(errno)) return Pump::again;
        fail_transfer(Errc::transfer_failed,
                      "send failed after " + bytes_of(body_done_, total) + ": " +
                          (n < 0 ? io_->error_text(errno) : std::string("the Blob's file ended early")),
                      false);
        return Pump::failed;
    }
    return Pump::done;
}

ServerConnection::Throughput ServerConnection::record_throughput(std::uint64_t bytes) noexcept
{
    const double seconds =
        std::max(1e-6, std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
    const double mbps = static_cast<double>(bytes) / 1e6 / seconds;
    server_->last_mbps = mbps;
    return {seconds, mbps};
}

int ServerConnection::after_send()
{
    out_.clear();
    out_done_ = 0;
    if (send_body_) {
        send_body_ = false;
        const Throughput t = record_throughput(body_done_);
        spdlog::info("pull {} {} bytes in {:.3f} s ({:.2f} MB/s) to {}", quote_name(binding_.blob), body_done_,
                     t.seconds, t.mbps, peer_);
        end_transfer(true, "");
        range_ = BlobRange{};
    }
    if (close_after_send_) {
        // Shut our side and read to EOF: closing with unread bytes (the body
        // of a refused push) would reset the connection and could destroy
        // the Response before the peer reads it. TLS: close_notify first.
        io_->close_notify();
        peer().close_writer();
        phase_ = Phase::draining;
        drained_ = 0;
        progress();
        arm_timer();
        return set_mask(ACE_Event_Handler::READ_MASK) ? 0 : -1;
    }
    phase_ = Phase::request;
    request_got_ = 0;
    arm_timer();  // now for the idle timeout
    if (!set_mask(ACE_Event_Handler::READ_MASK)) return -1;
    return io_->pending() > 0 ? handle_input(get_handle()) : 0;
}

int ServerConnection::handle_output(ACE_HANDLE)
{
    if (closed_) return -1;
    if (phase_ == Phase::handshake) return continue_handshake();
    if (phase_ != Phase::sending) return set_mask(ACE_Event_Handler::READ_MASK) ? 0 : -1;
    switch (pump_send()) {
    case Pump::failed: return -1;
    case Pump::again: return 0;
    case Pump::done: break;
    }
    return after_send();
}

bool ServerConnection::set_mask(ACE_Reactor_Mask mask)
{
    if (mask == mask_) return true;
    if (reactor()->mask_ops(this, mask, ACE_Reactor::SET_MASK) == -1) {
        spdlog::warn("data connection {}: cannot change the reactor mask: {}", peer_, std::strerror(errno));
        return false;
    }
    mask_ = mask;
    return true;
}

// ---- transfers, timers, close ------------------------------------------------

void ServerConnection::end_transfer(bool succeeded, const std::string& reason)
{
    if (!in_transfer_) return;
    in_transfer_ = false;
    --server_->active;
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

void ServerConnection::fail_transfer(Errc status, const std::string& reason, bool tell_peer)
{
    const bool push = request_.type == protocol::FrameType::push;
    spdlog::warn("{} {} {} {}: abandoned: {}", push ? "push" : "pull", quote_name(binding_.blob),
                 push ? "from" : "to", peer_, reason);
    if (reservation_) {
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
    range_ = BlobRange{};
    send_body_ = false;
    end_transfer(false, reason);
    if (tell_peer && push) {
        // Best effort, never blocking: the peer may be stuck sending.
        protocol::Response response;
        response.status = status;
        response.length = body_done_;
        response.message = reason;
        const std::string frame = protocol::encode(response);
        [[maybe_unused]] const long n = io_->write(frame.data(), frame.size());
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
    if (phase_ == Phase::request && request_got_ == 0)
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

void ServerConnection::authenticate() noexcept
{
    if (authenticated_) return;
    authenticated_ = true;
    server_->limits.authenticated(this);
}

int ServerConnection::handle_timeout(const ACE_Time_Value&, const void*)
{
    timer_id_ = -1;
    if (closed_) return 0;
    if (in_transfer_ && binding_.control && binding_.control->cancelled) {
        fail_transfer(Errc::cancelled, "cancelled on the control plane after " + std::to_string(body_done_) +
                                           " bytes", true);
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
    const std::string why = fmt::format("no progress for {:.1f} s (inactivity timeout {:.1f} s)", seconds_of(idle),
                                        seconds_of(timeout()));
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
                         : request_got_ > 0 ? fmt::format("{} of {} bytes of a Request received", request_got_,
                                                          protocol::kRequestSize)
                                            : std::string("nothing received"));
        break;
    case Deadline::Kind::idle:
        // The reactor runs expired timers before ready sockets: a Request
        // that arrived with the deadline is served, not cut off.
        if (io_ && io_->probe() > 0) {
            progress();
            arm_timer();
            return handle_input(get_handle());
        }
        spdlog::info("data connection {}: closed after {:.1f} s idle between transfers (idle timeout {:.1f} s)",
                     peer_, seconds_of(idle), seconds_of(server_->config.idle_timeout));
        break;
    case Deadline::Kind::inactivity:
        if (phase_ != Phase::draining) spdlog::warn("data connection {}: closed: {} within a Request", peer_, why);
        break;
    }
    return -1;
}

void ServerConnection::shutdown_now() noexcept
{
    if (closed_) return;
    if (in_transfer_) fail_transfer(Errc::cancelled, "the store is shutting down", true);
    handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);
}

void ServerConnection::evict(const std::string& newcomer) noexcept
{
    if (closed_) return;
    if (server_->refused_log.allow())
        spdlog::warn("data connection {}: closed after {:.1f} s without a valid Request: its slot goes to a new "
                     "connection from {} ({} connections without a valid ticket, the cap)",
                     peer_, std::chrono::duration<double>(std::chrono::steady_clock::now() - accepted_).count(),
                     newcomer, server_->limits.unauthenticated());
    handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);
}

int ServerConnection::handle_close(ACE_HANDLE handle, ACE_Reactor_Mask mask)
{
    if (closed_) return 0;
    closed_ = true;
    if (in_transfer_) fail_transfer(Errc::transfer_failed, "the connection was closed", false);
    disarm_timer();
    if (io_ && phase_ != Phase::draining) io_->close_notify();
    io_.reset();
    server_->connections.erase(this);
    server_->limits.remove(this);
    spdlog::debug("data connection {}: closed", peer_);
    return Base::handle_close(handle, mask);  // deletes this
}

}  // namespace blobstreaming::server
