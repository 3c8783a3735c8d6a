/// Fuzz target: the SOAP 1.2 + WS-Addressing envelope parsing that every
/// SDC message we receive goes through — WS-Discovery datagrams (Probe,
/// ProbeMatches, Hello, Bye: UDP multicast, from anyone on the link) and
/// the providers' HTTP responses to our consumer. The first input byte
/// chooses whether a MessageID is required (as for a Probe).
///
/// A parsed envelope has an Action and, when required, a MessageID; its
/// accessors (body_is, handle_refs, fault_reason) work on it; a refusal
/// always says why. A Fault made from the refusal (which quotes the peer's
/// bytes) parses again and keeps a reason.

#include "SoapMessage.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void require(bool condition, const char* what)
{
    if (!condition) {
        std::fprintf(stderr, "fuzz_sdc_envelope: %s\n", what);
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace blobstreaming::sdc;
    if (size == 0) return 0;
    const bool require_id = (data[0] & 1) != 0;
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);

    SoapMessage message;
    SoapFault fault;
    if (!parse_soap(input, require_id, message, fault)) {
        require(!fault.reason.empty(), "a refused envelope without a reason");
        const std::string answer = make_fault(fault, message.message_id);
        SoapMessage reparsed;
        SoapFault again;
        if (!parse_soap(answer, false, reparsed, again)) {
            std::fprintf(stderr, "fault:\n%s\nparse error: %s\n", answer.c_str(), again.reason.c_str());
            require(false, "our own Fault does not parse");
        }
        require(!fault_reason(reparsed.body).empty(), "our own Fault lost its reason");
        return 0;
    }
    require(!message.action.empty(), "an envelope accepted without wsa:Action");
    require(!require_id || !message.message_id.empty(), "an envelope accepted without the required wsa:MessageID");
    for (const std::string& handle : message.handle_refs()) (void)handle.size();
    (void)message.body_is("http://docs.oasis-open.org/ws-dd/ns/discovery/2009/01", "ProbeMatches");
    (void)fault_reason(message.body);
    return 0;
}
