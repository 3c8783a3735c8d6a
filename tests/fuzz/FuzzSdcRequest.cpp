/// Fuzz target: what the SDC provider does with an HTTP request body
/// (ServiceHandler::post, the same call the provider's HTTP server makes:
/// SOAP 1.2 + WS-Addressing parsing, the GetService and metadata actions
/// against a real MDIB) and with a GET target (ServiceHandler::get). The
/// first input byte chooses: bit 0 incoming validation on/off, bit 1 a GET
/// target instead of a POST body.
///
/// Every input gets a reply: a status the provider may send, a body, and
/// for a SOAP reply (success or Fault) an envelope that parses again and
/// relates to the request. Nothing may throw.
///
/// The MDIB is $BS_SRCDIR/sdc/tests/data/mdib.xml (make check and
/// scripts/run-fuzz set BS_SRCDIR).

#include "ServiceHandler.h"
#include "SoapMessage.h"

#include <blobstreaming/sdc/Mdib.h>
#include <blobstreaming/sdc/Provider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

namespace {

using namespace blobstreaming::sdc;

void require(bool condition, const char* what)
{
    if (!condition) {
        std::fprintf(stderr, "fuzz_sdc_request: %s\n", what);
        std::abort();
    }
}

struct Provider {
    ProviderOptions options;
    Mdib mdib;
    ServiceHandler handler;

    Provider(Mdib loaded, bool validate)
        : options(make_options(validate)), mdib(std::move(loaded)),
          handler(mdib, options, "urn:uuid:6d7e2f1a-0c3b-4f5e-9a8b-112233445566")
    {
        handler.set_base_url("http://127.0.0.1:1");
    }

    static ProviderOptions make_options(bool validate)
    {
        ProviderOptions o;
        o.validate = validate;
        o.discovery = false;
        o.timestamp_history = 64;  // bounded memory however many MessageIDs arrive
        return o;
    }
};

Mdib load_mdib()
{
    const char* src = std::getenv("BS_SRCDIR");
    const std::string top = src && *src ? src : ".";
    return Mdib::load_file(top + "/sdc/tests/data/mdib.xml");
}

Provider& provider(bool validate)
{
    static std::unique_ptr<Provider> with(new Provider(load_mdib(), true));
    static std::unique_ptr<Provider> without(new Provider(load_mdib(), false));
    return validate ? *with : *without;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0) return 0;
    const bool validate = (data[0] & 1) != 0;
    const bool get = (data[0] & 2) != 0;
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    ServiceHandler& handler = provider(validate).handler;

    if (get) {
        const HttpReply reply = handler.get(input);
        require(reply.status == 200 || reply.status == 404, "GET answered a status other than 200 or 404");
        require(!reply.body.empty(), "GET answered an empty body");
        return 0;
    }

    const HttpReply reply = handler.post("/", input, 1);
    require(reply.status == 200 || reply.status == 400 || reply.status == 500,
            "POST answered a status other than 200, 400 or 500");
    require(!reply.body.empty(), "POST answered an empty body");
    SoapMessage answer;
    SoapFault fault;
    if (!parse_soap(reply.body, false, answer, fault)) {
        std::fprintf(stderr, "reply:\n%s\nparse error: %s\n", reply.body.c_str(), fault.reason.c_str());
        require(false, "the reply is not a SOAP envelope we can parse");
    }
    require(answer.relates_to == reply.request_id, "the reply does not relate to the request's MessageID");
    require((reply.status == 200) != answer.body_is("http://www.w3.org/2003/05/soap-envelope", "Fault"),
            "a Fault was sent with 200, or a non-Fault with an error status");
    if (!reply.request_id.empty()) handler.record_sent(reply.request_id, 2);
    return 0;
}
