#pragma once
/// A push of a whole Blob (or of its missing tail, resumed): received into
/// the reservation its ticket names, checked against its trailer, committed,
/// and only then acknowledged (docs/PROTOCOL.md, "Push").

#include "ReceiveTransfer.h"

#include <memory>

namespace blobstreaming::server {

/// Claims the ticket's reservation where the ticket left it (else refused),
/// fills it in order, and commits it against the trailer's checksum. A
/// commit or a window that waits for the disk or another host runs off the
/// reactor (TransferLink::run_off_reactor()). Failed (fail()), the
/// reservation is parked for a resume when the connection broke or stalled
/// (transfer_failed, timeout), else aborted. A streamed push (its length
/// known only at its end) fills an open-ended reservation, ends it at the
/// chunk of length 0, and is never parked: broken, it is aborted (its
/// sender cannot produce the same bytes again).
class PushTransfer final : public ReceiveTransfer {
public:
    using ReceiveTransfer::ReceiveTransfer;

    Step start() override;

    /// How a commit ended.
    struct CommitOutcome {
        bool ok = false;
        BlobInfo info;                      ///< ok
        Errc code = Errc::transfer_failed;  ///< !ok
        std::string message;                ///< !ok
    };
    /// Commits `r` against `expected` (any thread); a failed commit aborts it.
    static CommitOutcome commit_reservation(Reservation& r, const Checksum& expected) noexcept;

private:
    Reservation& into() noexcept override { return *reservation_; }
    Reservation::Window window(std::size_t want, std::error_code& ec) override;
    std::error_code advance(const std::uint8_t* data, std::size_t n) override;
    bool wait_for_store() override;
    std::error_code end_of_body() override;
    Step finish() override;
    void abandon(Errc status) override;

    /// The commit on the CommitPool, the connection away from the reactor
    /// meanwhile; here when it cannot leave.
    Step commit_away(const Checksum& expected);
    /// Ends the push with `outcome` (reservation slot, log, completion
    /// notice) and returns the Response that tells the client.
    protocol::Response record(const CommitOutcome& outcome);
    /// abandon() for a reservation whose suspend or abort waits for another
    /// host (Reservation::ending_waits()): done on the CommitPool, then
    /// parked for a resume (`keep`) or released.
    void end_reservation_away(bool keep);

    std::unique_ptr<Reservation> reservation_;
};

}  // namespace blobstreaming::server
