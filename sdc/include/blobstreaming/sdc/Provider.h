#pragma once
/// An SDC provider (IEEE 11073-20701/-20702 with BICEPS 11073-10207): DPWS
/// metadata, GetService (GetMdib, GetMdState, GetMdDescription), the
/// StateEventService and DescriptionEventService (WS-Eventing
/// subscriptions, episodic reports) over HTTP/1.1 keep-alive or TLS with
/// client certificates, and WS-Discovery.

#include "blobstreaming/sdc/Mdib.h"

#include <blobstreaming/common/TlsFiles.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace blobstreaming::sdc {

struct ProviderOptions {
    /// Listening address "HOST:PORT"; port 0 picks an ephemeral port.
    std::string address = "127.0.0.1:0";
    /// Endpoint reference (urn:uuid:...); empty: a new random one.
    std::string epr;
    /// WS-Discovery: join 239.255.255.250:3702 on the interface of `address`,
    /// answer Probe (multicast and unicast), send Hello on start and Bye on stop.
    bool discovery = true;
    /// Structural checks of every request beyond well-formedness (see docs/SDC.md).
    bool validate = true;
    /// A directory with the BICEPS schemas (BICEPS_MessageModel.xsd,
    /// BICEPS_ParticipantModel.xsd, ExtensionPoint.xsd): GetService request
    /// bodies are then validated against them (XSD, libxml2). Empty: off.
    std::string schema_dir;
    /// Largest accepted request body; bigger ones get a Fault and the connection is closed.
    std::uint64_t max_body_bytes = 4 * 1024 * 1024;
    /// A connection must have sent its first complete request (after the
    /// TLS handshake) within this time of connecting, or it is closed.
    std::chrono::milliseconds handshake_timeout{5000};
    /// A request header must arrive completely within this time once its first byte did.
    std::chrono::milliseconds header_timeout{10000};
    /// An idle keep-alive connection is closed after this time.
    std::chrono::milliseconds idle_timeout{60000};
    /// Open connections from one IP address; a newcomer beyond it is closed at once.
    std::size_t max_connections_per_peer = 64;
    /// Open connections in all; a newcomer beyond it takes the slot of the
    /// connection idle longest (closed), or is closed when none is idle.
    std::size_t max_connections = 1024;
    /// Provider-side timestamps (t2, t3, t4) kept for this many recent MessageIDs.
    std::size_t timestamp_history = 100000;
    /// TLS (https) with mutual authentication: this provider's certificate
    /// and key, and the CA that consumers' certificates (and subscribers'
    /// NotifyTo servers) must chain to. Empty: plain HTTP.
    TlsFiles tls;
    /// Event services (StateEventService, DescriptionEventService); off:
    /// only the GetService is hosted.
    bool events = true;
    /// Bound on connecting to a subscriber and on each notification; a
    /// subscriber that exceeds it is ended (SubscriptionEnd DeliveryFailure).
    std::chrono::milliseconds notify_timeout{5000};
    /// Notifications queued per subscriber before it is ended as too slow.
    std::size_t notify_queue_limit = 256;
    /// Longest subscription granted (also when a Subscribe has no Expires).
    std::chrono::seconds max_subscription{3600};
    /// DPWS ThisModel / ThisDevice.
    std::string manufacturer = "Blob Streaming";
    std::string model_name = "blobstreaming-sdc";
    std::string friendly_name = "Blob Streaming SDC provider";
    std::string serial_number = "0";
};

/// Serves one Mdib. Owns an I/O thread that runs the HTTP server and the
/// discovery socket; every public member may be called from any thread.
class Provider {
public:
    /// Binds the sockets and starts serving; throws SdcError(invalid_argument /
    /// unreachable) naming the address and the reason.
    Provider(Mdib mdib, ProviderOptions options);
    /// Sends Bye (if discovery is on) and stops the I/O thread.
    ~Provider();
    Provider(const Provider&) = delete;
    Provider& operator=(const Provider&) = delete;

    /// "HOST:PORT" actually bound (the real port when 0 was asked for).
    std::string address() const;
    /// urn:uuid endpoint reference.
    std::string epr() const;
    /// http(s)://HOST:PORT/<epr-hex>: the device's XAddr (WS-Transfer Get target).
    std::string device_url() const;

    /// Live updates of NumericMetricState / StringMetricState values (see
    /// Mdib). Each call is one MDIB change (one MdibVersion) and, when some
    /// subscriber asked for it, one EpisodicMetricReport; the call only
    /// queues the report (delivery runs on the provider's delivery thread).
    void set_metric(const std::string& handle, double value);
    void set_metric(const std::string& handle, const std::string& value);
    /// Several metrics as one change and one report (see Mdib::set_metrics).
    void set_metrics(const std::vector<MetricUpdate>& updates);
    /// Description changes at run time (see Mdib::add_metric,
    /// update_metric, remove_metric): each is one MDIB change (one
    /// MdibVersion) and, when some subscriber asked for it, one
    /// DescriptionModificationReport queued like the episodic reports.
    /// Bad input throws SdcError and changes nothing.
    void add_metric(const std::string& parent, const MetricDescriptorSpec& spec);
    void update_metric(const std::string& handle, const MetricDescriptorChange& change);
    void remove_metric(const std::string& handle);
    /// Subscriptions currently active.
    std::size_t subscriber_count() const;
    /// Read access for the application (same object the provider serves).
    const Mdib& mdib() const;

    /// Sends Bye and stops serving; idempotent, called by the destructor.
    void stop();

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace blobstreaming::sdc
