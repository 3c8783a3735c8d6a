#pragma once
/// The checksum of a transfer's bytes, SHA-256 optionally on a helper thread.
///
/// CRC32C (the default) runs at ~28 GB/s per core: it is computed inline,
/// while the bytes are hot in cache. SHA-256 costs about as much CPU as
/// moving the bytes through a socket (~1.5 GB/s per core with SHA-NI): when
/// the bytes stay where they are until the transfer ends (the application's
/// buffer, a mapped file), a helper thread hashes them behind the data
/// connection, so that receiving or sending and hashing run on two cores.
/// Otherwise (a bounce buffer that is reused) update() hashes at once.

#include <blobstreaming/common/Checksum.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace blobstreaming::client {

class HashPipeline {
public:
    /// SHA-256 transfers from this many bytes on are worth a helper thread.
    static constexpr std::uint64_t kBackgroundFrom = std::uint64_t{4} << 20;

    HashPipeline() = default;
    ~HashPipeline() { stop(); }
    HashPipeline(const HashPipeline&) = delete;
    HashPipeline& operator=(const HashPipeline&) = delete;

    /// Starts over from `initial` (its algorithm, and the bytes already
    /// hashed: a resume), hashing inline. Stops a helper still running.
    void reset(ChecksumState initial);
    ChecksumAlgorithm algorithm() const noexcept { return state_.algorithm(); }
    /// For SHA-256: from now on update() only queues its bytes and a helper
    /// thread hashes them; they must stay unchanged until finish() or stop()
    /// returns. When no thread can be started, and for CRC32C (cheaper than
    /// handing bytes to a thread), hashing stays inline.
    void run_in_background() noexcept;
    bool background() const noexcept { return worker_.joinable(); }
    /// Adds the next bytes of the stream.
    void update(const std::uint8_t* data, std::size_t size);
    /// Waits for every queued byte; the checksum of the whole stream.
    Checksum finish();
    /// Abandons the checksum; when it returns, the helper no longer reads any
    /// byte handed to update(). Safe to call at any time, also twice.
    void stop() noexcept;

private:
    using Range = std::pair<const std::uint8_t*, std::size_t>;
    void work();

    ChecksumState state_;
    std::thread worker_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Range> queue_;
    bool closing_ = false;  ///< no more ranges: drain the queue and end
    bool abandon_ = false;  ///< end now, leave the queue
};

}  // namespace blobstreaming::client
