#pragma once
/// The decisions of a store's control plane, in plain C++: who may do what
/// (the access list), the index (stat, list, verify, remove), reservations
/// (reserve, commit, abort, resume: their owner and limits), tickets (pulls,
/// read grants, pushes, parts) and the files and images offered to
/// processes of this host. The CORBA servants (servants/) name the caller,
/// convert IDL types and map the Errors thrown here to IDL exceptions; no
/// CORBA type or call is part of this interface.
///
/// Thread-safe (the ORB's threads call it at once): it keeps no state of its
/// own; its collaborators are thread-safe.

#include "server/AccessList.h"
#include "server/ReservationTable.h"
#include "server/TicketRegistry.h"

#include <blobstreaming/blobstore/BlobInFlight.h>
#include <blobstreaming/blobstore/Store.h>
#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Protocol.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming {
class ReadThroughStore;
}  // namespace blobstreaming

namespace blobstreaming::corba {
class ImageShelf;
}  // namespace blobstreaming::corba

namespace blobstreaming::service {

/// Who asks, as the transport identified it.
struct Caller {
    /// The RFC 2253 subject of the client's verified certificate; "" without
    /// TLS. Checked against the access list; tickets are bound to it.
    std::string subject;
    /// Whom per-client limits count and reservations belong to: the subject,
    /// else the client's address ("local" for an in-process call).
    std::string client;
};

/// The access list refused `permission`: Errc::refused with the list's
/// message ("permission denied: client "CN=ws1" may not write"). The
/// servants answer it with CORBA::NO_PERMISSION, whose minor code names the
/// permission.
class PermissionDenied : public Error {
public:
    PermissionDenied(server::Permission permission, const std::string& message)
        : Error(Errc::refused, message), permission_(permission)
    {}
    server::Permission permission() const noexcept { return permission_; }

private:
    server::Permission permission_;
};

/// Names (or grants) per batch call: fetchEach, findLocalFiles, shareImages,
/// shareGrantedImages, grantReads: the IDL's BlobStore::MaxBatch, which
/// clients read to split their batches (BlobStore_i.cpp asserts the two
/// agree; this header names no CORBA type).
constexpr std::size_t kMaxBatch = 1024;
/// Throws Error(limit_reached) "OPERATION: N WHAT; at most 1024 per call"
/// past kMaxBatch.
void check_batch(std::size_t count, const char* operation, const char* what);

/// What the service works with besides its required collaborators. The
/// pointers are not owned and outlive the service.
struct StoreServiceOptions {
    std::string store_name;  ///< in log lines
    /// The checksum of pushes that ask for the store's default (blobstored
    /// --checksum).
    ChecksumAlgorithm default_checksum = kDefaultChecksum;
    /// Processes of this host may read a FileStore's files (false:
    /// blobstored --no-local; local_file() then offers none).
    bool local_fast_path = true;
    /// The access list in force; null: everything is permitted.
    const server::LiveAccessList* access = nullptr;
    /// Sealed images for the memory stores of this host; null: image()
    /// offers none.
    corba::ImageShelf* images = nullptr;
    /// The decorator outermost in the service's store (the same object):
    /// the fills into the store (copies, read-through) and what a read
    /// serves (holding(): a Blob being filled is the version being
    /// received; with --read-through a Blob only a farther tier holds is
    /// filled first). Null: the store is read as it is.
    const ReadThroughStore* read_through = nullptr;
};

class StoreService {
public:
    StoreService(Store& store, server::ReservationTable& reservations, server::TicketRegistry& tickets,
                 StoreServiceOptions options);
    StoreService(const StoreService&) = delete;
    StoreService& operator=(const StoreService&) = delete;

    const std::string& store_name() const noexcept { return options_.store_name; }
    /// The checksum of pushes that ask for the store's default.
    ChecksumAlgorithm default_checksum() const noexcept { return options_.default_checksum; }

    /// Checks that `caller` holds `permission` in the access list (always
    /// true when it is not enforced). Otherwise logs the refusal, naming
    /// `operation`, and throws PermissionDenied.
    void require(const Caller& caller, server::Permission permission, const char* operation) const;
    /// Whether an access list is enforced (TLS): then some callers may be
    /// refused.
    bool access_enforced() const;

    // -- The index (StoreService.cpp). Each needs read (remove: delete).
    struct Status {
        StoreUsage usage;
        std::string kind;  ///< Store::kind()
        bool read_through = false;
        bool local_files = false;  ///< processes of this host may read its files
    };
    /// Needs no permission (a verified certificate suffices).
    Status status() const;
    /// Errc::invalid_name.
    bool contains(const Caller& caller, const std::string& name) const;
    /// The store's errors (invalid_name, no_such_blob).
    BlobInfo stat(const Caller& caller, const std::string& name) const;
    std::vector<BlobInfo> list(const Caller& caller) const;
    /// Store::verify on the calling thread, logged (a mismatch at ERROR).
    BlobInfo verify(const Caller& caller, const std::string& name) const;
    void remove(const Caller& caller, const std::string& name);

