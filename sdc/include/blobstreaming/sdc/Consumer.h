#pragma once
/// An SDC consumer of the get-service path: finds a provider (WS-Discovery
/// Probe or a direct address), reads its DPWS metadata, and calls GetMdState,
/// GetMdDescription and GetMdib. No SOAP, XML or network type in this header.

#include <blobstreaming/common/TlsFiles.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace blobstreaming::sdc {

/// One BICEPS state as received.
struct State {
    std::string descriptor_handle;
    std::string handle;                                           ///< context states only
    std::string type;                                             ///< xsi:type, local part ("NumericMetricState")
    std::string state_version;                                    ///< as sent; empty if absent (= 0)
    std::string value;                                            ///< MetricValue/@Value of metric states, else empty
    std::vector<std::pair<std::string, std::string>> attributes;  ///< all attributes except xsi:type
};

/// A provider that answered a Probe.
struct DiscoveredProvider {
    std::string epr;
    std::vector<std::string> xaddrs;
};

/// Consumer-side timestamps of the last call (CLOCK_MONOTONIC ns, comparable
/// with the provider's t2..t4 on the same machine), after Kasparick et al. 2017.
struct CallTimes {
    std::string message_id;  ///< of the request: the key of the provider's timestamps
    long long t0 = 0;        ///< the API was called
    long long t1 = 0;        ///< the request is handed to the socket
    long long t5 = 0;        ///< the response header has been received
    long long t6 = 0;        ///< the value is available to the application
};

/// Provider-side timestamps of one request (CLOCK_MONOTONIC ns): t2 request
/// header received, t3 requested state found, t4 response handed to the socket.
struct ProviderTimes {
    long long t2 = 0;
    long long t3 = 0;
    long long t4 = 0;
};

struct ConsumerOptions {
    /// Bound on every connect, request and response.
    std::chrono::milliseconds timeout{10000};
    /// TLS (https URLs) with this certificate and key; the provider's
    /// certificate must chain to `tls.ca`. Empty: plain http only.
    TlsFiles tls;
};

/// Not thread-safe: one Consumer per thread. It keeps one keep-alive
/// connection to the provider and reconnects once when the provider closed it.
/// Every call throws SdcError: fault (the provider's reason included),
/// timeout, unreachable, protocol_error.
class Consumer {
public:
    /// `device_url`: the provider's XAddr (http://HOST:PORT/PATH). Performs the
    /// WS-Transfer Get and finds the hosted GetService.
    static Consumer connect(const std::string& device_url, ConsumerOptions options = {});
    /// Multicast Probe for dpws:Device mdpws:MedicalDevice from `interface_ip`;
    /// collects ProbeMatches for `wait`.
    static std::vector<DiscoveredProvider> probe(const std::string& interface_ip, std::chrono::milliseconds wait);
    /// Probe, then connect to the first match (whose EPR equals `epr` if given).
    /// Throws SdcError(not_found) if none answered within `wait`.
    static Consumer discover(const std::string& interface_ip, std::chrono::milliseconds wait,
                             const std::string& epr = {}, ConsumerOptions options = {});

    Consumer(Consumer&&) noexcept;
    Consumer& operator=(Consumer&&) noexcept;
    ~Consumer();

    /// States for these handles (empty: all).
    std::vector<State> get_md_state(const std::vector<std::string>& handles = {});
    /// The msg:GetMdDescriptionResponse element as XML (with its namespaces).
    std::string get_md_description(const std::vector<std::string>& handles = {});
    /// The msg:GetMdibResponse element as XML.
    std::string get_mdib();

    /// The provider's timestamps for a request of ours, by MessageID
    /// (CallTimes::message_id), from a blobstreaming sdc-provider's
    /// `GET /timestamps?id=`. Throws SdcError(protocol_error) if it has none.
    ProviderTimes provider_times(const std::string& message_id);

    /// MdibVersion of the last response.
    std::uint64_t mdib_version() const;
    const CallTimes& last_call() const;
    std::string epr() const;
    std::string get_service_url() const;
    /// The device URL this consumer connected to (the XAddr).
    std::string device_url() const;

private:
    friend struct ConsumerAccess;
    class Impl;
    explicit Consumer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace blobstreaming::sdc
