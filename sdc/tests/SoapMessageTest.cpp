#include "SoapMessage.h"

#include "Namespaces.h"

#define BOOST_TEST_MODULE SoapMessage
#include <boost/test/unit_test.hpp>

using namespace blobstreaming::sdc;

namespace {

const std::string kGetMdState =
    "<?xml version='1.0' encoding='UTF-8'?>\n"
    "<s12:Envelope xmlns:s12=\"http://www.w3.org/2003/05/soap-envelope\" "
    "xmlns:msg=\"http://standards.ieee.org/downloads/11073/11073-10207-2017/message\" "
    "xmlns:wsa=\"http://www.w3.org/2005/08/addressing\"><s12:Header>"
    "<wsa:To>http://127.0.0.1:52231/72313cab735251c983738b4031a66ec7/Get</wsa:To>"
    "<wsa:Action>http://standards.ieee.org/downloads/11073/11073-20701-2018/GetService/GetMdState</wsa:Action>"
    "<wsa:MessageID>urn:uuid:b2cc8c03-69dd-4659-97b1-181038064b8f</wsa:MessageID></s12:Header>"
    "<s12:Body><msg:GetMdState><msg:HandleRef>3569</msg:HandleRef><msg:HandleRef> vmd0 </msg:HandleRef>"
    "</msg:GetMdState></s12:Body></s12:Envelope>";

bool parse(const std::string& text, SoapMessage& message, SoapFault& fault)
{
    return parse_soap(text, true, message, fault);
}

}  // namespace

BOOST_AUTO_TEST_CASE(parses_a_captured_get_md_state)
{
    SoapMessage m;
    SoapFault f;
    BOOST_REQUIRE(parse(kGetMdState, m, f));
    BOOST_TEST(m.action == std::string(ns::kGetService) + "GetMdState");
    BOOST_TEST(m.message_id == "urn:uuid:b2cc8c03-69dd-4659-97b1-181038064b8f");
    BOOST_TEST(m.to == "http://127.0.0.1:52231/72313cab735251c983738b4031a66ec7/Get");
    BOOST_TEST(m.relates_to.empty());
    BOOST_TEST(m.body_is(ns::kMsg, "GetMdState"));
    const auto refs = m.handle_refs();
    BOOST_TEST(refs.size() == 2u);
    BOOST_TEST(refs.at(0) == "3569");
    BOOST_TEST(refs.at(1) == "vmd0");
}

BOOST_AUTO_TEST_CASE(prefixes_do_not_matter_namespaces_do)
{
    std::string other = kGetMdState;
    for (const std::string from : {"s12:", "xmlns:s12"}) {
        for (auto pos = other.find(from); pos != std::string::npos; pos = other.find(from, pos + 1))
            other.replace(pos, from.size(), from == "s12:" ? "soap:" : "xmlns:soap");
    }
    SoapMessage m;
    SoapFault f;
    BOOST_REQUIRE_MESSAGE(parse(other, m, f), f.reason);
    BOOST_TEST(m.handle_refs().size() == 2u);
}

BOOST_AUTO_TEST_CASE(malformed_xml_is_a_sender_fault_with_the_parser_message)
{
    SoapMessage m;
    SoapFault f;
    BOOST_TEST(!parse(kGetMdState.substr(0, 200), m, f));
    BOOST_TEST(f.sender);
    BOOST_TEST(f.reason.rfind("malformed XML: line ", 0) == 0, f.reason);
}

BOOST_AUTO_TEST_CASE(soap_11_is_a_version_mismatch)
{
    std::string soap11 = kGetMdState;
    soap11.replace(soap11.find("http://www.w3.org/2003/05/soap-envelope"), 39,
                   "http://schemas.xmlsoap.org/soap/envelope/");
    SoapMessage m;
    SoapFault f;
    BOOST_TEST(!parse(soap11, m, f));
    BOOST_TEST(f.subcode == "s12:VersionMismatch");
    BOOST_TEST(f.reason.find("not a SOAP 1.2 Envelope") != std::string::npos, f.reason);
}

