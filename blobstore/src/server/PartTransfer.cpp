/// A part of a reservation filled in parts: received at its offsets,
/// checked against its trailer, handed to the ledger.
#include "PartTransfer.h"

#include "ReservationTable.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Checksum.h>

#include <spdlog/spdlog.h>

namespace blobstreaming::server {

Step PartTransfer::start()
{
    if (auto refused = refuse_compressed()) return *refused;
    try {
        part_ = server_.reservations.begin_part(binding_.reservation, request_.offset, request_.length,
                                                binding_.control);
    } catch (const Error& e) {
        spdlog::warn("data connection {}: refused: {}", link_.peer_name(), e.what());
        end(false, e.what());
        return link_.refuse(e.code(), e.what());  // invalid_range: the client asks for the part again
    }
    crc_ = 0;
    spdlog::debug("data connection {}: push {} part [{}, +{}) (ticket {}) started", link_.peer_name(),
                  quote_name(binding_.blob), request_.offset, request_.length, protocol::ticket_tag(request_.ticket));
    return on_readable();
}

Reservation::Window PartTransfer::window(std::size_t want, std::error_code& ec)
{
    return part_->window_at(request_.offset + body_done_, want, ec);
}

std::error_code PartTransfer::advance(const std::uint8_t* data, std::size_t n)
{
    if (auto ec = part_->advance_at(n)) return ec;
    crc_ = crc32c(data, n, crc_);
    return {};
}

void PartTransfer::end_part(bool keep) noexcept
{
    if (!part_) return;
    part_.reset();  // before the ledger may abort it: the last user lets go
    server_.reservations.end_part(binding_.reservation, request_.offset, body_done_, crc_, keep);
}

void PartTransfer::abandon(Errc status)
{
    // What landed stays for the part to continue, unless the store failed
    // (then the whole reservation goes).
    end_part(status == Errc::transfer_failed || status == Errc::timeout || status == Errc::cancelled);
}

Step PartTransfer::finish()
{
    protocol::Trailer trailer;
    std::string why;
    protocol::Response response;
    response.length = request_.length;
    const Checksum received = Checksum::crc32c(crc_);
    const std::string part = "push " + quote_name(binding_.blob) + " part [" + std::to_string(request_.offset) + ", " +
                             std::to_string(request_.offset + request_.length) + ")";
    if (protocol::decode(this->trailer().first<protocol::kTrailerSize>(), trailer, why)) {
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
        end(false, response.message);
        return link_.respond(protocol::encode(response), AfterResponse::next_request);
    }
    end_part(true);
    response.checksum = received;
    record_throughput(request_.length);
    end(true, "");
    return link_.respond(protocol::encode(response), AfterResponse::next_request);
}

}  // namespace blobstreaming::server