    // -- Reservations (StoreService.cpp). Each needs write. A reservation
    // belongs to the client that made it: another client's id is answered
    // with no_such_reservation "OPERATION reservation N: it was reserved by
    // another client; ...", its owner logged, never told.
    using Opened = server::ReservationTable::Summary;
    /// Purges expired reservations, checks `name`, the caller's and the
    /// total limits, supersedes a kept push of `name` the caller made or
    /// that is abandoned (another client's live one: already_exists), and
    /// reserves `size` bytes checksummed with the store's default
    /// (overwrite: replacing a committed Blob). The store's errors
    /// (out_of_space, already_exists), limit_reached.
    Opened reserve(const Caller& caller, const std::string& name, std::uint64_t size, bool overwrite);
    /// Commits reservation `id` when its bytes match `expected`, called
    /// once the caller's checks passed (a malformed checksum of a refused
    /// caller is never looked at). no_such_reservation, incomplete (parts
    /// missing), digest_mismatch, the store's errors.
    BlobInfo commit(const Caller& caller, std::uint64_t id, const std::function<Checksum()>& expected);
    /// Aborts a waiting reservation or cancels the push filling it.
    void abort(const Caller& caller, std::uint64_t id);
    /// The caller's interrupted push of `name`, to continue where it broke
    /// off. invalid_name, no_such_reservation.
    Opened resumable(const Caller& caller, const std::string& name);

    // -- Tickets (StoreServiceTickets.cpp). Each is bound to the caller's
    // subject (a read grant: to the reader's) and registered; the data
    // connection that presents it must match it.
    struct TransferOptions {
        std::chrono::milliseconds inactivity_timeout{0};   ///< 0: the data server's default
        std::shared_ptr<server::TransferControl> control;  ///< where the outcome goes (null: none)
    };
    struct Issued {
        protocol::TicketId id{};
        server::TicketBinding binding;
    };
    /// How long an unused ticket stays usable.
    std::chrono::milliseconds ticket_lifetime() const noexcept { return tickets_.lifetime(); }
    /// Withdraws an unused ticket (a transporter's cancel or close); false
    /// when it is not (or no longer) waiting to be used.
    bool withdraw(const protocol::TicketId& ticket) { return tickets_.withdraw(ticket); }
    /// A pull of [offset, offset + length) of `name` (length 0: to its end)
    /// from the version held now, or from the one being received here
    /// (read-through fetches it first). Needs read. invalid_name,
    /// no_such_blob, invalid_range "send "X": range [o, e) is outside the
    /// blob of N bytes".
    Issued send(const Caller& caller, const std::string& name, std::uint64_t offset, std::uint64_t length,
                TransferOptions options);
    /// A pull of the whole of `name` bound to `reader` (the certificate
    /// subject of the store that copies) rather than to the caller; without
    /// TLS bound to nobody (the ticket is the capability). Needs read.
    /// send()'s errors, and invalid_argument when a caller with a subject
    /// names no reader.
    Issued grant_read(const Caller& caller, const std::string& name, const std::string& reader,
                      TransferOptions options);
    /// grant_read() of each name: each outcome is its ticket or its error
    /// (an error other than Error: transfer_failed "grantRead "X": internal
    /// error: ..."). Needs read, checked once; limit_reached past kMaxBatch.
    /// `options` is asked once per ticket.
    struct GrantOutcome {
        std::optional<Issued> issued;
        Errc code = Errc::ok;
        std::string message;
    };
    std::vector<GrantOutcome> grant_reads(const Caller& caller, const std::vector<std::string>& names,
                                          const std::string& reader, const std::function<TransferOptions()>& options);
    /// The push ticket of `id` from the bytes it holds (0, or more when
    /// resumed) to the end of its Blob: [offset, offset + length) must be
    /// exactly that (length 0 at offset 0: the whole Blob). Needs write and
    /// the reservation's owner. `name` is set to the reservation's Blob as
    /// soon as it is known (for the caller's error context).
    /// no_such_reservation, invalid_range naming what a push continues with.
    Issued recv(const Caller& caller, std::uint64_t id, std::uint64_t offset, std::uint64_t length,
                TransferOptions options, std::string& name);
    /// reserve() and its push ticket in one: with `checksum` (nullopt: the
    /// store's default). A reservation whose ticket cannot be issued is
    /// aborted before the error is thrown.
    struct Pushed {
        Opened reservation;
        Issued ticket;
    };
    Pushed push(const Caller& caller, const std::string& name, std::uint64_t size, bool overwrite,
                std::optional<ChecksumAlgorithm> checksum, TransferOptions options);
    /// push() of unknown length: an open-ended reservation (growing up to
    /// `max_size` bytes, 0: kMaxStream) and a ticket for a streamed
    /// Request. refused when the store cannot grow a reservation.
    static constexpr std::uint64_t kMaxStream = std::uint64_t{1} << 62;
    Pushed push_stream(const Caller& caller, const std::string& name, std::uint64_t max_size, bool overwrite,
                       std::optional<ChecksumAlgorithm> checksum, TransferOptions options);
    /// reserve() for a push in parts (push --streams): only CRC32C combines
    /// from parts; another algorithm is invalid_argument.
    Opened reserve_parts(const Caller& caller, const std::string& name, std::uint64_t size, bool overwrite,
                         std::optional<ChecksumAlgorithm> checksum);
    /// The ticket of the part [offset, offset + length) of `id`, from past
    /// what it already holds of that range (ReservationTable::part_start).
    /// Needs write and the owner; `name` as in recv().
    Issued recv_part(const Caller& caller, std::uint64_t id, std::uint64_t offset, std::uint64_t length,
                     TransferOptions options, std::string& name);