BOOST_AUTO_TEST_CASE(missing_action_and_message_id)
{
    std::string no_action = kGetMdState;
    no_action.replace(no_action.find("<wsa:Action>"), 12, "<wsa:Actio2>")
        .replace(no_action.find("</wsa:Action>"), 13, "</wsa:Actio2>");
    SoapMessage m;
    SoapFault f;
    BOOST_TEST(!parse(no_action, m, f));
    BOOST_TEST(f.subcode == "wsa:MessageAddressingHeaderRequired");
    BOOST_TEST(f.reason.find("no wsa:Action") != std::string::npos);

    std::string no_id = kGetMdState;
    const auto begin = no_id.find("<wsa:MessageID>");
    no_id.erase(begin, no_id.find("</s12:Header>") - begin);
    BOOST_TEST(!parse(no_id, m, f));
    BOOST_TEST(f.reason.find("no wsa:MessageID") != std::string::npos);
    BOOST_TEST(parse_soap(no_id, false, m, f));
}

BOOST_AUTO_TEST_CASE(dtds_are_refused)
{
    SoapMessage m;
    SoapFault f;
    BOOST_TEST(!parse("<!DOCTYPE x [<!ENTITY a \"b\">]><x>&a;</x>", m, f));
    BOOST_TEST(f.reason.find("DTD") != std::string::npos, f.reason);
}

BOOST_AUTO_TEST_CASE(envelope_round_trip_with_relates_to)
{
    const std::string text =
        make_envelope(ns::kTransferGetResponse, "urn:uuid:1", "urn:uuid:0", {}, "<x:Y xmlns:x=\"urn:x\"/>");
    SoapMessage m;
    SoapFault f;
    BOOST_REQUIRE_MESSAGE(parse(text, m, f), f.reason);
    BOOST_TEST(m.action == ns::kTransferGetResponse);
    BOOST_TEST(m.message_id == "urn:uuid:1");
    BOOST_TEST(m.relates_to == "urn:uuid:0");
    BOOST_TEST(m.body_is("urn:x", "Y"));
}

BOOST_AUTO_TEST_CASE(fault_round_trip)
{
    SoapFault fault;
    fault.subcode = "wsa:ActionNotSupported";
    fault.reason = "unknown action <urn:a&b>";
    SoapMessage m;
    SoapFault f;
    BOOST_REQUIRE(parse_soap(make_fault(fault, "urn:uuid:9"), false, m, f));
    BOOST_TEST(m.action == ns::kFaultAction);
    BOOST_TEST(m.relates_to == "urn:uuid:9");
    BOOST_TEST(fault_reason(m.body) == "unknown action <urn:a&b> (s12:Sender, wsa:ActionNotSupported)");
}

BOOST_AUTO_TEST_CASE(a_fault_quoting_bytes_that_are_not_utf8_is_well_formed)
{
    // The parser's message quotes the request; its bytes need not be UTF-8
    // or XML characters (found by the sdc_request fuzz target).
    const std::string body = std::string("<?xml version='1.0'?>\n<s12:Envelope xmlns:s12='http://www.w3.org/2003/"
                                         "05/soap-\xff\xfe\x01") +
                             "envelope'/>";
    SoapMessage request;
    SoapFault fault;
    BOOST_REQUIRE(!parse_soap(body, true, request, fault));
    SoapFault about_bytes;
    about_bytes.reason = "bad \xA7\xA7 \xED\xA0\x80 \x01 text, kept: \xC3\xA9";
    for (const SoapFault& f : {fault, about_bytes}) {
        SoapMessage m;
        SoapFault again;
        BOOST_REQUIRE_MESSAGE(parse_soap(make_fault(f, "urn:uuid:9"), false, m, again), again.reason);
        BOOST_TEST(!fault_reason(m.body).empty());
    }
    SoapMessage m;
    SoapFault again;
    BOOST_REQUIRE(parse_soap(make_fault(about_bytes, "urn:uuid:9"), false, m, again));
    BOOST_TEST(
        fault_reason(m.body).find("bad \xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD "
                                  "text, kept: \xC3\xA9") == 0);
}
