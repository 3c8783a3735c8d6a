#pragma once

#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/HashPipeline.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

namespace blobstreaming {

/// Writable space for one new Blob of a fixed size, invisible until commit.
///
/// Bytes are appended in order. The zero-copy way is `window()` (a region of
/// the store's own memory or mapped file to receive into, e.g. with recv())
/// followed by `advance(n)`; `write()` copies from a caller's buffer. The
/// checksum (the reservation's algorithm) is computed as bytes are advanced
/// over, never in a second pass: CRC32C inline, while the bytes are hot in
/// cache; SHA-256 (~0.7 ms per MiB) on a helper thread of the reservation
/// (HashPipeline), so that the thread filling it, a daemon's one reactor
/// thread, goes on receiving. That thread waits for the helper only when it
/// falls behind: by kMaxHashLag bytes, by a whole buffer (FileStore), and at
/// commit() for the last bytes.
///
/// Exactly one of commit() or abort() ends a reservation; the destructor
/// aborts one that is still open. A reservation may outlive its Store object.
/// One reservation is used by one thread at a time.
///
/// A reservation nobody fills holds no operating-system resource beyond its
/// space: suspend() gives back what filling needs (a FileStore reservation's
/// descriptor, mapping and buffer), the next window() takes it again.
class Reservation {
public:
    struct Window {
        std::uint8_t* data = nullptr;
        std::size_t size = 0;
    };

    /// SHA-256 on the helper lags the bytes advanced over by at most this
    /// much (~6 ms of hashing at 1.5 GB/s): what commit() waits for at most.
    static constexpr std::uint64_t kMaxHashLag = std::uint64_t{8} << 20;

    virtual ~Reservation() = default;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;

    const std::string& name() const noexcept { return name_; }
    std::uint64_t size() const noexcept { return size_; }
    std::uint64_t written() const noexcept { return written_; }
    std::uint64_t remaining() const noexcept { return size_ - written_; }
    /// Open-ended (a push whose length is known only at its end): size()
    /// is what the store holds for it now, not the Blob's size.
    bool open_ended() const noexcept { return max_size_ != 0; }
    /// Open-ended: the most it may grow to.
    std::uint64_t max_size() const noexcept { return max_size_; }
    bool is_open() const noexcept { return state_ == State::open; }
    /// The algorithm the Blob's checksum is computed and committed with.
    ChecksumAlgorithm checksum_algorithm() const noexcept { return hash_.algorithm(); }
    /// SHA-256 being hashed on the helper thread: from the first window()
    /// until suspend(), commit() or abort(). Never for CRC32C, nor when no
    /// thread could be started (then hashing is inline).
    bool hashes_in_background() const noexcept { return hash_.background(); }
    /// commit() may wait for more than memory: for the disk (a FileStore's
    /// fdatasync, rename and directory fsync) or for the helper's last bytes
    /// of SHA-256. A caller that serves others meanwhile (the daemon's
    /// reactor thread) runs such a commit on another thread.
    bool commit_waits() const noexcept { return hashes_in_background() || commit_syncs(); }

    /// Where the next bytes go: at most `max` bytes (fewer at the end of the
    /// reservation or of an internal mapping window). size 0 only when the
    /// reservation is full or closed, or on error (`ec` set, error_message()
    /// says why). The region may be the store's memory or mapped file, or a
    /// buffer that advance() writes out (a file system that cannot allocate
    /// space in advance): bytes count only once advanced over. For SHA-256
    /// the first call starts the helper, and a call may wait for it (above).
    Window window(std::size_t max, std::error_code& ec);

    /// The next window() would wait for another host: for the store's
    /// writes still in flight (a RadosStore whose two buffers are both being
    /// written to the cluster). A caller that serves others meanwhile (the
    /// daemon's reactor thread) calls wait_window() on another thread first.
    /// Never for a store whose writes are local.
    bool window_waits() const noexcept { return is_open() && do_window_waits(); }
    /// Blocks until window() would not wait for another host (a failed
    /// write is then what window() reports). Not concurrently with any other
    /// call on the reservation.
    void wait_window() noexcept
    {
        if (is_open()) do_wait_window();
    }

