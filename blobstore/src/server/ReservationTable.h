#pragma once
/// Open reservations of a daemon, by id, between BlobStore::reserve() and the
/// data-plane push (or BlobStore::commit/abort) that ends them.

#include "TransferControl.h"

#include <blobstreaming/blobstore/Reservation.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::server {

/// Bounds on open reservations (waiting, claimed by a data connection or
/// parked): each holds store space and table memory until it ends, so that a
/// client reserving without ever filling could otherwise exhaust the daemon.
/// 0 means unbounded.
struct ReservationLimits {
    std::size_t total = 1024;     ///< --max-reservations
    std::size_t per_client = 64;  ///< --max-reservations-per-client
    /// At the total, a reservation nobody is filling (waiting for its data
    /// connection, parked for resuming, or between its parts) of a client
    /// holding at least two more than the newcomer is aborted to make room
    /// once it is this old (since reserved or parked), oldest first from
    /// the client holding the most.
    std::chrono::milliseconds pressure_idle{5000};
};

/// Thread-safe. A reservation is in one of two places: here, waiting (for a
/// push ticket to be presented, or for commit/abort), or claimed by a data
/// connection, which then owns it until it commits or aborts. Claimed ids stay
/// known so that abort() can cancel the push that is filling them.
///
/// A waiting reservation older than the grace period is aborted by purge(),
/// so that the space of a client that vanished comes back. A push whose
/// data connection broke parks its reservation here again (park()), with
/// the bytes received so far, so that the client can resume it within the
/// grace period (resumable()).
class ReservationTable {
public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;

    explicit ReservationTable(std::chrono::milliseconds grace, Clock clock = {}, ReservationLimits limits = {});
    ~ReservationTable();
    ReservationTable(const ReservationTable&) = delete;
    ReservationTable& operator=(const ReservationTable&) = delete;

    /// Takes ownership; returns its id (never 0). `client` (a certificate
    /// subject or an address, see corba::caller_client()) is who the
    /// reservation counts against and the only client that may commit,
    /// abort, fill or resume it (service::StoreService checks). Error(limit_reached) naming the limit and
    /// the count when the table or the client already holds as many open
    /// reservations as allowed; the reservation is then aborted.
    std::uint64_t add(std::unique_ptr<Reservation> reservation, const std::string& client = {});

    /// A reservation its store kept across a restart (Store::take_kept()):
    /// parked for its resume_owner() as an interrupted push is, its grace
    /// period counted from its last byte, `idle` ago. Not counted against
    /// the limits (it was within them when reserved). Returns its id.
    std::uint64_t restore(std::unique_ptr<Reservation> reservation, std::chrono::seconds idle);

    /// The check of add() without adding: call before the store's reserve()
    /// so that a refused client costs no allocation. `what` names the
    /// operation in the message, e.g. `reserve "CT.1"`. At the total it
    /// makes room as add() does (ReservationLimits::pressure_idle).
    void check_limits(const std::string& client, const std::string& what);
    /// New limits (a SIGHUP reload) for the reservations added from now on;
    /// open ones above them stay until they end.
    void set_limits(ReservationLimits limits);

    struct Summary {
        std::uint64_t id = 0;
        std::string name;
        std::uint64_t size = 0;
        std::uint64_t received = 0;                     ///< bytes already written into it
        std::string client;                             ///< who reserved it (add())
        ChecksumAlgorithm checksum = kDefaultChecksum;  ///< what it computes over its bytes
    };
    /// A waiting reservation. Error(no_such_reservation).
    Summary find(std::uint64_t id) const;
    /// The waiting reservation of `name` (the one an interrupted push left
    /// behind) that `client` made. Error(no_such_reservation) when there is
    /// none, when a data connection is filling it, or when another client
    /// made it (the same answer: a client learns nothing of others' pushes).
    Summary resumable(const std::string& name, const std::string& client = {}) const;
    /// Who reserved `id`, waiting or claimed. Error(no_such_reservation).
    std::string client_of(std::uint64_t id) const;

