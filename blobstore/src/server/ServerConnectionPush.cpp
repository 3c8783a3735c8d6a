/// ServerConnection's push receive path: the body straight into the
/// reservation's window, the checksum trailer, the commit and its Response.
#include "ServerConnection.h"

#include "DataPath.h"
#include "ReservationTable.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

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
        const Reservation::Window w = reservation_->window(static_cast<std::size_t>(want), ec);
        if (ec || w.size == 0) {
            fail_transfer(
                ec ? store_errc(ec) : Errc::transfer_failed,
                "the store cannot take byte " + std::to_string(body_done_) + ": " +
                    (ec ? store_error_text(*reservation_, ec) : std::string("no room left in the reservation")),
                true);
            return -1;
        }
        const IoResult r = read_some(*io_, w.data, w.size);
        if (r.done()) {
            if (auto adv = reservation_->advance(r.bytes())) {
                // The store writes the bytes out here on some file systems: a
                // full disk is out_of_space (and the reservation is aborted).
                fail_transfer(store_errc(adv), store_error_text(*reservation_, adv), true);
                return -1;
            }
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
    if (r.done()) return finish_push();
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
    protocol::Response response;
    response.length = request_.length;
    try {
        protocol::Trailer trailer;
        std::string why;
        if (protocol::decode(frame_.first<protocol::kTrailerSize>(), trailer, why))
            throw Error(Errc::protocol_error,
                        "push " + quote_name(binding_.blob) + ": " + why + "; nothing was stored");
        const BlobInfo info = reservation_->commit(&trailer.checksum);
        response.blob_size = info.size;
        response.checksum = info.checksum;
    } catch (const Error& e) {
        reservation_->abort();
        reservation_.reset();
        server_->reservations.release(binding_.reservation);
        spdlog::warn("data connection {}: push {} failed: {}", peer_, quote_name(binding_.blob), e.what());
        end_transfer(false, e.what());
        response.status = e.code();
        response.message = e.what();
        return send_response(protocol::encode(response), Then::next_request);
    }
    reservation_.reset();
    server_->reservations.release(binding_.reservation);
    const Throughput t = record_throughput(request_.length);
    spdlog::info("push {} {} bytes in {:.3f} s ({:.2f} MB/s) from {}", quote_name(binding_.blob), request_.length,
                 t.seconds, t.mbps, peer_);
    end_transfer(true, "");
    return send_response(protocol::encode(response), Then::next_request);
}

}  // namespace blobstreaming::server
