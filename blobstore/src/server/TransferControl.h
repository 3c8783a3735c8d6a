#pragma once
/// What the control plane keeps of a transfer once its ticket is issued: a
/// cancel flag the data plane polls, and where the outcome is reported.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include <blobstreaming/transporter/Protocol.h>

namespace blobstreaming::server {

/// How one transfer ended, for BlobTransporter notifications.
struct TransferOutcome {
    protocol::TicketId ticket{};
    bool succeeded = false;
    std::uint64_t bytes = 0;
    std::string reason;  ///< empty when succeeded
};

/// Shared by the servant that issued a ticket and the data connection that
/// runs its transfer.
struct TransferControl {
    /// Set by BlobTransporter::cancel() or BlobStore::abort() (any thread);
    /// the data connection checks it on every progress and on its timer, and
    /// then abandons the transfer with Errc::cancelled.
    std::atomic<bool> cancelled{false};

    /// Called exactly once, on the reactor thread, when a transfer that
    /// presented the ticket has ended (not when the ticket expires unused).
    /// Must not throw and must not block for long. May be empty.
    std::function<void(const TransferOutcome&)> on_finished;
};

}  // namespace blobstreaming::server
