#pragma once
/// The control plane of a Session: the operations on the Naming Service and
/// the stores, with their retry policy (a restarted Naming Service or
/// daemon, a reclaimed transporter) and cached store and transporter
/// references. Its parts are files of their own: the process-wide ORB
/// (OrbHandle), the small pool of worker threads that make the blocking CORBA
/// calls so that the reactor never waits on them (CallExecutor), and the
/// conversion of IDL types (IdlConversion). This header has no CORBA type.

#include "CallExecutor.h"
#include "DataPlane.h"

#include <blobstreaming/client/Options.h>
#include <blobstreaming/client/Result.h>
#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/Error.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::client {

class ControlPlane {
public:
    /// Joins the process-wide ORB and contacts the Naming Service (throws Error).
    explicit ControlPlane(const SessionOptions& options);
    /// Finishes queued calls, stops the workers, releases the references.
    ~ControlPlane();
    ControlPlane(const ControlPlane&) = delete;
    ControlPlane& operator=(const ControlPlane&) = delete;

    /// Thread-safe: `call` runs on a worker thread (CallExecutor), after the
    /// calls submitted before with the same non-empty `key` (a Blob name).
    void submit(std::function<void()> call, std::string key = {});
    /// Runs the calls already submitted, then stops the workers (idempotent).
    /// The references stay valid until destruction.
    void stop();
    /// The most control calls that ran at the same time so far.
    std::size_t max_in_flight() const { return calls_.max_in_flight(); }

