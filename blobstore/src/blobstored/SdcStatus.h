#pragma once
/// The store's status as an IEEE 11073 SDC provider (docs/SDC.md): an MDIB
/// with one MDS whose numeric metrics are the capacity, the used bytes, the
/// blob count, the active transfers and the last transfer throughput.

#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/TlsFiles.h>

#include <cstdint>
#include <memory>
#include <string>

namespace blobstreaming::sdc {
class Provider;
}

namespace blobstreaming::daemon {

/// Metric handles, as a consumer asks for them.
inline constexpr const char* kSdcCapacity = "blobstore.capacity_bytes";
inline constexpr const char* kSdcUsed = "blobstore.used_bytes";
inline constexpr const char* kSdcBlobCount = "blobstore.blob_count";
inline constexpr const char* kSdcActiveTransfers = "blobstore.active_transfers";
inline constexpr const char* kSdcThroughput = "blobstore.last_transfer_mb_per_s";

class SdcStatus {
public:
    /// Starts the provider on `address` (HOST:PORT) with WS-Discovery and
    /// the event services; with `tls` (the daemon's --tls-* files) it serves
    /// https only and requires consumers' certificates from the same CA.
    /// Throws sdc::SdcError naming the address and the reason.
    SdcStatus(const std::string& address, const std::string& store_name, const TlsFiles& tls = {});
    ~SdcStatus();
    SdcStatus(const SdcStatus&) = delete;
    SdcStatus& operator=(const SdcStatus&) = delete;

    /// Publishes the values that changed as one MDIB change (one
    /// EpisodicMetricReport to subscribers): the store's usage, the
    /// transfers in progress, the last transfer's throughput in MB/s (0:
    /// none yet, left unset). One caller at a time (the daemon serialises).
    void update(const StoreUsage& usage, std::uint32_t active_transfers, double last_mbps);

    std::string address() const;
    std::string device_url() const;

private:
    std::unique_ptr<sdc::Provider> provider_;
    StoreUsage last_{};
    std::uint32_t last_active_ = 0;
    double last_mbps_ = 0;
    bool published_ = false;
};

}  // namespace blobstreaming::daemon
