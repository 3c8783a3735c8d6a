/// TransferMetrics (TransferMetrics.h): the counters and their exposition.
#include "TransferMetrics.h"

#include <fmt/format.h>

namespace blobstreaming::server {
namespace {

constexpr std::memory_order relaxed = std::memory_order_relaxed;
constexpr const char* kDirectionNames[] = {"push", "pull"};

void header(std::string& out, const char* name, const char* type, const char* help)
{
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

void TransferMetrics::transfer_ended(Direction d, bool succeeded, std::uint64_t bytes, double seconds) noexcept
{
    PerDirection& m = by_direction_[static_cast<std::size_t>(d)];
    (succeeded ? m.succeeded : m.failed).fetch_add(1, relaxed);
    m.bytes.fetch_add(bytes, relaxed);
    std::size_t bucket = 0;
    while (bucket < kBuckets.size() && seconds > kBuckets[bucket]) ++bucket;
    m.buckets[bucket].fetch_add(1, relaxed);
    m.microseconds.fetch_add(static_cast<std::uint64_t>(seconds * 1e6), relaxed);
}

std::string TransferMetrics::render(std::uint32_t active_transfers) const
{
    std::string out;
    header(out, "blobstreaming_transfers_total", "counter", "Data-plane transfers ended, by direction and outcome.");
    for (std::size_t d = 0; d < kDirections; ++d) {
        out += fmt::format("blobstreaming_transfers_total{{direction=\"{}\",outcome=\"ok\"}} {}\n", kDirectionNames[d],
                           by_direction_[d].succeeded.load(relaxed));
        out += fmt::format("blobstreaming_transfers_total{{direction=\"{}\",outcome=\"failed\"}} {}\n",
                           kDirectionNames[d], by_direction_[d].failed.load(relaxed));
    }
    header(out, "blobstreaming_transfer_bytes_total", "counter",
           "Bytes moved by ended transfers (received for a push, sent for a pull).");
    for (std::size_t d = 0; d < kDirections; ++d)
        out += fmt::format("blobstreaming_transfer_bytes_total{{direction=\"{}\"}} {}\n", kDirectionNames[d],
                           by_direction_[d].bytes.load(relaxed));
    header(out, "blobstreaming_transfer_duration_seconds", "histogram",
           "Duration of ended transfers, from the Request to the last byte or the commit.");
    for (std::size_t d = 0; d < kDirections; ++d) {
        const PerDirection& m = by_direction_[d];
        std::uint64_t cumulative = 0;
        for (std::size_t b = 0; b <= kBuckets.size(); ++b) {
            cumulative += m.buckets[b].load(relaxed);
            const std::string le = b < kBuckets.size() ? fmt::format("{}", kBuckets[b]) : "+Inf";
            out += fmt::format("blobstreaming_transfer_duration_seconds_bucket{{direction=\"{}\",le=\"{}\"}} {}\n",
                               kDirectionNames[d], le, cumulative);
        }
        out += fmt::format("blobstreaming_transfer_duration_seconds_sum{{direction=\"{}\"}} {:.6f}\n",
                           kDirectionNames[d], static_cast<double>(m.microseconds.load(relaxed)) / 1e6);
        out += fmt::format("blobstreaming_transfer_duration_seconds_count{{direction=\"{}\"}} {}\n", kDirectionNames[d],
                           cumulative);
    }
    header(out, "blobstreaming_active_transfers", "gauge", "Transfers under way on the data port.");
    out += fmt::format("blobstreaming_active_transfers {}\n", active_transfers);
    header(out, "blobstreaming_data_connections", "gauge", "Open data connections.");
    out += fmt::format("blobstreaming_data_connections {}\n", open_connections_.load(relaxed));
    header(out, "blobstreaming_refused_requests_total", "counter",
           "Data-port requests refused (invalid or expired ticket, access list, malformed).");
    out += fmt::format("blobstreaming_refused_requests_total {}\n", refused_.load(relaxed));
    header(out, "blobstreaming_tls_handshake_failures_total", "counter", "TLS handshakes failed on the data port.");
    out += fmt::format("blobstreaming_tls_handshake_failures_total {}\n", tls_failures_.load(relaxed));
    return out;
}

}  // namespace blobstreaming::server
