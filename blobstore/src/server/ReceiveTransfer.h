#pragma once
/// What a push and a part have in common: the body received straight into a
/// reservation's window, then the checksum trailer (docs/PROTOCOL.md).

#include "Transfer.h"

#include <blobstreaming/blobstore/Reservation.h>
#include <blobstreaming/transporter/DataIo.h>

#include <cstddef>
#include <string>
#include <system_error>

namespace blobstreaming::server {

/// Receives request_.length bytes into the reservation a kind names (window()
/// and advance()), at most data_path::kDispatchBudget per readable event,
/// then reads the trailer and hands it to finish(). A cancellation on the
/// control plane, a store that cannot take the bytes or a broken connection
/// fails the transfer (Step::close).
class ReceiveTransfer : public Transfer {
public:
    using Transfer::Transfer;

    Step on_readable() override;

protected:
    /// The reservation the bytes go into (for its error messages).
    virtual Reservation& into() noexcept = 0;
    /// Room for the next `want` bytes, at the transfer's offset plus bytes_done().
    virtual Reservation::Window window(std::size_t want, std::error_code& ec) = 0;
    /// The first `n` bytes of the last window, at `data`, hold data.
    virtual std::error_code advance(const std::uint8_t* data, std::size_t n) = 0;
    /// Called before each window: true when the transfer left the reactor
    /// until the store can take more (on_readable() again once back).
    virtual bool wait_for_store() { return false; }
    /// The whole trailer is in (trailer()); the body was received whole.
    virtual Step finish() = 0;
    const FrameReader& trailer() const noexcept { return trailer_; }

private:
    Step read_body();
    Step read_trailer();

    bool in_trailer_ = false;
    FrameReader trailer_{protocol::kTrailerSize};
};

}  // namespace blobstreaming::server
