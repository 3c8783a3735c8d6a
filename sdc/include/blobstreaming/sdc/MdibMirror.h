#pragma once
/// A consumer's mirror of a provider's MDIB (descriptors and states), kept in
/// sync by episodic reports and DescriptionModificationReports (WS-Eventing
/// subscriptions, IEEE 11073-20701): every report's MdibVersion is checked,
/// reports ahead of the mirror wait up to a reorder window for those before
/// them (each subscription has its own connection), and a gap that stays
/// open (or a new SequenceId) makes the mirror read the MDIB again: GetMdib when the provider hosts a DescriptionEventService (a missed
/// report may have changed the description), else GetMdState. No SOAP, XML
/// or network type here.

#include "blobstreaming/sdc/Consumer.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace blobstreaming::sdc {

/// One BICEPS descriptor as the mirror holds it (without nested descriptors).
struct Descriptor {
    std::string handle;
    std::string parent_handle;       ///< empty for an MDS
    std::string type;                ///< xsi:type local part, or the element's ("ChannelDescriptor")
    std::string descriptor_version;  ///< as sent; empty if absent (= 0)
    std::string unit_code;           ///< pm:Unit/@Code of metric descriptors, else empty
    std::vector<std::pair<std::string, std::string>> attributes;  ///< all attributes except xsi:type
};

/// One report as the mirror applied it.
struct Report {
    /// Local name of the action: "EpisodicMetricReport", "EpisodicAlertReport",
    /// "EpisodicComponentReport", "EpisodicOperationalStateReport",
    /// "EpisodicContextReport", "DescriptionModificationReport"; "Resync"
    /// when the states were read again after a gap; "SubscriptionEnd" when
    /// the provider ended a subscription (`reason` says why).
    std::string action;
    std::uint64_t mdib_version = 0;
    std::string sequence_id;
    std::vector<State> states;  ///< the states the report carried (Resync: all of them)
    /// DescriptionModificationReport: the descriptors of its Crt, Upt and
    /// Del report parts (a deleted descriptor's nested descriptors and all
    /// their states left the mirror too).
    std::vector<Descriptor> created;
    std::vector<Descriptor> updated;
    std::vector<Descriptor> deleted;
    /// Resync: true when the description was read again too (GetMdib);
    /// descriptors() then holds the provider's current description.
    bool description_resynced = false;
    std::string reason;         ///< SubscriptionEnd: its status and reason
    long long received_ns = 0;  ///< CLOCK_MONOTONIC: the notification's HTTP header had arrived
};

struct MirrorOptions {
    /// Connection to the provider (timeout, TLS identity: notifications are
    /// received over TLS with the same identity when the provider's URL is https).
    ConsumerOptions consumer;
    /// Requested subscription time; the mirror renews at half the granted time.
    std::chrono::seconds expires{60};
    /// A report ahead of the mirror (a gap in MdibVersion) is held this
    /// long for the reports before it, which may still be on their way on
    /// another subscription's connection; then the MDIB is read again.
    std::chrono::milliseconds reorder_window{500};
};

class MdibMirror {
public:
    /// Called on the mirror's own thread, once per report after the mirror
    /// applied it (reports with a lower MdibVersion than the mirror's are
    /// dropped without a call; one with the same MdibVersion is applied, as a
    /// provider may send one change as several reports).
    /// Must not throw; a slow callback delays the next report.
    using Callback = std::function<void(const Report&)>;

    /// Connects to `device_url` (its metadata must list a StateEventService),
    /// reads the MDIB (GetMdib), starts a notification server on the local address of
    /// that connection (port 0) and subscribes to the episodic reports of the
    /// StateEventService, and of the DescriptionEventService and
    /// ContextService when hosted. Throws SdcError like Consumer::connect,
    /// or protocol_error when the provider hosts no StateEventService.
    MdibMirror(const std::string& device_url, Callback on_report, MirrorOptions options = {});
    /// Unsubscribes (each bounded by the consumer timeout) and stops.
    ~MdibMirror();
    MdibMirror(const MdibMirror&) = delete;
    MdibMirror& operator=(const MdibMirror&) = delete;

    /// The mirrored states for these descriptor (or context state) handles;
    /// empty: all. Thread-safe.
    std::vector<State> states(const std::vector<std::string>& handles = {}) const;
    /// The mirrored descriptors with these handles; empty: all (document
    /// order, descriptors created later at the end). Throws
    /// SdcError(unknown_handle). Thread-safe.
    std::vector<Descriptor> descriptors(const std::vector<std::string>& handles = {}) const;
    std::uint64_t mdib_version() const;
    /// Times the MDIB (or its states) were read again because of a gap.
    std::size_t resyncs() const;
    /// True once the provider ended a subscription (SubscriptionEnd).
    bool ended() const;
    std::string epr() const;

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace blobstreaming::sdc
