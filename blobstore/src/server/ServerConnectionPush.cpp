/// ServerConnection's push receive path: the body straight into the
/// reservation's window, the checksum trailer, the commit and its Response.
#include "ServerConnection.h"

#include "CommitPool.h"
#include "DataPath.h"
#include "ReservationTable.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <ace/Reactor.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace blobstreaming::server {

using data_path::bytes_of;
using data_path::kChunk;
using data_path::kDispatchBudget;

namespace {

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

int ServerConnection::start_push()
{
    if (binding_.part) return start_part();
    try {
        reservation_ = server_->reservations.claim(binding_.reservation);
    } catch (const Error& e) {
        spdlog::warn("data connection {}: refused: {}", peer_, e.what());
        end_transfer(false, e.what());
        return refuse(Errc::refused, e.what());
    }
    if (reservation_->written() != request_.offset) {
        // Another connection resumed this reservation since the ticket was issued.
        const std::string moved = "push " + quote_name(binding_.blob) + " at byte " + std::to_string(request_.offset) +
                                  ": the reservation now holds " + std::to_string(reservation_->written()) + " bytes";
        spdlog::warn("data connection {}: refused: {}", peer_, moved);
        server_->reservations.park(binding_.reservation, std::move(reservation_));
        end_transfer(false, moved);
        return refuse(Errc::refused, moved);
    }
    spdlog::debug("data connection {}: push {} of {} bytes (ticket {}) started", peer_, quote_name(binding_.blob),
                  request_.length, protocol::ticket_tag(request_.ticket));
    phase_ = Phase::push_body;
    return read_push_body();
}

int ServerConnection::read_push_body()
{
    std::uint64_t budget = kDispatchBudget;
    while (body_done_ < request_.length) {
        if (binding_.control && binding_.control->cancelled) {
            fail_transfer(Errc::cancelled,
                          "cancelled on the control plane after " + bytes_of(body_done_, request_.length), true);
            return -1;
        }
        // More later, after the other connections; but bytes already
        // decrypted would not make the socket readable again: take them.
        const std::uint64_t allowance = budget > 0 ? budget : io_->pending();
        if (allowance == 0) return 0;
        std::error_code ec;
        const std::uint64_t want = std::min<std::uint64_t>({kChunk, request_.length - body_done_, allowance});
        Reservation& into = part_ ? *part_ : *reservation_;
        if (!part_ && server_->commits && into.window_waits() && wait_store_away()) return 0;
        const Reservation::Window w =
            part_ ? into.window_at(request_.offset + body_done_, static_cast<std::size_t>(want), ec)
                  : into.window(static_cast<std::size_t>(want), ec);
        if (ec || w.size == 0) {
            fail_transfer(ec ? store_errc(ec) : Errc::transfer_failed,
                          "the store cannot take byte " + std::to_string(request_.offset + body_done_) + ": " +
                              (ec ? store_error_text(into, ec) : std::string("no room left in the reservation")),
                          true);
            return -1;
        }
        const IoResult r = read_some(*io_, w.data, w.size);
        if (r.done()) {
            if (auto adv = part_ ? into.advance_at(r.bytes()) : into.advance(r.bytes())) {
                // The store writes the bytes out here on some file systems: a
                // full disk is out_of_space (and the reservation is aborted).
                fail_transfer(store_errc(adv), store_error_text(into, adv), true);
                return -1;
            }
            if (part_) part_crc_ = crc32c(w.data, r.bytes(), part_crc_);
            body_done_ += r.bytes();
            budget -= std::min<std::uint64_t>(budget, r.bytes());
            progress();
            continue;
        }
        if (r.blocked()) {
            // Everything received so far is consumed: acknowledge it now. A
            // sender with a send buffer smaller than the MSS (64 KiB on
            // loopback) otherwise waits for the delayed ACK, ~40 ms per
            // buffer (a 16 KiB SO_SNDBUF push ran at 1.6 MB/s).
            const int one = 1;
            ::setsockopt(get_handle(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
            return 0;
        }
        fail_transfer(Errc::transfer_failed,
                      r.eof() ? "the peer closed the connection after " + bytes_of(body_done_, request_.length)
                              : "receive failed after " + bytes_of(body_done_, request_.length) + ": " + r.text(),
                      false);
        return -1;
    }
    phase_ = Phase::push_trailer;
    frame_.expect(protocol::kTrailerSize);
    return read_trailer();
}

int ServerConnection::read_trailer()
{
    const IoResult r = frame_.fill(*io_);
    if (r.bytes() > 0) progress();
    if (r.done()) return part_ ? finish_part() : finish_push();
    if (r.blocked()) return 0;
    fail_transfer(Errc::transfer_failed,
                  r.eof() ? "the peer closed the connection after all " + std::to_string(request_.length) +
                                " bytes but before the checksum trailer"
                          : "receive of the checksum trailer failed: " + r.text(),
                  false);
    return -1;
}

int ServerConnection::finish_push()
{
    protocol::Trailer trailer;
    std::string why;
    if (protocol::decode(frame_.first<protocol::kTrailerSize>(), trailer, why)) {
        reservation_->abort();
        reservation_.reset();
        CommitOutcome refused;
        refused.code = Errc::protocol_error;
        refused.message = "push " + quote_name(binding_.blob) + ": " + why + "; nothing was stored";
        return send_response(protocol::encode(record_push(refused)), Then::next_request);
    }
    if (server_->commits && reservation_->commit_waits()) return start_commit(trailer.checksum);
    const CommitOutcome outcome = commit_reservation(*reservation_, trailer.checksum);
    reservation_.reset();
    return send_response(protocol::encode(record_push(outcome)), Then::next_request);
}

int ServerConnection::start_part()
{
    try {
        part_ =
            server_->reservations.begin_part(binding_.reservation, request_.offset, request_.length, binding_.control);
    } catch (const Error& e) {
        spdlog::warn("data connection {}: refused: {}", peer_, e.what());
        end_transfer(false, e.what());
        return refuse(e.code(), e.what());  // invalid_range: the client asks for the part again
    }
    part_crc_ = 0;
    spdlog::debug("data connection {}: push {} part [{}, +{}) (ticket {}) started", peer_, quote_name(binding_.blob),
                  request_.offset, request_.length, protocol::ticket_tag(request_.ticket));
    phase_ = Phase::push_body;
    return read_push_body();
}

void ServerConnection::end_part(bool keep) noexcept
{
    if (!part_) return;
    part_.reset();  // before the ledger may abort it: the last user lets go
    server_->reservations.end_part(binding_.reservation, request_.offset, body_done_, part_crc_, keep);
}

int ServerConnection::finish_part()
{
    protocol::Trailer trailer;
    std::string why;
    protocol::Response response;
    response.length = request_.length;
    const Checksum received = Checksum::crc32c(part_crc_);
    const std::string part = "push " + quote_name(binding_.blob) + " part [" + std::to_string(request_.offset) + ", " +
                             std::to_string(request_.offset + request_.length) + ")";
    if (protocol::decode(frame_.first<protocol::kTrailerSize>(), trailer, why)) {
        response.status = Errc::protocol_error;
        response.message = part + ": " + why + "; the part was not kept";
    } else if (trailer.checksum != received) {
        response.status = Errc::digest_mismatch;
        response.message = part + ": the received bytes have checksum " + received.text() + ", the sender announced " +
                           trailer.checksum.text() + "; the part was not kept";
    }
    if (response.status != Errc::ok) {
        body_done_ = 0;  // nothing of it counts: sent again, it is received again
        end_part(true);
        end_transfer(false, response.message);
        return send_response(protocol::encode(response), Then::next_request);
    }
    end_part(true);
    response.checksum = received;
    record_throughput(request_.length);
    end_transfer(true, "");
    return send_response(protocol::encode(response), Then::next_request);
}

ServerConnection::CommitOutcome ServerConnection::commit_reservation(Reservation& r, const Checksum& expected) noexcept
{
    CommitOutcome outcome;
    try {
        outcome.info = r.commit(&expected);
        outcome.ok = true;
    } catch (const Error& e) {
        outcome.code = e.code();
        outcome.message = e.what();
    } catch (const std::exception& e) {
        outcome.code = Errc::io_error;
        outcome.message = "commit " + quote_name(r.name()) + ": " + e.what();
    }
    if (!outcome.ok) r.abort();
    return outcome;
}

int ServerConnection::start_commit(const Checksum& expected)
{
    // Off the reactor while the store works: no input is due before the
    // Response (a peer's close is seen once the connection is back), and the
    // inactivity timeout measures the client, not the disk. Removed, not
    // masked: an epoll registration without events still reports a reset,
    // and ACE re-arms a handler after its upcall unless it is gone.
    if (reactor()->remove_handler(this, ACE_Event_Handler::ALL_EVENTS_MASK | ACE_Event_Handler::DONT_CALL) == -1) {
        spdlog::warn("data connection {}: cannot leave the reactor for the commit ({}): committing here", peer_,
                     std::strerror(errno));
        const CommitOutcome outcome = commit_reservation(*reservation_, expected);
        reservation_.reset();
        return send_response(protocol::encode(record_push(outcome)), Then::next_request);
    }
    mask_ = ACE_Event_Handler::NULL_MASK;
    disarm_timer();
    phase_ = Phase::committing;
    away_ = true;
    struct Job {
        std::unique_ptr<Reservation> reservation;
        Checksum expected;
        CommitOutcome outcome;
    };
    auto job = std::make_shared<Job>(Job{std::move(reservation_), expected, {}});
    server_->commits->submit(
        [job] {
            job->outcome = commit_reservation(*job->reservation, job->expected);
            job->reservation.reset();  // a FileStore's descriptor and buffer go here, not on the reactor
        },
        [this, job] { on_committed(job->outcome); });
    return 0;
}

bool ServerConnection::wait_store_away()
{
    if (reactor()->remove_handler(this, ACE_Event_Handler::ALL_EVENTS_MASK | ACE_Event_Handler::DONT_CALL) == -1) {
        spdlog::warn("data connection {}: cannot leave the reactor while the store writes {} ({}): waiting here", peer_,
                     quote_name(binding_.blob), std::strerror(errno));
        return false;
    }
    mask_ = ACE_Event_Handler::NULL_MASK;
    disarm_timer();  // the store is slow, not the client
    phase_ = Phase::storing;
    away_ = true;
    // Nothing else touches reservation_ meanwhile: the connection has no
    // events and no timer, and a close leaves it to on_store_ready().
    server_->commits->submit([r = reservation_.get()] { r->wait_window(); }, [this] { on_store_ready(); });
    return true;
}

void ServerConnection::on_store_ready() noexcept
{
    phase_ = Phase::push_body;
    // Closed meanwhile: the reservation is kept for a resume, as after any break.
    if (!come_back("the store's writes of")) return;  // closed and deleted
    int rc = -1;
    try {
        rc = read_push_body();
    } catch (const std::exception& e) {
        spdlog::warn("data connection {}: cannot go on receiving {}: {}", peer_, quote_name(binding_.blob), e.what());
    }
    if (rc == -1) handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);  // deletes this
}

bool ServerConnection::come_back(const char* after) noexcept
{
    away_ = false;
    if (closed_) {
        // handle_close() kept the object and left the transfer to end here.
        if (in_transfer_) fail_transfer(Errc::transfer_failed, "the connection was closed", false);
        Base::handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);  // deletes this
        return false;
    }
    if (!rejoin_reactor(after)) return false;  // closed and deleted
    arm_timer();
    return true;
}

bool ServerConnection::rejoin_reactor(const char* after) noexcept
{
    progress();
    if (reactor()->register_handler(this, ACE_Event_Handler::READ_MASK) == -1) {
        spdlog::warn("data connection {}: cannot return to the reactor after {} {} ({}): closed", peer_, after,
                     quote_name(binding_.blob), std::strerror(errno));
        handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);  // deletes this
        return false;
    }
    mask_ = ACE_Event_Handler::READ_MASK;
    return true;
}

