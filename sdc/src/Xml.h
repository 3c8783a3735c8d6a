#pragma once
// libxml2 helpers shared by the MDIB, the SOAP parser and the consumer.
// Internal: no public header includes libxml2.

#include <libxml/tree.h>

#include <memory>
#include <string>
#include <string_view>

namespace blobstreaming::sdc::xml {

struct DocFree {
    void operator()(xmlDoc* doc) const noexcept { xmlFreeDoc(doc); }
};
using DocPtr = std::unique_ptr<xmlDoc, DocFree>;

/// Parses `text` without network access, entity expansion or DTD loading.
/// Returns null and sets `error` (libxml2's first message, trimmed) on failure.
DocPtr parse(std::string_view text, std::string& error);

/// True when `node` is an element named `local` in namespace `ns_uri`.
bool is(const xmlNode* node, const char* ns_uri, const char* local);
/// First element child of `node` (null if none).
xmlNode* first_element(const xmlNode* node);
/// Next element sibling (null if none).
xmlNode* next_element(const xmlNode* node);
/// First element child named {ns_uri}local.
xmlNode* child(const xmlNode* node, const char* ns_uri, const char* local);
/// Text content, whitespace-trimmed.
std::string text(const xmlNode* node);
/// Attribute without namespace; empty if absent.
std::string attribute(const xmlNode* node, const char* name);
/// Attribute in a namespace; empty if absent.
std::string attribute_ns(const xmlNode* node, const char* name, const char* ns_uri);
/// The namespace URI of a QName value ("pm:NumericMetricState") as seen from `node`.
std::string qname_namespace(const xmlNode* node, const std::string& qname);
/// The local part of a QName value.
std::string qname_local(const std::string& qname);

/// Serializes `node` and its subtree; the start tag also declares every
/// namespace in scope at `node` (so QName values such as xsi:type keep
/// resolving when the fragment is pasted into another document).
std::string serialize_scoped(xmlNode* node);

/// Escapes & < > " for text and attribute values. Bytes that are not
/// UTF-8, or not XML characters, become U+FFFD.
std::string escape(std::string_view text);
/// Escapes & < > for element content (quotes stay readable); like escape().
std::string escape_text(std::string_view text);

/// The BICEPS message schema (IEEE 11073-10207 BICEPS_MessageModel.xsd with
/// the ParticipantModel and ExtensionPoint schemas it imports), loaded from
/// a directory that holds the three files, without network access.
/// validate() is thread-safe (one validation at a time).
class BicepsSchema {
public:
    /// Throws SdcError(invalid_argument) naming the file and libxml2's
    /// message when the schemas cannot be read.
    explicit BicepsSchema(const std::string& directory);
    ~BicepsSchema();
    BicepsSchema(const BicepsSchema&) = delete;
    BicepsSchema& operator=(const BicepsSchema&) = delete;

    /// Validates `element` and its subtree; empty when valid, otherwise the
    /// first violation (line and message).
    std::string validate(xmlNode* element) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace blobstreaming::sdc::xml
