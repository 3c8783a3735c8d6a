#pragma once
/// A Blob being received into a reservation of this store (a read-through
/// fetch from a farther tier) that pulls follow while it arrives: bytes that
/// have landed are read back from the reservation and sent on at once, the
/// rest as it lands; once the Blob is committed a follower goes on from the
/// committed Blob; a failure ends every follower with its reason. Nothing
/// of it is visible in the store before the commit: followers read it only
/// through this object (docs/STORES.md, "Tiers").
///
/// Thread-safe: one filler thread (the fetch) and any number of followers
/// (the data plane's reactor thread).

#include <blobstreaming/blobstore/Reservation.h>
#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/Error.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace blobstreaming {

class BlobInFlight {
public:
    /// `expected`: the version being received (size and checksum the bytes
    /// must have; the source's commit time until this store commits).
    explicit BlobInFlight(BlobInfo expected) : expected_(std::move(expected)) {}
    BlobInFlight(const BlobInFlight&) = delete;
    BlobInFlight& operator=(const BlobInFlight&) = delete;

    const BlobInfo& expected() const noexcept { return expected_; }

    // The filler, in this order: attach(), landed()..., detach(), then
    // finish() or fail() (fail() may come at any point).

    /// Followers may read back from `reservation` from now on.
    void attach(const Reservation* reservation);
    /// The first `total` bytes are advanced over: wakes the followers.
    void landed(std::uint64_t total);
    /// No more read-backs: waits for those running. Before the reservation
    /// commits, aborts or goes.
    void detach();
    /// Committed as `info`: followers go on from the store.
    void finish(const BlobInfo& info);
    /// Failed: followers end with `code` and `reason`.
    void fail(Errc code, std::string reason);

    // Followers.

    enum class State {
        bytes,      ///< `bytes` copied
        wait,       ///< nothing yet: `wake` runs (once, any thread) when that may have changed
        committed,  ///< read the committed Blob from the store (committed())
        failed,     ///< error() says why
    };
    struct Read {
        State state = State::wait;
        std::size_t bytes = 0;
    };
    /// Up to `max` bytes at `offset` into `out`.
    Read read(std::uint64_t offset, std::uint8_t* out, std::size_t max, std::function<void()> wake);

    /// Neither committed nor failed yet.
    bool receiving() const;
    /// Failed (error() says why).
    bool failed() const;
    /// The committed version (State::committed).
    BlobInfo committed() const;
    /// Why it failed (State::failed).
    Error error() const;
    /// Bytes landed so far.
    std::uint64_t landed() const;

private:
    enum class Phase { receiving, committed, failed };
    /// Runs and forgets the followers' wake-ups (outside the lock).
    void wake_all(std::unique_lock<std::mutex>& lock);

    const BlobInfo expected_;
    mutable std::mutex mutex_;
    Phase phase_ = Phase::receiving;
    std::uint64_t landed_ = 0;
    /// False once the reservation cannot be read back: followers wait for
    /// the commit.
    bool readable_ = true;
    BlobInfo committed_;
    Errc code_ = Errc::ok;
    std::string reason_;
    std::vector<std::function<void()>> waiting_;
    /// Held shared by read-backs, exclusively by detach(): the reservation
    /// never commits or goes under a read-back.
    mutable std::shared_mutex access_;
    const Reservation* reservation_ = nullptr;  ///< guarded by access_
};

}  // namespace blobstreaming
