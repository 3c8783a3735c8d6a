#pragma once
/// What a push and a part have in common: the body received straight into a
/// reservation's window, then the checksum trailer (docs/PROTOCOL.md).

#include "Transfer.h"

#include <blobstreaming/blobstore/Reservation.h>
#include <blobstreaming/transporter/DataIo.h>

#include <blobstreaming/transporter/WireCompression.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

namespace blobstreaming::server {

/// Receives request_.length bytes into the reservation a kind names (window()
/// and advance()), at most data_path::kDispatchBudget per readable event,
/// then reads the trailer and hands it to finish(). A streamed Request's
/// body is chunks (docs/PROTOCOL.md, "A push of unknown length"): each
/// chunk's header, then its bytes straight into the window, until the chunk
/// of length 0 (end_of_body()). A cancellation on the
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
    /// A streamed body ended (its chunk of length 0), before the trailer:
    /// an error (with its message) fails the transfer.
    virtual std::error_code end_of_body() { return {}; }
    /// "N of M bytes", or "N bytes of a push of unknown length".
    std::string received_text() const;
    /// The whole trailer is in (trailer()); the body was received whole.
    virtual Step finish() = 0;
    const FrameReader& trailer() const noexcept { return trailer_; }
    /// A compressed body (Request::compress) where this store takes none
    /// (DataServerConfig::compress false): the refusal, the transfer ended.
    std::optional<Step> refuse_compressed();

private:
    Step read_body();
    Step read_trailer();
    /// A streamed body: the next chunk's header (Step::next: go on reading
    /// the body or the trailer).
    enum class ChunkStep { next, wait, failed };
    ChunkStep read_chunk_header();
    /// A compressed body (CompressedBody.cpp): frames decoded straight
    /// into the windows, then the trailer.
    Step read_frames();
    Step body_received();
    /// How the body's receive ends early, once for both kinds of body:
    /// the store has no window (`ec`, or none left), the store did not take
    /// bytes (advance() failed with `ec`), the connection broke (`r`).
    Step no_window(const std::error_code& ec);
    Step not_taken(const std::error_code& ec);
    Step broken(const IoResult& r);
    /// Nothing more to read now: acknowledges at once, waits for input.
    Step acknowledge_and_wait();

    bool in_trailer_ = false;
    /// Streamed: bytes left of the current chunk; none when its header is due.
    std::uint64_t chunk_left_ = 0;
    bool body_ended_ = false;  ///< streamed: the chunk of length 0 came
    FrameReader chunk_header_{protocol::kChunkHeaderSize};
    FrameReader trailer_{protocol::kTrailerSize};
    std::unique_ptr<wire::FrameDecoder> frames_;  ///< a compressed body
};

}  // namespace blobstreaming::server