    /// suspend() or abort() may wait for another host: a RadosStore's
    /// writes in flight, and an abort's index update. A caller that serves
    /// others meanwhile (the daemon's reactor thread) ends such a
    /// reservation on another thread.
    bool ending_waits() const noexcept { return is_open() && do_ending_waits(); }

    /// Declares that the first `n` bytes of the last window now hold data.
    /// Errc::invalid_range if n exceeds that window. A store that writes
    /// the window out here reports its failure (Errc::out_of_space,
    /// Errc::io_error; error_message() says why): the `n` bytes are then not
    /// counted, and the caller should abort.
    std::error_code advance(std::size_t n);

    /// Copies `size` bytes in (through window()/advance()).
    std::error_code write(const void* data, std::size_t size);

    /// Takes `bytes` (size() bytes that never change, kept alive by their
    /// owner) as the whole Blob, without copying them: a store that keeps
    /// Blobs in memory holds them as they are (a sealed memory file mapped
    /// read-only, shared with other stores of the host). The checksum is
    /// computed over them here, as advance() would, unless `verified` is
    /// given: the checksum these very bytes were verified against by
    /// whoever made them unchangeable (the source store seals its image
    /// first, then verifies it), which then is the reservation's. commit()
    /// follows as usual. Only before any byte was written. False, nothing
    /// changed, when the store holds only bytes it wrote itself: fill it
    /// with write().
    bool adopt(std::shared_ptr<const std::uint8_t> bytes, const Checksum* verified = nullptr);

    /// The message of the last error window(), advance() or write() returned:
    /// what failed, on which file or store, and why; "" before any.
    const std::string& error_message() const noexcept { return error_message_; }

    /// Keeps the reservation across a restart of its store's process, for
    /// `owner` (the client that reserved it, the only one that may resume
    /// it): a store that can (FileStore, RadosStore) journals the ranges
    /// received with their CRC32Cs as the bytes arrive in order (never a
    /// reservation filled in parts or of unknown length), and its next open
    /// hands the reservation back (Store::take_kept()). A no-op for other
    /// stores.
    /// Call before any byte is written.
    void keep_for_resume(std::string owner) { owner_ = std::move(owner); }
    /// keep_for_resume()'s owner; "" when not kept.
    const std::string& resume_owner() const noexcept { return owner_; }

    /// Gives back the resources used only while filling (see above), after
    /// the helper has hashed every byte advanced over and ended. No-op when
    /// closed. The bytes written so far and the checksum state stay.
    void suspend() noexcept;

    /// Makes the Blob visible, durably and atomically, and returns what the
    /// store now holds. Throws Error: Errc::incomplete when not all bytes
    /// were written, Errc::digest_mismatch when `expected` is given and
    /// differs, also in its algorithm (the reservation is then aborted),
    /// Errc::reservation_closed
    /// after commit() or abort(), Errc::already_exists when the name was
    /// committed meanwhile and the reservation does not replace.
    BlobInfo commit(const Checksum* expected = nullptr);

    /// Runs `hook` with what commit() returns, right after a successful
    /// commit and on its thread, whatever path committed (the data plane,
    /// the commit pool, BlobStore::commit): how ObservedStore publishes
    /// `committed` events. Set before commit(); must not throw, nor block.
    void on_commit(std::function<void(const BlobInfo&)> hook) { on_commit_ = std::move(hook); }

    /// Discards the bytes and releases the space, the helper stopped first.
    /// No-op when already closed.
    void abort() noexcept;

    // -- open-ended: a push whose length is known only at its end --
    //
    // Reserved with a first step (kGrowStep or less), the reservation grows
    // as bytes arrive: window() asks the store for the next step whenever
    // the bytes held are all written. The store accounts only what it holds
    // (at most kGrowStep beyond the bytes received) and refuses a step that
    // does not fit (Errc::out_of_space naming its capacity), as reserve()
    // would; never beyond max_size() (Errc::out_of_space naming it).
    // end_stream() gives back the space beyond the bytes received, and then
    // commit() makes the Blob of written() bytes visible.

