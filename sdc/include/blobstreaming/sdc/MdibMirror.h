#pragma once
/// A consumer's mirror of a provider's MDIB states, kept in sync by episodic
/// reports (WS-Eventing subscriptions, IEEE 11073-20701): every report's
/// MdibVersion is checked, and a gap (or a new SequenceId) makes the mirror
/// read all states again (GetMdState). No SOAP, XML or network type here.

#include "blobstreaming/sdc/Consumer.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace blobstreaming::sdc {

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
    std::string reason;         ///< SubscriptionEnd: its status and reason
    long long received_ns = 0;  ///< CLOCK_MONOTONIC: the notification's HTTP header had arrived
};

struct MirrorOptions {
    /// Connection to the provider (timeout, TLS identity: notifications are
    /// received over TLS with the same identity when the provider's URL is https).
    ConsumerOptions consumer;
    /// Requested subscription time; the mirror renews at half the granted time.
    std::chrono::seconds expires{60};
};

class MdibMirror {
public:
    /// Called on the mirror's own thread, once per report after the mirror
    /// applied it (reports older than the mirror are dropped without a call).
    /// Must not throw; a slow callback delays the next report.
    using Callback = std::function<void(const Report&)>;

    /// Connects to `device_url` (its metadata must list a StateEventService),
    /// reads all states, starts a notification server on the local address of
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
    std::uint64_t mdib_version() const;
    /// Times the states were read again because of a gap.
    std::size_t resyncs() const;
    /// True once the provider ended a subscription (SubscriptionEnd).
    bool ended() const;
    std::string epr() const;

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace blobstreaming::sdc
