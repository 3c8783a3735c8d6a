#pragma once
// What the MDIB mirror (Watch.cpp) uses of a Consumer beyond its public
// interface: raw SOAP calls on its connection, the hosted services its
// metadata named, and the state parser. Internal.

#include "SoapMessage.h"
#include "blobstreaming/sdc/Consumer.h"

#include <string>

namespace blobstreaming::sdc {

/// Hosted service addresses from the provider's metadata (empty: not hosted).
struct ServiceUrls {
    std::string get;
    std::string state_event;
    std::string description_event;
    std::string context;
};

struct ConsumerAccess {
    /// One SOAP exchange (throws SdcError like every Consumer call).
    static SoapMessage call(Consumer& c, const std::string& url, const std::string& action, const std::string& body,
                            const std::string& extra_ns, const char* what, const std::string& extra_headers = {});
    static const ServiceUrls& services(const Consumer& c);
    /// The local IP address of the connection to the provider (where notifications can reach us).
    static std::string local_ip(const Consumer& c);
    static const ConsumerOptions& options(const Consumer& c);
};

/// A pm:State (or report part such as msg:MetricState) as the public State.
State parse_state(const xmlNode* node);

}  // namespace blobstreaming::sdc