void ServerConnection::on_committed(const CommitOutcome& outcome) noexcept
{
    away_ = false;
    protocol::Response response;
    try {
        response = record_push(outcome);
    } catch (const std::exception& e) {  // logging, or the notice's allocation
        spdlog::error("data connection {}: recording the commit of {} failed: {}", peer_, quote_name(binding_.blob),
                      e.what());
        response.status = Errc::transfer_failed;
        response.message = e.what();
    }
    if (closed_) {
        // Closed while the store committed (handle_close() kept the object):
        // the outcome stands, nobody is left to tell.
        Base::handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);  // deletes this
        return;
    }
    if (!rejoin_reactor("the commit of")) return;  // closed and deleted
    int rc = -1;
    try {
        rc = send_response(protocol::encode(response), Then::next_request);
    } catch (const std::exception& e) {
        spdlog::warn("data connection {}: cannot answer the push of {}: {}", peer_, quote_name(binding_.blob),
                     e.what());
    }
    if (rc == -1) handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);  // deletes this
}

protocol::Response ServerConnection::record_push(const CommitOutcome& outcome)
{
    server_->reservations.release(binding_.reservation);
    protocol::Response response;
    response.length = request_.length;
    if (!outcome.ok) {
        end_transfer(false, outcome.message);
        response.status = outcome.code;
        response.message = outcome.message;
        return response;
    }
    response.blob_size = outcome.info.size;
    response.checksum = outcome.info.checksum;
    record_throughput(request_.length);
    end_transfer(true, "");
    return response;
}

}  // namespace blobstreaming::server
