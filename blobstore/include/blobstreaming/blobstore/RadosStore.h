#pragma once

#include <blobstreaming/blobstore/Store.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace blobstreaming {

/// Blobs in a pool of a Ceph cluster (RADOS), the central archive tier;
/// several daemons on several hosts may serve one pool at once.
///
/// Same semantics and errors as FileStore (docs/STORES.md, "The RADOS
/// tier"): a push writes data objects of its own (never the Blob's name), in
/// chunks of `chunk_size` bytes from two buffers that RADOS writes while the
/// next fills; the commit is one atomic compound write on the index object
/// that compares before it changes, so that a create fails with
/// Errc::already_exists when any daemon committed the name meanwhile and a
/// replace swaps exactly the version it read. Nothing partial is ever
/// listed or served, whoever dies when. A replaced or removed version's
/// objects are deleted after `grace` (readers may still read them); so are
/// those of a reservation whose owner stopped vouching for it for `grace`
/// (its daemon died). A thread of the store does that cleanup and keeps its
/// own open reservations alive; it runs once at open and then every
/// grace / 4 (at most 30 s).
///
/// A push kept for a resume (Reservation::keep_for_resume()) journals its
/// ranges beside its data objects; a store opened on the same host after its
/// process died adopts it (take_kept()).
///
/// Errors name the store ("rados:POOL") and the reason; a cluster that does
/// not answer fails an operation after `timeout` (Errc::io_error; the
/// connect: Errc::unreachable), never hangs.
class RadosStore final : public Store {
public:
    struct Options {
        std::string conf_file;       ///< ceph.conf; "": librados' search ($CEPH_CONF, /etc/ceph/ceph.conf)
        std::string user = "admin";  ///< the client id: client.USER, its key from the configured keyring
        std::uint64_t capacity = 0;  ///< 0: the pool's quota, else what `ceph df` says it can still take
        std::chrono::milliseconds grace{std::chrono::minutes(10)};
        std::chrono::milliseconds timeout{std::chrono::seconds(10)};  ///< connect, monitor and OSD operations
        std::uint32_t chunk_size = std::uint32_t{4} << 20;            ///< bytes per data object of new Blobs
    };

    /// Connects and opens the pool (never creates it). Error: invalid_argument
    /// (no such pool, saying how to create it; an unreadable configuration),
    /// unreachable, refused (credentials), io_error.
    RadosStore(const std::string& pool, Options options);
    /// Waits for the cleanup thread and for operations still in flight.
    ~RadosStore() override;

    std::string_view kind() const noexcept override { return "rados"; }
    /// read() looks the Blob up in the pool's index object.
    bool read_waits() const noexcept override { return true; }
    /// Each asks the index object: what any daemon of the pool committed.
    BlobInfo stat(std::string_view name) const override;
    std::optional<BlobInfo> find(std::string_view name) const override;
    std::vector<BlobInfo> list() const override;
    /// A streamed view (BlobRange::reader()) of the version the index names
    /// now; it reads RADOS a chunk ahead of its caller.
    BlobRange read(std::string_view name, std::uint64_t start, std::uint64_t end) const override;
    /// Records the reservation in the index (Errc::already_exists when the
    /// name is committed and `mode` is create, or reserved by this store).
    std::unique_ptr<Reservation> reserve(std::string_view name, std::uint64_t size,
                                         ReserveMode mode = ReserveMode::create,
                                         ChecksumAlgorithm checksum = kDefaultChecksum) override;
    /// Moves the Blob's objects to the trash (deleted after `grace`).
    BlobInfo remove(std::string_view name) override;
    /// From the last refresh (open, then each cleanup round; this store's
    /// own commits and removals count at once): never waits for the cluster.
    StoreUsage usage() const override;
    /// The pushes kept for a resume (Reservation::keep_for_resume()) by a
    /// store instance of this host whose process is gone, adopted at open:
    /// each reread up to the first journaled range that no longer matches
    /// its data object (docs/STORES.md, "The RADOS tier").
    std::vector<Kept> take_kept() override;

    /// "rados:POOL".
    const std::string& name() const noexcept;
    /// This store object's identity in the records of its reservations
    /// ("HOST:PID:RANDOM").
    const std::string& instance() const noexcept;

    /// What one cleanup round did.
    struct Cleanup {
        std::size_t abandoned = 0;  ///< reservations of others not vouched for within `grace`, moved to the trash
        std::size_t purged = 0;     ///< trash entries whose objects were deleted
        std::size_t objects = 0;    ///< data objects deleted
    };
    /// Runs a cleanup round now, on the calling thread (the store's thread
    /// runs them anyway): keeps this store's reservations alive, moves
    /// abandoned ones to the trash, deletes what is due there. Bounded work
    /// per round. Throws Error(io_error) when the index cannot be read.
    Cleanup collect();

    struct State;

private:
    std::shared_ptr<State> state_;
    std::mutex kept_mutex_;
    std::vector<Kept> kept_;  ///< until take_kept(); destroyed (aborted) before state_ goes
};

}  // namespace blobstreaming
