#pragma once
/// Counters of the data plane for monitoring (`blobstored --metrics-address`,
/// docs/OPERATIONS.md): updated on the reactor thread with relaxed atomics
/// (an increment each), read by the metrics endpoint's thread at any time.
/// A scrape may see one transfer's counter before its bytes: monitoring
/// tolerates that, and nothing on the data path waits for a reader.

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace blobstreaming::server {

class TransferMetrics {
public:
    enum class Direction { push = 0, pull = 1 };
    /// Upper bounds (seconds) of the duration histogram's buckets; +Inf last.
    static constexpr std::array<double, 11> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60};

    /// One transfer ended: succeeded or not, its bytes, how long it took.
    void transfer_ended(Direction d, bool succeeded, std::uint64_t bytes, double seconds) noexcept;
    void connection_opened() noexcept { open_connections_.fetch_add(1, std::memory_order_relaxed); }
    void connection_closed() noexcept { open_connections_.fetch_sub(1, std::memory_order_relaxed); }
    void request_refused() noexcept { refused_.fetch_add(1, std::memory_order_relaxed); }
    void tls_handshake_failed() noexcept { tls_failures_.fetch_add(1, std::memory_order_relaxed); }

    /// Prometheus text exposition (version 0.0.4) of every counter, with
    /// HELP and TYPE lines; `active_transfers` from the caller.
    std::string render(std::uint32_t active_transfers) const;

private:
    static constexpr std::size_t kDirections = 2;
    struct PerDirection {
        std::atomic<std::uint64_t> succeeded{0};
        std::atomic<std::uint64_t> failed{0};
        std::atomic<std::uint64_t> bytes{0};
        std::array<std::atomic<std::uint64_t>, kBuckets.size() + 1> buckets{};  ///< not cumulative; +Inf last
        std::atomic<std::uint64_t> microseconds{0};                             ///< sum of durations
    };
    std::array<PerDirection, kDirections> by_direction_{};
    std::atomic<std::int64_t> open_connections_{0};
    std::atomic<std::uint64_t> refused_{0};
    std::atomic<std::uint64_t> tls_failures_{0};
};

}  // namespace blobstreaming::server