    // -- Files and images for processes of this host (StoreServiceFiles.cpp).
    /// The committed file of `name` (findLocalFile; read-through fetches a
    /// missing Blob first): none when the store keeps no files, does not
    /// offer them, is receiving the Blob now, or for an empty Blob. Needs
    /// read. invalid_name, no_such_blob.
    std::optional<Store::LocalFile> local_file(const Caller& caller, const std::string& name);
    /// local_file() of each of `names` (findLocalFiles): the read
    /// permission checked once, at most kMaxBatch names; none for a name
    /// local_file() would refuse or offer no file for.
    std::vector<std::optional<Store::LocalFile>> local_files(const Caller& caller,
                                                             const std::vector<std::string>& names);
    /// A sealed image of `name` (shareImage): none as local_file(), without
    /// an image shelf, or when the shelf cannot make one (logged). Needs
    /// read.
    struct Image {
        int fd = -1;              ///< the shelf's descriptor (valid while it keeps the image)
        std::uint64_t inode = 0;  ///< of the memfd
        BlobInfo info;
    };
    std::optional<Image> image(const Caller& caller, const std::string& name);
    /// image() of each name; an error is a missing image. Needs read,
    /// checked once; limit_reached past kMaxBatch.
    std::vector<std::optional<Image>> images(const Caller& caller, const std::vector<std::string>& names);
    /// The file of the read grant `grant` this store issued to `caller`
    /// (findGrantedFile; no permission: the grant is the authority): none
    /// while the Blob is still arriving or when the file no longer holds
    /// the granted version. refused "findGrantedFile: ..." when the grant
    /// is unknown, used, expired, not a whole pull or issued to another
    /// client. `name` is set to the grant's Blob once known.
    std::optional<Store::LocalFile> granted_file(const Caller& caller, const protocol::TicketId& grant,
                                                 std::string& name);
    /// image() of each grant's Blob (shareGrantedImages), none for a grant
    /// that is not usable by `caller` (logged at DEBUG) or whose Blob
    /// changed; limit_reached past kMaxBatch.
    std::vector<std::optional<Image>> granted_images(const Caller& caller,
                                                     const std::vector<protocol::TicketId>& grants);

private:
    /// The version a read of `name` serves (ReadThroughStore::holding);
    /// no_such_blob when there is none.
    BlobInfo held_version(const std::string& name) const;

    /// reserve()'s work after the permission check, with `checksum`
    /// (shared with push and reserve_parts).
    /// `open_ended`: the most an open-ended reservation may grow to (0: a
    /// fixed size).
    /// The push ticket of `reservation` (just opened) for `length` bytes
    /// (`streamed`: chunked, up to that many); the reservation is aborted
    /// when the ticket cannot be issued.
    Pushed push_ticket(const Caller& caller, const std::string& name, Opened reservation, std::uint64_t length,
                       ChecksumAlgorithm algorithm, bool streamed, TransferOptions options);
    Opened open_reservation(const Caller& caller, const std::string& name, std::uint64_t size, bool overwrite,
                            ChecksumAlgorithm checksum, std::uint64_t open_ended = 0);
    /// Checks that `caller` made reservation `id`; no_such_reservation
    /// otherwise (`operation` names the call in the message).
    void require_owner(const Caller& caller, std::uint64_t id, const char* operation) const;
    /// The binding of a pull of [offset, offset + length) of `name`.
    server::TicketBinding pull_binding(const char* operation, const std::string& name, std::uint64_t offset,
                                       std::uint64_t length) const;
    /// grant_read() after the permission check.
    Issued grant(const Caller& caller, const std::string& name, const std::string& reader, TransferOptions options);
    /// Registers `binding` with `options`, bound to `client`.
    Issued issue(server::TicketBinding binding, TransferOptions options, const std::string& client);
    /// The binding of the read grant `grant` this store issued, for
    /// `caller`: refused (naming `operation` and why) otherwise.
    server::TicketBinding granted(const Caller& caller, const protocol::TicketId& grant, const char* operation) const;
    /// The committed file of `name` this store hands to processes of its
    /// host: none when not `offering` (a missing name is still
    /// no_such_blob), for a Blob a fetch is bringing here and for an empty
    /// Blob.
    std::optional<Store::LocalFile> offered_file(const std::string& name, bool offering) const;
    /// image()'s work after the permission check.
    std::optional<Image> share_image(const std::string& name);

    Store& store_;
    server::ReservationTable& reservations_;
    server::TicketRegistry& tickets_;
    const StoreServiceOptions options_;
};

}  // namespace blobstreaming::service