    /// What the store is asked for at a time.
    static constexpr std::uint64_t kGrowStep = std::uint64_t{16} << 20;

    /// Makes a reservation that nothing was written to open-ended, growing
    /// up to `max` (> 0) bytes. False, nothing changed, with `why` set, when
    /// its store cannot grow a reservation (a RadosStore) or something was
    /// written already.
    bool make_open_ended(std::uint64_t max, std::string& why);
    /// The end of an open-ended reservation's bytes: size() becomes
    /// written(), the store gets back what it held beyond, and the
    /// reservation is no longer open-ended (commit() may follow).
    /// Errc::invalid_argument when not open-ended; Errc::reservation_closed.
    std::error_code end_stream();

    // -- filling in parts: several connections, each a range of the Blob --
    //
    // A reservation is filled either in order (window()/advance() above) or
    // in parts (window_at()/advance_at()), never both. In parts, the caller
    // keeps the ledger: which ranges hold bytes and their CRC32Cs (the
    // daemon's ReservationTable), and commits with the checksum combined
    // from them (commit_assembled()). Only a CRC32C reservation of a store
    // that writes at any offset (takes_parts()) can be filled in parts.

    /// Whether window_at() may be used: a CRC32C reservation of a store that
    /// takes bytes at any offset, not yet filled in order.
    bool takes_parts() const noexcept
    {
        return state_ == State::open && hash_.algorithm() == ChecksumAlgorithm::crc32c && written_ == 0 &&
               !open_ended() && writes_anywhere();
    }
    /// Filled in parts since the first window_at().
    bool parted() const noexcept { return parted_; }
    /// As window(), for bytes starting at `offset`: at most `max` bytes, and
    /// never past the end of the reservation. Errc::invalid_argument when
    /// !takes_parts() and not parted(); Errc::invalid_range past the end.
    Window window_at(std::uint64_t offset, std::size_t max, std::error_code& ec);
    /// The first `n` bytes of the last window_at() now hold data. Adds
    /// nothing to any checksum: the caller hashes the bytes (the window's)
    /// for its ledger.
    std::error_code advance_at(std::size_t n);
    /// commit() of a reservation filled in parts: `assembled` is the checksum
    /// the caller combined from its ledger, whose ranges cover the whole Blob;
    /// `expected` as in commit().
    BlobInfo commit_assembled(const Checksum& assembled, const Checksum* expected);

    /// Copies `n` bytes at `offset` of the Blob, all of them among the bytes
    /// already advanced over, into `out`: how a pull follows a Blob still
    /// being received (BlobInFlight). The one call that may run on another
    /// thread than the filler's, concurrently with window() and advance(),
    /// when the caller knows by its own synchronisation that the bytes were
    /// advanced over, and never concurrently with commit(), abort() or
    /// suspend(). A store that cannot read its reservation back answers
    /// std::errc::operation_not_supported (the follower then waits for the
    /// commit); a failed read its error.
    std::error_code read_back(std::uint64_t offset, std::uint8_t* out, std::size_t n) const
    {
        return do_read_back(offset, out, n);
    }

protected:
    /// A derived class's destructor calls abort(): the helper then lets go
    /// of the bytes before the derived class's memory goes.
    Reservation(std::string name, std::uint64_t size, ChecksumAlgorithm checksum)
        : name_(std::move(name)), size_(size), hash_(ChecksumState(checksum))
    {}

    /// Blocks until the bytes at offsets before `end` are hashed: a window
    /// that held them may be handed out again. At once when hashing inline.
    void wait_hashed(std::uint64_t end) { hash_.wait_hashed(end > hash_base_ ? end - hash_base_ : 0); }

    /// A reservation a store reopened after a restart (keep_for_resume()):
    /// its first `written` bytes are there, `state` is their checksum state
    /// (the store computed it by rereading them). Before any other call.
    void restore(std::uint64_t written, ChecksumState state, std::string owner)
    {
        written_ = written;
        hash_base_ = written;
        hash_.reset(std::move(state));
        owner_ = std::move(owner);
    }

