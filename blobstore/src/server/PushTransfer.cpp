/// A whole push: claim, receive (ReceiveTransfer), commit and answer; how a
/// broken push parks its reservation.
#include "PushTransfer.h"

#include "CommitPool.h"
#include "ReservationTable.h"

#include <blobstreaming/common/BlobName.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace blobstreaming::server {

Step PushTransfer::start()
{
    if (auto refused = refuse_compressed()) return *refused;
    try {
        reservation_ = server_.reservations.claim(binding_.reservation);
    } catch (const Error& e) {
        spdlog::warn("data connection {}: refused: {}", link_.peer_name(), e.what());
        end(false, e.what());
        return link_.refuse(Errc::refused, e.what());
    }
    if (reservation_->written() != request_.offset) {
        // Another connection resumed this reservation since the ticket was issued.
        const std::string moved = "push " + quote_name(binding_.blob) + " at byte " + std::to_string(request_.offset) +
                                  ": the reservation now holds " + std::to_string(reservation_->written()) + " bytes";
        spdlog::warn("data connection {}: refused: {}", link_.peer_name(), moved);
        server_.reservations.park(binding_.reservation, std::move(reservation_));
        end(false, moved);
        return link_.refuse(Errc::refused, moved);
    }
    spdlog::debug("data connection {}: push {} of {} bytes (ticket {}) started", link_.peer_name(),
                  quote_name(binding_.blob), request_.length, protocol::ticket_tag(request_.ticket));
    return on_readable();
}

Reservation::Window PushTransfer::window(std::size_t want, std::error_code& ec)
{
    return reservation_->window(want, ec);
}

std::error_code PushTransfer::advance(const std::uint8_t*, std::size_t n) { return reservation_->advance(n); }

std::error_code PushTransfer::end_of_body() { return reservation_->end_stream(); }

bool PushTransfer::wait_for_store()
{
    if (!server_.commits || !reservation_->window_waits()) return false;
    // Nothing else touches reservation_ meanwhile: the connection has no
    // events and no timer, and a close leaves it to the continuation.
    const bool away = link_.run_off_reactor(
        {"the store's writes of", "go on receiving"}, [r = reservation_.get()] { r->wait_window(); },
        // Closed meanwhile: the reservation is kept for a resume, as after any break.
        [this](bool connected) { return connected ? on_readable() : Step::close; });
    if (!away)
        spdlog::warn("data connection {}: cannot leave the reactor while the store writes {} ({}): waiting here",
                     link_.peer_name(), quote_name(binding_.blob), std::strerror(errno));
    return away;
}

Step PushTransfer::finish()
{
    protocol::Trailer trailer;
    std::string why;
    if (protocol::decode(this->trailer().first<protocol::kTrailerSize>(), trailer, why)) {
        reservation_->abort();
        reservation_.reset();
        CommitOutcome refused;
        refused.code = Errc::protocol_error;
        refused.message = "push " + quote_name(binding_.blob) + ": " + why + "; nothing was stored";
        return link_.respond(protocol::encode(record(refused)), AfterResponse::next_request);
    }
    if (server_.commits && reservation_->commit_waits()) return commit_away(trailer.checksum);
    const CommitOutcome outcome = commit_reservation(*reservation_, trailer.checksum);
    reservation_.reset();
    return link_.respond(protocol::encode(record(outcome)), AfterResponse::next_request);
}

PushTransfer::CommitOutcome PushTransfer::commit_reservation(Reservation& r, const Checksum& expected) noexcept
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

Step PushTransfer::commit_away(const Checksum& expected)
{
    // Off the reactor while the store works: no input is due before the
    // Response (a peer's close is seen once the connection is back), and the
    // inactivity timeout measures the client, not the disk.
    struct Job {
        std::unique_ptr<Reservation> reservation;
        Checksum expected;
        CommitOutcome outcome;
    };
    auto job = std::make_shared<Job>(Job{std::move(reservation_), expected, {}});
    const bool away = link_.run_off_reactor(
        {"the commit of", "answer the push of"},
        [job] {
            job->outcome = commit_reservation(*job->reservation, job->expected);
            job->reservation.reset();  // a FileStore's descriptor and buffer go here, not on the reactor
        },
        [this, job](bool connected) {
            // Closed while the store committed: the outcome stands, nobody
            // is left to tell.
            protocol::Response response;
            try {
                response = record(job->outcome);
            } catch (const std::exception& e) {  // logging, or the notice's allocation
                spdlog::error("data connection {}: recording the commit of {} failed: {}", link_.peer_name(),
                              quote_name(binding_.blob), e.what());
                response.status = Errc::transfer_failed;
                response.message = e.what();
            }
            if (!connected) return Step::close;
            return link_.respond(protocol::encode(response), AfterResponse::next_request);
        });
    if (!away) {
        spdlog::warn("data connection {}: cannot leave the reactor for the commit ({}): committing here",
                     link_.peer_name(), std::strerror(errno));
        const CommitOutcome outcome = commit_reservation(*job->reservation, expected);
        job->reservation.reset();
        return link_.respond(protocol::encode(record(outcome)), AfterResponse::next_request);
    }
    return Step::away;
}

protocol::Response PushTransfer::record(const CommitOutcome& outcome)
{
    server_.reservations.release(binding_.reservation);
    protocol::Response response;
    response.length = body_done_;
    if (!outcome.ok) {
        end(false, outcome.message);
        response.status = outcome.code;
        response.message = outcome.message;
        return response;
    }
    response.blob_size = outcome.info.size;
    response.checksum = outcome.info.checksum;
    record_throughput(body_done_);
    end(true, "");
    return response;
}

void PushTransfer::abandon(Errc status)
{
    if (!reservation_) return;
    // The connection broke or stalled: keep what arrived for the grace
    // period, so that the client can resume the push.
    const bool keep =
        (status == Errc::transfer_failed || status == Errc::timeout) && !request_.streamed && !binding_.named;
    if (server_.commits && reservation_->ending_waits()) {
        end_reservation_away(keep);
    } else if (keep) {
        spdlog::info("push {}: reservation kept with {} of {} bytes for resuming", quote_name(binding_.blob),
                     reservation_->written(), reservation_->size());
        server_.reservations.park(binding_.reservation, std::move(reservation_));
    } else {
        reservation_->abort();
        reservation_.reset();
        server_.reservations.release(binding_.reservation);
    }
}

void PushTransfer::end_reservation_away(bool keep)
{
    // The job owns the reservation (std::function wants a copyable
    // callable); it refers to the table, not to this transfer, which may be
    // gone before it runs.
    auto held = std::make_shared<std::unique_ptr<Reservation>>(std::move(reservation_));
    ReservationTable* table = &server_.reservations;
    const std::uint64_t id = binding_.reservation;
    const std::string blob = binding_.blob;
    server_.commits->submit(
        [held, table, id, blob, keep] {
            Reservation& r = **held;
            if (keep) {
                // As in abandon(): kept for the grace period, for the client to resume.
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

}  // namespace blobstreaming::server
