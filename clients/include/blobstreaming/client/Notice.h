#pragma once
/// Transfer notices: the store's own word, on the control plane, that a
/// transfer presented on a data connection has ended (BlobTransporter's
/// NotificationSemantics). A transfer's completion already says how it
/// ended; a notice is for whoever else wants to know what the store saw,
/// such as an audit trail or a process that only polls.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace blobstreaming::client {

/// PushOptions::notices, PullOptions::notices.
enum class NoticeMode {
    /// No notice (the default, and the cost of a transfer without one).
    none,
    /// The store calls this Session back as soon as the transfer ended
    /// (SessionOptions::on_notice), best effort: a store drops notices for a
    /// Session that does not take them within a few seconds, and logs how
    /// many.
    send,
    /// The store keeps the notice until Session::poll_notices() takes it (at
    /// most 10000 per Session and store, the oldest dropped first).
    queue,
};

/// "none", "send", "queue".
const char* to_string(NoticeMode mode) noexcept;
/// The mode named `text`; nullopt when it names none.
std::optional<NoticeMode> notice_mode_of(std::string_view text) noexcept;

enum class TransferDirection { push, pull };
/// "push", "pull".
const char* to_string(TransferDirection direction) noexcept;

/// How one transfer ended, as its store saw it. Each transfer with a notice
/// mode gets one notice per ticket: a pull that the store had to serve
/// again (the Blob was replaced meanwhile), or a resumed push, reports each
/// attempt.
struct TransferNotice {
    /// The store that ran the transfer (a send notice of a ticket the
    /// Session no longer knows: empty).
    std::string store;
    /// The Blob, and which way its bytes went. Both come from this Session's
    /// record of the tickets it obtained (a notice itself carries only the
    /// ticket): `blob` is empty when the Session no longer knows the ticket
    /// (it remembers the 10000 newest awaiting a notice).
    std::string blob;
    TransferDirection direction = TransferDirection::push;
    /// The ticket, 32 lowercase hex digits (the store's log names it too).
    std::string ticket;
    /// The range the ticket was for: its first byte and length.
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    /// true: every byte moved and, for a push, the Blob was committed.
    bool succeeded = false;
    /// Bytes moved on the data connection (on failure: how far it got).
    std::uint64_t bytes = 0;
    /// Why it failed, in the store's words; empty when it succeeded.
    std::string reason;
    /// When this Session received the notice (send) or took it (queue).
    std::chrono::system_clock::time_point received;
};

/// SessionOptions::on_notice: called once per notice of a NoticeMode::send
/// transfer, on a thread of the ORB (not the reactor thread), one call at a
/// time for the whole Session, in the order each store sent them. It must
/// not block: while it runs, further notices wait, and a store that cannot
/// hand over a notice within 2 s drops that Session's notices for a while.
/// What it throws is logged and dropped. It may start Async operations;
/// it runs no more once the Session's destructor has returned.
using NoticeCallback = std::function<void(const TransferNotice&)>;

}  // namespace blobstreaming::client
