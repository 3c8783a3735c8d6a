#include "Xml.h"

#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlschemas.h>

#include <blobstreaming/sdc/SdcError.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

namespace blobstreaming::sdc::xml {

namespace {

const char* chars(const xmlChar* s) { return reinterpret_cast<const char*>(s); }

std::string trim(std::string s)
{
    const char* ws = " \t\r\n";
    const auto begin = s.find_first_not_of(ws);
    if (begin == std::string::npos) return {};
    return s.substr(begin, s.find_last_not_of(ws) - begin + 1);
}

}  // namespace

DocPtr parse(std::string_view text, std::string& error)
{
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (ctxt == nullptr) {
        error = "out of memory";
        return nullptr;
    }
    if (text.size() > static_cast<std::size_t>(INT32_MAX)) {
        xmlFreeParserCtxt(ctxt);
        error = "document too large";
        return nullptr;
    }
    const int options = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING;
    DocPtr doc(xmlCtxtReadMemory(ctxt, text.data(), static_cast<int>(text.size()), nullptr, nullptr, options));
    if (!doc || !ctxt->wellFormed) {
        const xmlError* e = xmlCtxtGetLastError(ctxt);
        error = e != nullptr && e->message != nullptr ? "line " + std::to_string(e->line) + ": " + trim(e->message)
                                                      : std::string("not well-formed XML");
        doc.reset();
    } else if (doc->intSubset != nullptr) {
        error = "DTDs are not accepted";
        doc.reset();
    }
    xmlFreeParserCtxt(ctxt);
    return doc;
}

bool is(const xmlNode* node, const char* ns_uri, const char* local)
{
    return node != nullptr && node->type == XML_ELEMENT_NODE && node->ns != nullptr &&
           std::strcmp(chars(node->ns->href), ns_uri) == 0 && std::strcmp(chars(node->name), local) == 0;
}

xmlNode* first_element(const xmlNode* node)
{
    for (xmlNode* c = node != nullptr ? node->children : nullptr; c != nullptr; c = c->next)
        if (c->type == XML_ELEMENT_NODE) return c;
    return nullptr;
}

xmlNode* next_element(const xmlNode* node)
{
    for (xmlNode* c = node->next; c != nullptr; c = c->next)
        if (c->type == XML_ELEMENT_NODE) return c;
    return nullptr;
}

xmlNode* child(const xmlNode* node, const char* ns_uri, const char* local)
{
    for (xmlNode* c = first_element(node); c != nullptr; c = next_element(c))
        if (is(c, ns_uri, local)) return c;
    return nullptr;
}

std::string text(const xmlNode* node)
{
    if (node == nullptr) return {};
    xmlChar* content = xmlNodeGetContent(node);
    std::string s = content != nullptr ? chars(content) : "";
    xmlFree(content);
    return trim(std::move(s));
}

std::string attribute(const xmlNode* node, const char* name)
{
    xmlChar* value = xmlGetNoNsProp(node, reinterpret_cast<const xmlChar*>(name));
    std::string s = value != nullptr ? chars(value) : "";
    xmlFree(value);
    return s;
}

std::string attribute_ns(const xmlNode* node, const char* name, const char* ns_uri)
{
    xmlChar* value =
        xmlGetNsProp(node, reinterpret_cast<const xmlChar*>(name), reinterpret_cast<const xmlChar*>(ns_uri));
    std::string s = value != nullptr ? chars(value) : "";
    xmlFree(value);
    return s;
}

std::string qname_namespace(const xmlNode* node, const std::string& qname)
{
    const auto colon = qname.find(':');
    const std::string prefix = colon == std::string::npos ? std::string() : qname.substr(0, colon);
    xmlNs* ns = xmlSearchNs(node->doc, const_cast<xmlNode*>(node),
                            prefix.empty() ? nullptr : reinterpret_cast<const xmlChar*>(prefix.c_str()));
    return ns != nullptr ? chars(ns->href) : "";
}

std::string qname_local(const std::string& qname)
{
    const auto colon = qname.find(':');
    return colon == std::string::npos ? qname : qname.substr(colon + 1);
}

std::string serialize_scoped(xmlNode* node)
{
    xmlBufferPtr buffer = xmlBufferCreate();
    xmlNodeDump(buffer, node->doc, node, 0, 0);
    std::string out(chars(xmlBufferContent(buffer)), static_cast<std::size_t>(xmlBufferLength(buffer)));
    xmlBufferFree(buffer);

    std::set<std::string> declared;
    for (xmlNs* d = node->nsDef; d != nullptr; d = d->next)
        declared.insert(d->prefix != nullptr ? chars(d->prefix) : "");
    std::string declarations;
    if (xmlNs** list = xmlGetNsList(node->doc, node)) {
        for (xmlNs** n = list; *n != nullptr; ++n) {
            const std::string prefix = (*n)->prefix != nullptr ? chars((*n)->prefix) : "";
            if (prefix == "xml" || !declared.insert(prefix).second) continue;
            declarations += prefix.empty() ? " xmlns=\"" : " xmlns:" + prefix + "=\"";
            declarations += escape(chars((*n)->href));
            declarations += '"';
        }
        xmlFree(list);
    }
    const auto name_end = out.find_first_of(" \t\r\n/>", 1);
    if (name_end != std::string::npos) out.insert(name_end, declarations);
    return out;
}

namespace {

/// Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
/// forms, no surrogates, at most U+10FFFF) that encodes an XML 1.0
/// character, or 0.
std::size_t xml_char_length(const unsigned char* p, std::size_t left)
{
    const unsigned c = p[0];
    if (c < 0x80) return (c >= 0x20 || c == '\t' || c == '\n' || c == '\r') ? 1 : 0;
    std::size_t n;
    unsigned code, min;
    if (c >= 0xC2 && c <= 0xDF) n = 2, code = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, code = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, code = c & 0x07, min = 0x10000;
    else return 0;
    if (left < n) return 0;
    for (std::size_t i = 1; i < n; ++i) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        code = (code << 6) | (p[i] & 0x3F);
    }
    if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF) || code == 0xFFFE || code == 0xFFFF)
        return 0;
    return n;
}

