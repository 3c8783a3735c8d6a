#pragma once
/// Single-use, short-lived transfer tickets (docs/PROTOCOL.md, "Tickets").

#include "TransferControl.h"

#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/transporter/Protocol.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace blobstreaming::server {

/// What a ticket permits: one direction, one Blob (or reservation), one range.
struct TicketBinding {
    protocol::FrameType direction = protocol::FrameType::pull;  ///< push or pull
    std::string blob;                                           ///< the Blob (pull) or the reservation's name (push)
    std::uint64_t reservation = 0;                              ///< push: the reservation id in the ReservationTable
    /// Push: one part of a reservation filled in parts (recvPart): the range
    /// is received, its CRC32C trailer checked and acknowledged; the control
    /// plane commits.
    bool part = false;
    /// Push of unknown length (BlobTransporter::pushStream): the Request
    /// must be streamed, `length` is the most it may send.
    bool streamed = false;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    /// Pull: the version the ticket was issued for. The data connection
    /// serves the range only from exactly this version (same size, checksum
    /// and commit time) and otherwise answers blob_changed. A version this
    /// store was still receiving (ReadThroughStore::holding) has no commit
    /// time: only its size and checksum are promised, and the store's read
    /// follows the fill, then its commit.
    std::optional<BlobInfo> version;
    /// Push: the reservation's checksum algorithm (the trailer must use it);
    /// pull: the Blob's.
    ChecksumAlgorithm checksum = kDefaultChecksum;
    std::chrono::milliseconds inactivity_timeout{0};  ///< 0: the data server's default
    std::shared_ptr<TransferControl> control;         ///< never null once issued
    /// The certificate subject of the client the ticket was issued to (TLS
    /// only; "" otherwise): the data connection must present the same.
    std::string client;
    /// Admitted from a named request on a pooled connection (NamedAdmission):
    /// the client holds no reservation id, so a broken push is aborted
    /// rather than parked for a resume.
    bool named = false;
};

/// The tickets issued by the control plane and not yet presented on the data
/// plane. Thread-safe: servants issue and withdraw on omniORB threads, data
/// connections consume on the reactor thread.
///
/// A ticket is consumed by the first Request that presents it, whether or not
/// that Request matches the binding. Unused tickets expire `lifetime` after
/// issue. Used, withdrawn and expired tickets are remembered for a while
/// (twice the lifetime, at least a minute) only so that a refusal can say
/// why; after that they are forgotten and count as unknown. Memory is bounded
/// by the issue rate: purge() runs on every issue() and from the daemon's
/// housekeeping timer, and costs O(log n) per entry it ends (the entries in
/// order of when they are due), never a walk over all of them: a busy daemon
/// remembers a minute of tickets, ~200 000 at 3 000 transfers a second.
class TicketRegistry {
public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;

    /// `clock` is injectable for tests; by default std::chrono::steady_clock.
    explicit TicketRegistry(std::chrono::milliseconds lifetime, Clock clock = {});

    std::chrono::milliseconds lifetime() const noexcept { return lifetime_; }

    /// Registers a binding under a fresh random ticket. A missing control is
    /// created. Throws Error(io_error) only when no random bytes are available.
    protocol::TicketId issue(TicketBinding binding);

    /// Consumes the ticket of `request` and returns its binding when the
    /// request matches it (same direction, offset and length). Otherwise
    /// throws Error(Errc::refused) with the reason:
    ///   unknown ticket <tag>
    ///   ticket <tag> expired <n> ms ago
    ///   ticket <tag> was already used
    ///   ticket <tag> was withdrawn
    ///   ticket <tag> is bound to a pull of "X" [o, o+l), not a push of [o2, o2+l2)
    TicketBinding consume(const protocol::Request& request);
    /// consume() for the ticket of a named request (NamedAdmission), which
    /// no client holds: forgotten as soon as it is consumed instead of
    /// remembered for a refusal's sake, so that named transfers leave no
    /// entry behind (the registry's trees hold the usable tickets and the
    /// control plane's, not a minute of every transfer).
    TicketBinding consume_named(const protocol::Request& request);

    /// The binding of the usable ticket `ticket`, without consuming it (a
    /// read grant checked on the control plane: findGrantedFile,
    /// shareGrantedImages). Throws Error(Errc::refused) as consume() does
    /// for an unknown, expired, used or withdrawn ticket.
    TicketBinding inspect(const protocol::TicketId& ticket) const;

    /// Withdraws an unused ticket; returns false when it is not (or no
    /// longer) waiting to be used.
    bool withdraw(const protocol::TicketId& ticket);

    /// Forgets expired and old used entries; returns how many were dropped.
    std::size_t purge();

    /// Tickets issued and still usable (not expired, used or withdrawn).
    std::size_t pending() const;
    /// All remembered entries, usable or not (for tests of bounded memory).
    std::size_t remembered() const;

private:
    enum class State { issued, used, withdrawn };
    using TimePoint = std::chrono::steady_clock::time_point;
    struct Entry {
        TicketBinding binding;
        TimePoint issued;
        TimePoint closed;  ///< when used or withdrawn
        State state = State::issued;
        TimePoint forget_at;  ///< its key in forget_
    };
    /// (when, ticket), earliest first.
    using Schedule = std::set<std::pair<TimePoint, protocol::TicketId>>;

    std::chrono::steady_clock::time_point now() const;
    std::chrono::milliseconds retention() const noexcept;
    std::size_t purge_locked(std::chrono::steady_clock::time_point now);
    /// Throws consume()'s refusal when `entry` (ticket `tag`) is not usable at `t`.
    void require_usable(const std::string& tag, const Entry& entry, TimePoint t) const;
    /// consume() and consume_named(): `forget` drops the entry once used.
    TicketBinding consume(const protocol::Request& request, bool forget);
    /// The entry of `id` was used or withdrawn at `t`.
    void close_locked(const protocol::TicketId& id, Entry& entry, State state, TimePoint t);

    const std::chrono::milliseconds lifetime_;
    const Clock clock_;
    mutable std::mutex mutex_;
    std::map<protocol::TicketId, Entry> entries_;
    /// Unused tickets by expiry: their control is let go of then.
    Schedule expiring_;
    /// Every entry by when it is forgotten.
    Schedule forget_;
};

}  // namespace blobstreaming::server
