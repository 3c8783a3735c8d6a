#pragma once

#include <blobstreaming/blobstore/BlobInFlight.h>
#include <blobstreaming/blobstore/FlightTable.h>
#include <blobstreaming/blobstore/Store.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace blobstreaming {

/// Where a ReadThroughStore gets a Blob it lacks: the stores of farther
/// tiers (`blobstored --read-through`; the daemon's copier finds the
/// nearest holder and copies the Blob with a grant of its own). Defined
/// here, implemented above the store layer.
class Upstream {
public:
    virtual ~Upstream() = default;
    /// Copies `name`, which the store lacks, into the store as a new Blob
    /// (ReserveMode::create) and returns what it committed. Runs on a
    /// thread of the flight table, one per fill. Once the bytes have
    /// somewhere to go (a reservation), reports them to the store's flight
    /// table: FlightTable::begun(`flight`, progress), progress fed as the
    /// bytes land and finished or failed at the end, so that reads follow
    /// them. Throws Error: no_such_blob when no farther store holds it, the
    /// source's errors, the store's own (already_exists when another fill
    /// or a push committed it meanwhile: the store then serves that one).
    virtual BlobInfo fill(const std::string& name, FlightTable::Flight& flight) = 0;
};

/// Read-through over any Store, and the one place the fills into a store
/// are known (its FlightTable: one fill per name, whether read-through or
/// a copy to this store, BlobStore::fetch, which registers its flights
/// here too).
///
/// - stat() and list() show committed Blobs only: nothing of a fill is
///   visible before its commit.
/// - read() of a Blob being filled, also while an older version is
///   committed (a copy chain forwards the version it receives), returns a
///   streamed range (BlobRange::reader()) of the version being received,
///   whose reader follows the fill: bytes that landed at once, pending and
///   woken while the rest is on its way (BlobReader::read_or_wait), then
///   from the committed Blob once the fill commits; a failed fill ends the
///   read with the fill's error. A range of the version being received
///   names it with no commit time (this store has not committed it yet).
///   read_committed() reads the committed Blob (a pull's ticket issued for
///   the older version still gets it).
/// - With an upstream (read_through()), read() of a Blob the store lacks
///   begins its fill (or joins the one running) and follows it; a fill that
///   failed a few seconds ago is that read's answer (its error), not
///   another fill.
/// - local_file() has nothing to offer while a fill of the name runs (the
///   committed file, if any, is the version being replaced).
///
/// Everything else (kind, reservations, removal, usage) is the wrapped
/// store's, and so are its errors.
class ReadThroughStore final : public Store {
public:
    explicit ReadThroughStore(std::unique_ptr<Store> inner);
    /// stop()
    ~ReadThroughStore() override;

    /// Reads of missing Blobs fill them from `upstream` from now on (not
    /// owned; null: no read-through). The upstream must stay until stop().
    void read_through(Upstream* upstream) noexcept { upstream_.store(upstream); }
    bool reads_through() const noexcept { return upstream_.load() != nullptr; }

    /// The fills into this store: whoever fills it (a copy) registers here.
    FlightTable& flights() noexcept { return flights_; }

    /// What a read of `name` would serve now: the version being received
    /// (`in_flight`: a fill runs; its size and checksum, no commit time) or
    /// the committed one. With an upstream, a missing Blob's fill is begun
    /// (or joined) and waited for until its bytes have somewhere to go.
    /// Throws as read(): invalid_name, no_such_blob (without an upstream,
    /// or naming the stores asked), the fill's error.
    struct Holding {
        BlobInfo version;
        bool in_flight = false;
    };
    Holding holding(std::string_view name) const;
    /// With an upstream, a Blob the store lacks is filled (or the fill
    /// running joined) and waited for until committed: how a reader of its
    /// file (the same-host path, local_file()) reads through. Throws as
    /// holding(), and the fill's error. Nothing without an upstream, nor for
    /// a committed Blob.
    void fill_and_wait(std::string_view name) const;
    /// A fill of `name` is receiving it now.
    bool filling(std::string_view name) const;

    /// No new fill from now on; waits for those running on threads of the
    /// flight table. Before the upstream goes.
    void stop() noexcept { flights_.stop(); }

    std::string_view kind() const noexcept override { return inner_->kind(); }
    BlobInfo stat(std::string_view name) const override { return inner_->stat(name); }
    std::optional<BlobInfo> find(std::string_view name) const override { return inner_->find(name); }
    std::vector<BlobInfo> list() const override { return inner_->list(); }
    BlobRange read(std::string_view name, std::uint64_t start, std::uint64_t end) const override;
    /// The wrapped store's read(): never a fill.
    BlobRange read_committed(std::string_view name, std::uint64_t start, std::uint64_t end) const override
    {
        return inner_->read(name, start, end);
    }
    std::unique_ptr<Reservation> reserve(std::string_view name, std::uint64_t size,
                                         ReserveMode mode = ReserveMode::create,
                                         ChecksumAlgorithm checksum = kDefaultChecksum) override
    {
        return inner_->reserve(name, size, mode, checksum);
    }
    BlobInfo remove(std::string_view name) override { return inner_->remove(name); }
    BlobInfo evict(std::string_view name) override { return inner_->evict(name); }
    StoreUsage usage() const override { return inner_->usage(); }
    std::vector<Kept> take_kept() override { return inner_->take_kept(); }
    std::optional<LocalFile> local_file(std::string_view name) const override;
    bool keeps_files() const noexcept override { return inner_->keeps_files(); }
    bool adopts_images() const noexcept override { return inner_->adopts_images(); }
    /// Also true with an upstream: a read of a missing Blob asks the
    /// stores of farther tiers (the data plane opens it off its reactor).
    bool read_waits() const noexcept override { return inner_->read_waits() || reads_through(); }

private:
    /// The fill of `name` (missing here: `missing` says so), begun through
    /// the upstream or joined, once its bytes have somewhere to go; null
    /// when it ended meanwhile (`held`: what it committed). Without an
    /// upstream only a fill that began meanwhile; `missing` otherwise.
    std::shared_ptr<BlobInFlight> fill_missing(const std::string& name, const Error& missing,
                                               std::optional<BlobInfo>& held) const;
    /// A range [start, end) of the version `flight` receives, following it.
    BlobRange follow(const std::shared_ptr<BlobInFlight>& flight, std::uint64_t start, std::uint64_t end) const;

    std::unique_ptr<Store> inner_;
    /// Joined and run by const reads (read-through) too.
    mutable FlightTable flights_;
    std::atomic<Upstream*> upstream_{nullptr};
};

}  // namespace blobstreaming