    /// A writable region for bytes starting at `offset` (< size()), at most
    /// `max` bytes. On failure sets `ec` through fail(). While
    /// hashes_in_background(), the bytes advanced over stay unchanged until
    /// wait_hashed() (or suspend(), commit(), abort()) says they are hashed.
    virtual Window do_window(std::uint64_t offset, std::size_t max, std::error_code& ec) = 0;
    /// The `n` bytes at `data` (within the last window) are the Blob's bytes
    /// at `offset`: a store whose window is not its storage writes them out.
    virtual std::error_code do_advance(const std::uint8_t* data, std::size_t n, std::uint64_t offset);
    /// See suspend(); the helper has ended.
    virtual void do_suspend() noexcept {}
    /// See adopt(): true when the store now holds `bytes` as the Blob's.
    virtual bool do_adopt(const std::shared_ptr<const std::uint8_t>&) { return false; }
    /// Records `message` for error_message() and returns `ec`.
    std::error_code fail(std::error_code ec, std::string message);
    /// Publishes the complete Blob with its checksum (the helper has ended).
    virtual BlobInfo do_commit(const Checksum& checksum) = 0;
    /// See window_waits() and wait_window(); by default never.
    virtual bool do_window_waits() const noexcept { return false; }
    virtual void do_wait_window() noexcept {}
    /// See ending_waits(); by default never.
    virtual bool do_ending_waits() const noexcept { return false; }
    /// do_commit() waits for the disk (commit_waits()).
    virtual bool commit_syncs() const noexcept { return false; }
    virtual void do_abort() noexcept = 0;
    /// Whether do_window() and do_advance() take any offset, in any order
    /// (window_at()); by default not.
    virtual bool writes_anywhere() const noexcept { return false; }
    /// Whether do_grow() works (see make_open_ended()); by default not.
    virtual bool can_grow() const noexcept { return false; }
    /// make_open_ended(): nothing written yet, `max` >= size(). False (with
    /// `why`) when the store cannot take it after all.
    virtual bool do_open_ended(std::uint64_t /*max*/, std::string& /*why*/) { return true; }
    /// Holds up to `at_most` bytes (> size()) and at least one more than
    /// size(): the new size, or 0 with `ec` set through fail()
    /// (Errc::out_of_space naming the store's limit).
    virtual std::uint64_t do_grow(std::uint64_t at_most, std::error_code& ec);
    /// end_stream(): gives back what the store holds beyond `size` (==
    /// written() <= size()).
    virtual void do_shrink(std::uint64_t /*size*/) noexcept {}
    /// See read_back(); by default not supported.
    virtual std::error_code do_read_back(std::uint64_t offset, std::uint8_t* out, std::size_t n) const;

private:
    enum class State { open, committed, aborted };

    /// window() of an open-ended reservation that is full: the next step.
    bool grow(std::error_code& ec);
    /// commit()'s end: compares with `expected`, publishes, runs the hook.
    BlobInfo finish_commit(const Checksum& checksum, const Checksum* expected);

    std::string name_;
    std::uint64_t size_;
    std::uint64_t max_size_ = 0;  ///< open-ended: the most it may grow to; 0: fixed size
    std::uint64_t written_ = 0;
    Window last_{};
    std::uint64_t last_at_ = 0;  ///< parted: the offset of last_
    bool parted_ = false;
    std::optional<Checksum> adopted_;  ///< adopt()'s `verified`
    /// Positions count from 0 at construction (or restore()): the Blob's
    /// offsets less hash_base_.
    HashPipeline hash_;
    /// restore(): the Blob offset of the pipeline's position 0.
    std::uint64_t hash_base_ = 0;
    std::string owner_;  ///< keep_for_resume()
    std::string error_message_;
    std::function<void(const BlobInfo&)> on_commit_;
    State state_ = State::open;
};

}  // namespace blobstreaming