    // ---- the worker threads, several at once (and the loop while the Session
    // closes); the cached references are shared under an internal mutex that
    // no CORBA call holds. All throw Error with a specific message ----------
    /// One round trip (BlobTransporter::push): the reservation and its ticket.
    /// `checksum`: the Blob's algorithm (nullopt: the store's default).
    /// `notices`: the store's notice of the transfer (NoticeBoard), checked
    /// by the caller (check_notice_mode).
    PushGrant begin_push(const std::string& store, const std::string& name, std::uint64_t size, bool replace,
                         std::optional<ChecksumAlgorithm> checksum, NoticeMode notices = NoticeMode::none);
    /// A push of unknown length (BlobTransporter::pushStream): an
    /// open-ended reservation of at most `max_size` bytes (0: what the store
    /// can hold) and its streamed ticket. A store of an earlier release
    /// (BAD_OPERATION) is Errc::refused naming this client's release.
    PushGrant begin_stream_push(const std::string& store, const std::string& name, std::uint64_t max_size, bool replace,
                                std::optional<ChecksumAlgorithm> checksum, NoticeMode notices = NoticeMode::none);
    /// Continues the interrupted push of `name` the store still holds a
    /// reservation for: the ticket starts at the bytes it already has.
    /// nullopt when there is none; Errc::invalid_argument when that
    /// reservation is for a Blob of another size than `size`, or computes
    /// another checksum than `checksum` (when given).
    std::optional<PushGrant> resume_push(const std::string& store, const std::string& name, std::uint64_t size,
                                         std::optional<ChecksumAlgorithm> checksum,
                                         NoticeMode notices = NoticeMode::none);
    /// push --streams: a CRC32C reservation to fill in parts (no ticket).
    std::uint64_t reserve_parts(const std::string& store, const std::string& name, std::uint64_t size, bool replace);
    /// The ticket for part [offset, offset + length) of `reservation`; its
    /// range starts past the bytes the store already holds of the part.
    Ticket part_ticket(const std::string& store, const std::string& name, std::uint64_t reservation,
                       std::uint64_t offset, std::uint64_t length);
    /// Commits a reservation filled in parts, checked against `expected`.
    BlobInfo commit(const std::string& store, const std::string& name, std::uint64_t reservation,
                    const Checksum& expected);
    /// Aborts a reservation; failures are logged (the store also drops
    /// reservations whose data connection failed).
    void abort(const std::string& store, std::uint64_t reservation) noexcept;
    Ticket begin_pull(const std::string& store, const std::string& name, std::uint64_t offset, std::uint64_t length,
                      NoticeMode notices = NoticeMode::none);
    /// The notices `store` kept for this Session's NoticeMode::queue
    /// transfers (BlobTransporter::poll), oldest first; none when this
    /// Session holds no transporter of it. Errc::transfer_failed when the
    /// store no longer has the transporter (the notices are lost).
    std::vector<TransferNotice> poll_notices(const std::string& store);
    /// The stores this Session holds a transporter of, sorted.
    std::vector<std::string> transporter_stores();
    /// The Blob's file when the store offers one on this very host.
    std::optional<LocalFile> find_local(const std::string& store, const std::string& name);
    /// find_local() of each of `names` (at most BlobStore::MaxBatch) in one call
    /// (BlobStore::findLocalFiles): none where the store offers no file on
    /// this very host. std::nullopt as a whole when the store is older than
    /// that operation (the caller then asks name by name). Throws Error for
    /// what concerns every name (no read permission, the store unreachable).
    std::optional<std::vector<std::optional<LocalFile>>> find_local_files(const std::string& store,
                                                                          const std::vector<std::string>& names);
    BlobInfo stat(const std::string& store, const std::string& name);
    /// The store rereads the Blob and checks its checksum (Errc::corrupt).
    BlobInfo verify(const std::string& store, const std::string& name);
    std::vector<BlobInfo> list(const std::string& store);
    /// Store `to` fetches `name` from store `from`, another store (the
    /// store itself refuses to be its own source; BlobStore::fetch: the
    /// bytes go from store to store). The call may last as long as the
    /// transfer: its bound is kFetchCallTimeout, while the destination fails
    /// a fetch that stalls (blobstored --fetch-timeout).
    BlobInfo fetch(const std::string& to, const std::string& name, const std::string& from, bool overwrite);
    static constexpr std::chrono::milliseconds kFetchCallTimeout{3600 * 1000};
    /// fetch() in two steps (BlobStore::beginFetch, awaitFetch): begin
    /// returns once the bytes have somewhere to go at `to` (a pull there,
    /// or the next store of a chain, then follows the transfer); await
    /// returns what fetch() would, waiting up to kFetchCallTimeout.
    void begin_fetch(const std::string& to, const std::string& name, const std::string& from, bool overwrite);
    /// fetch() of each of `names` (at most BlobStore::MaxBatch) in one call
    /// (BlobStore::fetchEach): per name what the store committed, or the
    /// error fetch() would have thrown. Throws Error for what fails the
    /// whole call (the stores unreachable, no permission). The store fetches
    /// one Blob after another, and a grant lives for the source's ticket
    /// lifetime: grants that expired meanwhile are asked for again, for as
    /// long as each round copies at least one Blob.
    struct FetchOutcome {
        std::optional<BlobInfo> info;
        std::optional<Error> error;
    };
    std::vector<FetchOutcome> fetch_each(const std::string& to, const std::vector<std::string>& names,
                                         const std::string& from, bool overwrite);
    BlobInfo await_fetch(const std::string& to, const std::string& name);
    void remove(const std::string& store, const std::string& name);
    std::vector<std::string> store_names();
    /// Asks every registered store (`contains`, with this client's own
    /// identity). A store that does not answer (did_not_answer()) is skipped
    /// and added to `unreachable` (when given). A store whose reference a
    /// TLS client refuses (Errc::refused, "does not require TLS") is logged
    /// as a warning and skipped; when no other store holds `name`, that
    /// refusal is thrown instead of an empty answer.
    std::vector<Location> locate(const std::string& name, std::vector<UnreachableStore>* unreachable = nullptr);
    /// The nearest store that answers and holds `name`: the BlobLocator's
    /// answer (locator_answer) when it has one, else this client's own
    /// survey (locate); Errc::no_such_blob naming the stores asked and
    /// those that did not answer.
    std::string nearest_holder(const std::string& name, const std::string& what);
    /// Where a push of `size` bytes that names no store goes (the placement
    /// rule, Placement.h), in `tier` when given: BlobLocator::place of the
    /// locator bound as BlobStreaming/Locator. When none is bound or it does
    /// not answer, and for a TLS client (which asks no store through a
    /// daemon's identity), the same rule over every store's status as this
    /// client gets it, without a default store. Errc::out_of_space,
    /// unknown_store or unreachable naming the tiers and stores asked.
    std::string place(std::uint64_t size, std::optional<Tier> tier, const std::string& what);
    std::vector<StoreStatus> stores();
    /// One store's status (reachable true); Error as any call to it, with
    /// `what` naming the operation.
    StoreStatus status(const std::string& store, const std::string& what);
    /// Removes the Naming Service entries whose daemon is gone (corba::probe:
    /// connection refused, object unknown to its server), each checked
    /// within `bound`; entries whose daemon answers, is silent, or cannot be
    /// asked (a plaintext reference for a TLS client, a TLS-only one for a
    /// plaintext client) stay. Returns the entries removed.
    std::vector<PrunedStore> prune(std::chrono::milliseconds bound);

    class Refs;

private:
    /// fetch_each()'s one round: grants, then one fetchEach call.
    std::vector<FetchOutcome> fetch_each_granted(const std::string& to, const std::vector<std::string>& names,
                                                 const std::string& from, bool overwrite);
    /// The nearest store holding `name` as the bound BlobLocator answers;
    /// nullopt when no locator is bound or answers, it knows no holder, or
    /// this client uses TLS (a TLS daemon's locator answers for its own
    /// store only).
    std::optional<std::string> locator_answer(const std::string& name, const std::string& what);
    /// locate() with `what` naming the operation in messages.
    std::vector<Location> locate_as(const std::string& name, const std::string& what,
                                    std::vector<UnreachableStore>* unreachable);

    SessionOptions options_;
    std::unique_ptr<Refs> refs_;  ///< holds the ORB: destroyed after the workers stopped
    CallExecutor calls_;
};

/// Whether `e` means that its store did not answer (Errc::unreachable,
/// Errc::timeout): an operation across every store goes on without it.
bool did_not_answer(const Error& e) noexcept;

}  // namespace blobstreaming::client