std::string escape_markup(std::string_view text, bool quotes)
{
    // Text copied from a peer's message (e.g. into a Fault reason) may hold
    // bytes that are not UTF-8 or not XML characters; each becomes U+FFFD so
    // that what we send is always well-formed.
    static constexpr char kReplacement[] = "\xEF\xBF\xBD";
    std::string out;
    out.reserve(text.size());
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    std::size_t left = text.size();
    while (left > 0) {
        std::size_t len = 1;
        switch (*p) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += quotes ? "&quot;" : "\""; break;
        default:
            len = xml_char_length(p, left);
            if (len == 0) {
                out += kReplacement;
                len = 1;
            } else {
                out.append(reinterpret_cast<const char*>(p), len);
            }
        }
        p += len;
        left -= len;
    }
    return out;
}

}  // namespace

std::string escape(std::string_view text) { return escape_markup(text, true); }

std::string escape_text(std::string_view text) { return escape_markup(text, false); }

namespace {

/// Keeps the first error libxml2 reports through a structured handler.
void first_error(void* user, xmlError* error)
{
    auto* out = static_cast<std::string*>(user);
    if (!out->empty() || !error || !error->message) return;
    std::string message = error->message;
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    *out = (error->line > 0 ? "line " + std::to_string(error->line) + ": " : std::string()) + message;
}

}  // namespace

struct BicepsSchema::Impl {
    xmlSchemaPtr schema = nullptr;
    xmlSchemaValidCtxtPtr context = nullptr;
    mutable std::mutex mutex;
    mutable std::string error;
};

BicepsSchema::BicepsSchema(const std::string& directory) : impl_(std::make_unique<Impl>())
{
    namespace fs = std::filesystem;
    const char* files[] = {"ExtensionPoint.xsd", "BICEPS_ParticipantModel.xsd", "BICEPS_MessageModel.xsd"};
    const char* namespaces[] = {"http://standards.ieee.org/downloads/11073/11073-10207-2017/extension",
                                "http://standards.ieee.org/downloads/11073/11073-10207-2017/participant",
                                "http://standards.ieee.org/downloads/11073/11073-10207-2017/message"};
    // The schemas import each other by http:// locations: a local wrapper
    // imports each namespace from its file first, so those are skipped.
    std::string wrapper = "<xsd:schema xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\">";
    for (int i = 0; i < 3; ++i) {
        const fs::path file = fs::path(directory) / files[i];
        std::error_code ec;
        if (!fs::is_regular_file(file, ec))
            throw SdcError(Errc::invalid_argument, "BICEPS schema directory \"" + directory + "\": " + files[i] +
                                                       " is missing (it needs " + files[0] + ", " + files[1] + " and " +
                                                       files[2] + ")");
        wrapper += std::string("<xsd:import namespace=\"") + namespaces[i] + "\" schemaLocation=\"" +
                   escape(fs::absolute(file, ec).string()) + "\"/>";
    }
    wrapper += "</xsd:schema>";
    xmlSchemaParserCtxtPtr parser = xmlSchemaNewMemParserCtxt(wrapper.data(), static_cast<int>(wrapper.size()));
    std::string error;
    if (parser) {
        xmlSchemaSetParserStructuredErrors(parser, first_error, &error);
        impl_->schema = xmlSchemaParse(parser);
        xmlSchemaFreeParserCtxt(parser);
    }
    if (impl_->schema) impl_->context = xmlSchemaNewValidCtxt(impl_->schema);
    if (!impl_->context) {
        if (impl_->schema) xmlSchemaFree(impl_->schema);
        throw SdcError(Errc::invalid_argument, "BICEPS schemas in \"" + directory + "\" cannot be used: " +
                                                   (error.empty() ? std::string("out of memory") : error));
    }
    xmlSchemaSetValidStructuredErrors(impl_->context, first_error, &impl_->error);
}

BicepsSchema::~BicepsSchema()
{
    xmlSchemaFreeValidCtxt(impl_->context);
    xmlSchemaFree(impl_->schema);
}

std::string BicepsSchema::validate(xmlNode* element) const
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->error.clear();
    const int rc = xmlSchemaValidateOneElement(impl_->context, element);
    if (rc == 0) return {};
    return impl_->error.empty() ? "schema validation failed (libxml2 code " + std::to_string(rc) + ")" : impl_->error;
}

}  // namespace blobstreaming::sdc::xml
