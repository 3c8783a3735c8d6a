#pragma once
/// SHA-256 of a transfer's bytes, optionally on a helper thread.
///
/// Hashing a Blob costs about as much CPU as moving it through a socket
/// (SHA-256 runs at ~1.8 GB/s per core with SHA-NI). When the bytes stay
/// where they are until the transfer ends (the application's buffer, a
/// mapped file), a helper thread hashes them behind the data connection, so
/// that receiving or sending and hashing run on two cores. Otherwise (a bounce
/// buffer that is reused) update() hashes at once, as before.

#include <blobstreaming/common/Sha256.h>

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
    /// Transfers from this many bytes on are worth a helper thread.
    static constexpr std::uint64_t kBackgroundFrom = std::uint64_t{4} << 20;

    HashPipeline() = default;
    ~HashPipeline() { stop(); }
    HashPipeline(const HashPipeline&) = delete;
    HashPipeline& operator=(const HashPipeline&) = delete;

    /// Starts over from `initial` (bytes already hashed: a resume), hashing
    /// inline. Stops a helper still running.
    void reset(Sha256 initial);
    /// From now on update() only queues its bytes and a helper thread hashes
    /// them; they must stay unchanged until finish() or stop() returns. When
    /// no thread can be started, hashing stays inline.
    void run_in_background() noexcept;
    bool background() const noexcept { return worker_.joinable(); }
    /// Adds the next bytes of the stream.
    void update(const std::uint8_t* data, std::size_t size);
    /// Waits for every queued byte; the digest of the whole stream.
    Digest finish();
    /// Abandons the digest; when it returns, the helper no longer reads any
    /// byte handed to update(). Safe to call at any time, also twice.
    void stop() noexcept;

private:
    using Range = std::pair<const std::uint8_t*, std::size_t>;
    void work();

    Sha256 sha_;
    std::thread worker_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Range> queue_;
    bool closing_ = false;  ///< no more ranges: drain the queue and end
    bool abandon_ = false;  ///< end now, leave the queue
};

}  // namespace blobstreaming::client