    /// Notes the control of the push ticket issued for a waiting reservation
    /// (so that abort() can reach a running push). Error(no_such_reservation).
    void attach(std::uint64_t id, std::shared_ptr<TransferControl> control);

    /// Data plane: takes a waiting reservation out to fill it. Error(refused)
    /// naming the id when it was aborted, committed or dropped meanwhile.
    std::unique_ptr<Reservation> claim(std::uint64_t id);
    /// Data plane: the claimed reservation `id` has ended (committed or aborted).
    void release(std::uint64_t id) noexcept;
    /// Data plane: the push filling the claimed reservation `id` broke off;
    /// it waits again, for the grace period from now, to be resumed. Aborts
    /// it instead when the control plane aborted it meanwhile or it is closed.
    void park(std::uint64_t id, std::unique_ptr<Reservation> reservation) noexcept;

    // -- filling in parts (push --streams): several data connections, each
    // a range. The reservation moves into the entry's ledger at the first
    // part; each part's connection shares it while it receives (all on the
    // reactor thread); the ledger keeps the ranges received with their
    // CRC32Cs. Such a reservation is not claimed, resumed nor filled in
    // order; it is committed by the control plane (take()) once its ranges
    // cover the Blob, with the CRC32C combined from them.

    /// Where a part ticket for [offset, offset + length) of `id` starts: past
    /// the bytes of the range already held from `offset` on (a part that
    /// broke off continues there). Returns the start (== offset + length:
    /// nothing left to send). Error(no_such_reservation) when `id` is not
    /// open or being filled in order; Error(invalid_range) when the range is
    /// outside the Blob or the rest of it overlaps bytes held or being
    /// received by another connection; Error(refused) when the reservation
    /// cannot be filled in parts (its checksum, its store).
    struct PartStart {
        std::uint64_t offset = 0;
        std::string name;  ///< the reservation's Blob
    };
    PartStart part_start(std::uint64_t id, std::uint64_t offset, std::uint64_t length) const;
    /// Data plane: a part connection begins to receive [offset, offset +
    /// length) into `id` (checks as part_start(), with its errors, and the
    /// range must start where it says: Error(invalid_range) when bytes from
    /// `offset` landed since the ticket was issued, a connection of the part
    /// having reached the store late; ask for the part again). Error(refused)
    /// when the reservation is gone.
    std::shared_ptr<Reservation> begin_part(std::uint64_t id, std::uint64_t offset, std::uint64_t length,
                                            std::shared_ptr<TransferControl> control);
    /// Data plane: the part connection of [offset, ...) has ended with
    /// `landed` bytes from `offset` on, whose CRC32C is `crc`. `keep`: they
    /// count (received, or kept for the part to continue); otherwise the
    /// whole reservation is aborted (a store error), once no other part
    /// connection uses it.
    void end_part(std::uint64_t id, std::uint64_t offset, std::uint64_t landed, std::uint32_t crc, bool keep) noexcept;

    struct Taken {
        std::unique_ptr<Reservation> reservation;
        /// Filled in parts: the checksum combined from them (commit_assembled()).
        std::optional<Checksum> assembled;
        std::shared_ptr<Reservation> shared;  ///< filled in parts: the reservation (not in `reservation`)
        Reservation& get() const noexcept { return reservation ? *reservation : *shared; }
    };
    /// Control plane commit: takes a waiting reservation out.
    /// Error(no_such_reservation), also when a data connection is filling it;
    /// Error(incomplete) naming the first missing range when parts do not
    /// cover the Blob yet (the reservation then stays).
    Taken take(std::uint64_t id);

    /// Control plane abort: aborts a waiting reservation, or cancels the push
    /// filling it. Error(no_such_reservation).
    void abort(std::uint64_t id);

