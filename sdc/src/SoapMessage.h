#pragma once
// SOAP 1.2 + WS-Addressing: parsing a received envelope, writing envelopes
// and faults. Internal to the sdc module (used by provider and consumer).

#include "Xml.h"

#include <string>
#include <string_view>
#include <vector>

namespace blobstreaming::sdc {

/// A parsed envelope. The document stays alive with it, so `body` (first
/// element child of s12:Body, null for an empty Body) can be inspected.
struct SoapMessage {
    xml::DocPtr doc;
    std::string action;
    std::string message_id;
    std::string to;
    std::string relates_to;
    xmlNode* body = nullptr;
    xmlNode* header = nullptr;  ///< s12:Header, null if absent

    /// The msg:HandleRef children of the body element, in order.
    std::vector<std::string> handle_refs() const;
    /// True when the body element is {ns_uri}local.
    bool body_is(const char* ns_uri, const char* local) const;
};

/// Why a message was rejected; `subcode` is a QName with prefix wsa: or s12:
/// or empty, `sender` tells whether the fault is the sender's (HTTP 400) or ours (500).
struct SoapFault {
    bool sender = true;
    std::string subcode;
    std::string reason;
};

/// Parses and checks the structure: well-formed XML, s12:Envelope in the
/// SOAP 1.2 namespace, s12:Header with wsa:Action (and, if `require_message_id`,
/// wsa:MessageID), s12:Body with at most one element. Returns false and fills
/// `fault` with the reason otherwise.
bool parse_soap(std::string_view text, bool require_message_id, SoapMessage& out, SoapFault& fault);

/// An envelope with the given addressing headers (empty ones are left out)
/// and `body` pasted into s12:Body. The root declares s12, wsa and `extra_ns`
/// (ready-made ` xmlns:p="..."` text).
std::string make_envelope(const std::string& action, const std::string& message_id, const std::string& relates_to,
                          const std::string& to, const std::string& body, const std::string& extra_ns = {},
                          const std::string& extra_headers = {});

/// A SOAP 1.2 Fault envelope (action wsa soap/fault, RelatesTo the request).
/// `extra_ns` declares the prefix of a subcode other than s12: and wsa:.
std::string make_fault(const SoapFault& fault, const std::string& relates_to, const std::string& extra_ns = {});

/// Extracts the fault reason text from a parsed Fault body (empty if `body` is not s12:Fault).
std::string fault_reason(const xmlNode* body);

}  // namespace blobstreaming::sdc
