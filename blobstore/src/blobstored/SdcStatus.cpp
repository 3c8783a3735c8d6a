#include "SdcStatus.h"

#include <blobstreaming/sdc/Mdib.h>
#include <blobstreaming/sdc/Provider.h>

namespace blobstreaming::daemon {
namespace {

std::string escape(const std::string& s)
{
    std::string out;
    for (const char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out += c;
        }
    }
    return out;
}

/// A NumericMetricDescriptor; 262656 is MDC_DIM_DIMLESS, the unit is named
/// in the concept description.
std::string metric(const char* handle, const char* unit, const char* what)
{
    return std::string("<pm:Metric xsi:type=\"pm:NumericMetricDescriptor\" Handle=\"") + handle +
           "\" MetricCategory=\"Msrmt\" MetricAvailability=\"Cont\" Resolution=\"1\">"
           "<pm:Type Code=\"0\"><pm:ConceptDescription Lang=\"en\">" +
           what +
           "</pm:ConceptDescription></pm:Type>"
           "<pm:Unit Code=\"262656\"><pm:ConceptDescription Lang=\"en\">" +
           unit + "</pm:ConceptDescription></pm:Unit></pm:Metric>";
}

std::string store_mdib(const std::string& store_name)
{
    return std::string(
               "<msg:GetMdibResponse xmlns:msg=\"http://standards.ieee.org/downloads/11073/11073-10207-2017/message\" "
               "xmlns:pm=\"http://standards.ieee.org/downloads/11073/11073-10207-2017/participant\" "
               "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" SequenceId=\"urn:oid:0\">"
               "<msg:Mdib SequenceId=\"urn:oid:0\"><pm:MdDescription><pm:Mds Handle=\"blobstore\">"
               "<pm:Type Code=\"0\"><pm:ConceptDescription Lang=\"en\">Blob store ") +
           escape(store_name) +
           "</pm:ConceptDescription></pm:Type>"
           "<pm:SystemContext Handle=\"blobstore.context\"><pm:LocationContext Handle=\"blobstore.location\"/>"
           "</pm:SystemContext><pm:Vmd Handle=\"blobstore.vmd\"><pm:Channel Handle=\"blobstore.channel\">" +
           metric(kSdcCapacity, "byte", "capacity (0: no limit of its own)") +
           metric(kSdcUsed, "byte", "committed bytes") + metric(kSdcBlobCount, "blob", "blobs") +
           metric(kSdcActiveTransfers, "transfer", "active data-plane transfers") +
           metric(kSdcThroughput, "MB/s", "throughput of the last transfer") +
           "</pm:Channel></pm:Vmd></pm:Mds></pm:MdDescription></msg:Mdib></msg:GetMdibResponse>";
}

}  // namespace

SdcStatus::SdcStatus(const std::string& address, const std::string& store_name, const TlsFiles& tls)
{
    sdc::ProviderOptions options;
    options.address = address;
    options.tls = tls;
    options.friendly_name = "Blob store " + store_name;
    options.model_name = "blobstored";
    provider_ = std::make_unique<sdc::Provider>(
        sdc::Mdib::load_string(store_mdib(store_name), "of store \"" + store_name + "\""), options);
}

SdcStatus::~SdcStatus() = default;

void SdcStatus::update(const StoreUsage& usage, std::uint32_t active_transfers, double last_mbps)
{
    std::vector<sdc::MetricUpdate> changed;
    const auto numeric = [&changed](const char* handle, double value) {
        changed.push_back(sdc::MetricUpdate::numeric(handle, value));
    };
    if (!published_ || usage.capacity != last_.capacity) numeric(kSdcCapacity, static_cast<double>(usage.capacity));
    if (!published_ || usage.used != last_.used) numeric(kSdcUsed, static_cast<double>(usage.used));
    if (!published_ || usage.blob_count != last_.blob_count)
        numeric(kSdcBlobCount, static_cast<double>(usage.blob_count));
    if (!published_ || active_transfers != last_active_)
        numeric(kSdcActiveTransfers, static_cast<double>(active_transfers));
    if (last_mbps > 0 && last_mbps != last_mbps_) numeric(kSdcThroughput, last_mbps);
    if (!changed.empty()) provider_->set_metrics(changed);
    last_ = usage;
    last_active_ = active_transfers;
    last_mbps_ = last_mbps;
    published_ = true;
}

std::string SdcStatus::address() const { return provider_->address(); }
std::string SdcStatus::device_url() const { return provider_->device_url(); }

}  // namespace blobstreaming::daemon