    /// A new, non-resuming push of `name` by `client` supersedes the
    /// reservation an earlier push of `name` left kept (an interrupted push
    /// parked for resuming, or a push in parts between its parts and its
    /// commit): aborts it when `client` made it, or when it is abandoned
    /// (no data connection since the grace period). Returns whether there
    /// was one. Error(already_exists) naming `name` and until when it is
    /// kept when another client's is still within its grace period: that
    /// push goes on (its commit succeeds), the new one must wait. A
    /// reservation being filled by a data connection is never touched.
    bool abort_parked(const std::string& name, const std::string& client = {});

    /// Aborts waiting reservations older than the grace period; returns how
    /// many. Those whose abort waits for another host
    /// (Reservation::ending_waits()) go to `end` instead when it is given
    /// (the daemon's reactor hands them to its CommitPool).
    std::size_t purge(const std::function<void(std::shared_ptr<Reservation>)>& end = {});
    /// Aborts every waiting reservation and cancels claimed ones (shutdown).
    void abort_all() noexcept;

    std::size_t waiting() const;
    /// Open reservations: waiting, claimed and parked.
    std::size_t open() const;
    /// Open reservations of `client`.
    std::size_t open_by(const std::string& client) const;

private:
    /// The ledger of a reservation filled in parts.
    struct Parts {
        struct Extent {
            std::uint64_t length = 0;
            std::uint32_t crc = 0;
        };
        std::shared_ptr<Reservation> reservation;
        std::map<std::uint64_t, Extent> held;                                                        ///< by offset
        std::map<std::uint64_t, std::pair<std::uint64_t, std::shared_ptr<TransferControl>>> active;  ///< by offset
        bool aborting = false;  ///< aborted while parts were being received
        std::uint64_t held_bytes() const noexcept;  ///< received and kept, all parts together
        /// The first byte of [offset, end) that is held or being received, or `end`.
        std::uint64_t first_taken(std::uint64_t offset, std::uint64_t end) const noexcept;
    };

    struct Entry {
        std::unique_ptr<Reservation> reservation;  ///< null while claimed or filled in parts
        std::chrono::steady_clock::time_point created;
        std::shared_ptr<TransferControl> control;
        bool parked = false;           ///< a push into it broke off (see park())
        std::string client;            ///< who reserved it: counted against its limit, the only one to use it
        std::unique_ptr<Parts> parts;  ///< filled in parts
    };
    /// Bytes received into `e` so far: in order, or by its parts.
    static std::uint64_t received_locked(const Entry& e) noexcept;
    /// part_start()'s checks; the caller holds mutex_.
    std::uint64_t part_start_locked(const Entry& e, std::uint64_t id, std::uint64_t offset, std::uint64_t length) const;
    std::chrono::steady_clock::time_point now() const;
    [[noreturn]] static void throw_missing(std::uint64_t id, const std::string& why);
    /// Throws limit_reached; the caller holds mutex_. At the total, first
    /// takes out the reservation that may make room (pressure_idle) into
    /// `evicted`, which the caller aborts once it has released mutex_.
    void check_limits_locked(const std::string& client, const std::string& what,
                             std::vector<std::shared_ptr<Reservation>>& evicted);
    /// Aborts reservations taken out to make room (without mutex_), logged.
    static void abort_evicted(std::vector<std::shared_ptr<Reservation>>& evicted, const std::string& what) noexcept;
    /// Removes an entry and its client's count; the caller holds mutex_.
    std::map<std::uint64_t, Entry>::iterator erase_locked(std::map<std::uint64_t, Entry>::iterator it);

    const std::chrono::milliseconds grace_;
    const Clock clock_;
    mutable std::mutex mutex_;
    ReservationLimits limits_;  ///< guarded by mutex_
    std::uint64_t next_id_ = 1;
    std::map<std::uint64_t, Entry> entries_;
    std::map<std::string, std::size_t> per_client_;  ///< open reservations by client
};

}  // namespace blobstreaming::server
