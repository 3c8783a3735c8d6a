#pragma once
/// One part of a reservation filled in parts (TicketBinding::part,
/// docs/CLIENT_API.md "Parallel streams"): its range is received, its
/// CRC32C trailer checked and acknowledged; the control plane commits.

#include "ReceiveTransfer.h"

#include <cstdint>
#include <memory>

namespace blobstreaming::server {

/// Shares the reservation with the other parts' connections
/// (ReservationTable::begin_part()), writes at the part's offsets and keeps
/// the CRC32C of what it received. However it ends, its landed bytes go to
/// the table's ledger with their CRC (nothing of a part whose trailer does
/// not match), unless the store failed: then the whole reservation is
/// aborted.
class PartTransfer final : public ReceiveTransfer {
public:
    using ReceiveTransfer::ReceiveTransfer;

    Step start() override;

private:
    Reservation& into() noexcept override { return *part_; }
    Reservation::Window window(std::size_t want, std::error_code& ec) override;
    std::error_code advance(const std::uint8_t* data, std::size_t n) override;
    Step finish() override;
    void abandon(Errc status) override;
    /// The part ends: its bytes go to the ledger (`keep`), or the whole
    /// reservation is aborted.
    void end_part(bool keep) noexcept;

    std::shared_ptr<Reservation> part_;  ///< shared with the other parts' connections
    std::uint32_t crc_ = 0;              ///< CRC32C of the part's bytes received so far
};

}  // namespace blobstreaming::server
