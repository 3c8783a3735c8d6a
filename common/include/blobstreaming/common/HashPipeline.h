#pragma once
/// The checksum of a transfer's bytes, SHA-256 optionally on a helper thread.
///
/// CRC32C (the default) runs at ~28 GB/s per core: it is computed inline,
/// while the bytes are hot in cache. SHA-256 costs about as much CPU as
/// moving the bytes through a socket (~1.5 GB/s per core with SHA-NI): when
/// the bytes stay where they are until they are hashed (the application's
/// buffer, a mapped file, a store's Blob, a buffer reused only after
/// wait_hashed()), a helper thread hashes them behind the data connection,
/// so that receiving or sending and hashing run on two cores. Otherwise (a
/// bounce buffer that is reused at once) update() hashes at once.
///
/// Positions count the bytes handed to update() since construction or the
/// last reset(); a reservation that starts with its pipeline has them equal
/// to its Blob offsets.
///
/// One thread at a time calls the members (the owner); the helper is internal.

#include <blobstreaming/common/Checksum.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace blobstreaming {

class HashPipeline {
public:
    /// SHA-256 transfers from this many bytes on are worth a helper thread
    /// (a client's choice; a store starts one for every SHA-256 push).
    static constexpr std::uint64_t kBackgroundFrom = std::uint64_t{4} << 20;

    HashPipeline() = default;
    explicit HashPipeline(ChecksumState initial) : state_(std::move(initial)) {}
    ~HashPipeline() { stop(); }
    HashPipeline(const HashPipeline&) = delete;
    HashPipeline& operator=(const HashPipeline&) = delete;

    /// Starts over from `initial` (its algorithm, and the bytes already
    /// hashed: a resume), hashing inline, at position 0. Stops a helper
    /// still running.
    void reset(ChecksumState initial);
    ChecksumAlgorithm algorithm() const noexcept { return state_.algorithm(); }
    /// For SHA-256: from now on update() only queues its bytes and a helper
    /// thread hashes them; they must stay unchanged until wait_hashed() says
    /// they are hashed, or finish(), settle() or stop() returns. When no
    /// thread can be started, and for CRC32C (cheaper than handing bytes to a
    /// thread), hashing stays inline.
    void run_in_background() noexcept;
    bool background() const noexcept { return worker_.joinable(); }
    /// Adds the next bytes of the stream.
    void update(const std::uint8_t* data, std::size_t size);
    /// Bytes handed to update() since construction or reset().
    std::uint64_t submitted() const noexcept { return submitted_; }
    /// Blocks (on a condition variable) until the first `position` bytes
    /// handed to update() are hashed, or the helper was stopped: their
    /// memory may then be reused. Returns at once when hashing inline.
    void wait_hashed(std::uint64_t position);
    /// The thread that hashed the latest bytes (the caller's when inline);
    /// a default id before any.
    std::thread::id hashed_on() const;
    /// Hashes every queued byte and ends the helper, keeping the state:
    /// update() continues it inline, or on a new helper after
    /// run_in_background(). For an owner that pauses (gives back its
    /// buffers, holds no thread while idle).
    void settle() noexcept;
    /// Waits for every queued byte; the checksum of the whole stream.
    Checksum finish();
    /// Abandons the checksum; when it returns, the helper no longer reads any
    /// byte handed to update(). Safe to call at any time, also twice.
    void stop() noexcept;

private:
    using Range = std::pair<const std::uint8_t*, std::size_t>;
    /// Ends the helper: after the queue is hashed (`drain`), or at once.
    void end_worker(bool drain) noexcept;
    void work();

    ChecksumState state_;
    std::uint64_t submitted_ = 0;
    std::thread worker_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;    ///< the helper: ranges queued, or an end
    std::condition_variable hashed_;  ///< wait_hashed(): bytes hashed
    std::deque<Range> queue_;
    std::uint64_t hashed_count_ = 0;  ///< position up to which the bytes are hashed
    std::thread::id hashed_on_;
    bool closing_ = false;  ///< no more ranges: drain the queue and end
    bool abandon_ = false;  ///< end now, leave the queue
};

}  // namespace blobstreaming
