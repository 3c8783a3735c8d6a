#include "SoapMessage.h"

#include "Namespaces.h"
#include "Uuid.h"

namespace blobstreaming::sdc {

std::vector<std::string> SoapMessage::handle_refs() const
{
    std::vector<std::string> refs;
    for (xmlNode* c = xml::first_element(body); c != nullptr; c = xml::next_element(c))
        if (xml::is(c, ns::kMsg, "HandleRef")) refs.push_back(xml::text(c));
    return refs;
}

bool SoapMessage::body_is(const char* ns_uri, const char* local) const { return xml::is(body, ns_uri, local); }

bool parse_soap(std::string_view text, bool require_message_id, SoapMessage& out, SoapFault& fault)
{
    fault = SoapFault{};
    std::string error;
    out.doc = xml::parse(text, error);
    if (!out.doc) {
        fault.subcode = "";
        fault.reason = "malformed XML: " + error;
        return false;
    }
    xmlNode* envelope = xmlDocGetRootElement(out.doc.get());
    if (!xml::is(envelope, ns::kSoap, "Envelope")) {
        const std::string found = envelope != nullptr && envelope->ns != nullptr
                                      ? std::string("{") + reinterpret_cast<const char*>(envelope->ns->href) + "}"
                                      : std::string();
        fault.subcode = "s12:VersionMismatch";
        fault.reason = "the root element is " + found +
                       (envelope != nullptr ? reinterpret_cast<const char*>(envelope->name) : "") +
                       ", not a SOAP 1.2 Envelope (" + ns::kSoap + ")";
        return false;
    }
    xmlNode* header = xml::child(envelope, ns::kSoap, "Header");
    xmlNode* body = xml::child(envelope, ns::kSoap, "Body");
    if (body == nullptr) {
        fault.reason = "the SOAP Envelope has no Body";
        return false;
    }
    out.action = xml::text(xml::child(header, ns::kWsa, "Action"));
    out.message_id = xml::text(xml::child(header, ns::kWsa, "MessageID"));
    out.to = xml::text(xml::child(header, ns::kWsa, "To"));
    out.relates_to = xml::text(xml::child(header, ns::kWsa, "RelatesTo"));
    out.body = xml::first_element(body);
    out.header = header;
    if (out.action.empty()) {
        fault.subcode = "wsa:MessageAddressingHeaderRequired";
        fault.reason = "the SOAP Header has no wsa:Action (" + std::string(ns::kWsa) + ")";
        return false;
    }
    if (require_message_id && out.message_id.empty()) {
        fault.subcode = "wsa:MessageAddressingHeaderRequired";
        fault.reason = "the SOAP Header has no wsa:MessageID";
        return false;
    }
    if (out.body != nullptr && xml::next_element(out.body) != nullptr) {
        fault.reason = "the SOAP Body holds more than one element";
        return false;
    }
    return true;
}

std::string make_envelope(const std::string& action, const std::string& message_id, const std::string& relates_to,
                          const std::string& to, const std::string& body, const std::string& extra_ns,
                          const std::string& extra_headers)
{
    std::string out;
    out.reserve(body.size() + 1024);
    out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<s12:Envelope xmlns:s12=\"";
    out += ns::kSoap;
    out += "\" xmlns:wsa=\"";
    out += ns::kWsa;
    out += '"';
    out += extra_ns;
    out += "><s12:Header>";
    if (!to.empty()) out += "<wsa:To>" + xml::escape(to) + "</wsa:To>";
    out += "<wsa:Action>" + xml::escape(action) + "</wsa:Action>";
    out += "<wsa:MessageID>" + xml::escape(message_id.empty() ? make_urn_uuid() : message_id) + "</wsa:MessageID>";
    if (!relates_to.empty()) out += "<wsa:RelatesTo>" + xml::escape(relates_to) + "</wsa:RelatesTo>";
    out += extra_headers;
    out += "</s12:Header>";
    if (body.empty()) {
        out += "<s12:Body/>";
    } else {
        out += "<s12:Body>";
        out += body;
        out += "</s12:Body>";
    }
    out += "</s12:Envelope>";
    return out;
}

std::string make_fault(const SoapFault& fault, const std::string& relates_to, const std::string& extra_ns)
{
    std::string body = "<s12:Fault><s12:Code><s12:Value>";
    body += fault.sender ? "s12:Sender" : "s12:Receiver";
    body += "</s12:Value>";
    if (!fault.subcode.empty())
        body += "<s12:Subcode><s12:Value>" + xml::escape(fault.subcode) + "</s12:Value></s12:Subcode>";
    body += "</s12:Code><s12:Reason><s12:Text xml:lang=\"en\">" + xml::escape_text(fault.reason) +
            "</s12:Text></s12:Reason></s12:Fault>";
    return make_envelope(ns::kFaultAction, {}, relates_to, {}, body, extra_ns);
}

std::string fault_reason(const xmlNode* body)
{
    if (!xml::is(body, ns::kSoap, "Fault")) return {};
    const xmlNode* reason = xml::child(body, ns::kSoap, "Reason");
    std::string text = xml::text(xml::child(reason, ns::kSoap, "Text"));
    const xmlNode* code = xml::child(body, ns::kSoap, "Code");
    const std::string value = xml::text(xml::child(code, ns::kSoap, "Value"));
    const std::string sub = xml::text(xml::child(xml::child(code, ns::kSoap, "Subcode"), ns::kSoap, "Value"));
    return text + " (" + value + (sub.empty() ? "" : ", " + sub) + ")";
}

}  // namespace blobstreaming::sdc
