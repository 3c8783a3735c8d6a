#include "blobstreaming/sdc/Mdib.h"

#include "Namespaces.h"
#include "Uuid.h"
#include "Xml.h"
#include "blobstreaming/sdc/SdcError.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

namespace blobstreaming::sdc {

namespace {

const xmlChar* x(const char* s) { return reinterpret_cast<const xmlChar*>(s); }
const char* chars(const xmlChar* s) { return reinterpret_cast<const char*>(s); }

/// Descriptor elements of the participant model and the descriptor type they
/// have when no xsi:type is given (empty: xsi:type is mandatory).
const std::unordered_map<std::string, std::string>& descriptor_elements()
{
    static const std::unordered_map<std::string, std::string> table{
        {"Mds", "MdsDescriptor"},
        {"Vmd", "VmdDescriptor"},
        {"Channel", "ChannelDescriptor"},
        {"Metric", ""},
        {"AlertSystem", "AlertSystemDescriptor"},
        {"AlertCondition", "AlertConditionDescriptor"},
        {"AlertSignal", "AlertSignalDescriptor"},
        {"Sco", "ScoDescriptor"},
        {"Operation", ""},
        {"SystemContext", "SystemContextDescriptor"},
        {"PatientContext", "PatientContextDescriptor"},
        {"LocationContext", "LocationContextDescriptor"},
        {"EnsembleContext", "EnsembleContextDescriptor"},
        {"WorkflowContext", "WorkflowContextDescriptor"},
        {"OperatorContext", "OperatorContextDescriptor"},
        {"MeansContext", "MeansContextDescriptor"},
        {"Clock", "ClockDescriptor"},
        {"Battery", "BatteryDescriptor"},
    };
    return table;
}

bool ends_with(const std::string& s, const std::string& suffix)
{
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// xsd:decimal has no exponent: integers print as integers, others fixed.
std::string decimal(double value)
{
    char text[64];
    if (std::nearbyint(value) == value && std::fabs(value) < 1e18) {
        std::snprintf(text, sizeof text, "%.0f", value);
        return text;
    }
    std::snprintf(text, sizeof text, "%.9f", value);
    std::string s = text;
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

bool is_decimal(const std::string& v)
{
    std::size_t i = (!v.empty() && (v[0] == '+' || v[0] == '-')) ? 1 : 0;
    bool digits = false, point = false;
    for (; i < v.size(); ++i) {
        if (v[i] >= '0' && v[i] <= '9') digits = true;
        else if (v[i] == '.' && !point) point = true;
        else return false;
    }
    return digits;
}

/// A handle or code of the description changes: 1 to 256 printable
/// characters without white space (they travel in whitespace-separated lists).
void check_token(const char* what, const std::string& value)
{
    if (value.empty() || value.size() > 256)
        throw SdcError(Errc::invalid_argument, std::string(what) + " \"" + value + "\": must be 1 to 256 characters");
    for (const char c : value)
        if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
            throw SdcError(Errc::invalid_argument, std::string(what) + " \"" + value +
                                                       "\": white space and control characters are not allowed");
}

/// The descriptor attributes that update_metric may set, and their values.
void check_metric_attribute(const std::string& name, const std::string& value, bool numeric)
{
    static const std::unordered_map<std::string, std::vector<std::string>> enums{
        {"MetricCategory", {"Unspec", "Msrmt", "Clc", "Set", "Preset", "Rcmm"}},
        {"MetricAvailability", {"Intr", "Cont"}},
        {"SafetyClassification", {"Inf", "MedA", "MedB", "MedC"}},
        {"DerivationMethod", {"Auto", "Man"}},
    };
    if (name == "Resolution") {
        if (!numeric)
            throw SdcError(Errc::invalid_argument, "attribute Resolution: only a NumericMetricDescriptor has it");
        if (!is_decimal(value))
            throw SdcError(Errc::invalid_argument,
                           "Resolution \"" + value + "\": not an xsd:decimal (digits with an optional point)");
        return;
    }
    const auto allowed = enums.find(name);
    if (allowed == enums.end())
        throw SdcError(Errc::invalid_argument,
                       "attribute \"" + name +
                           "\" cannot be set: allowed are MetricCategory, MetricAvailability, SafetyClassification, "
                           "DerivationMethod and (numeric metrics) Resolution");
    if (std::find(allowed->second.begin(), allowed->second.end(), value) == allowed->second.end()) {
        std::string list;
        for (const auto& v : allowed->second) list += (list.empty() ? "" : ", ") + v;
        throw SdcError(Errc::invalid_argument, name + " \"" + value + "\": allowed are " + list);
    }
}

std::string read_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) throw SdcError(Errc::invalid_mdib, "MDIB " + path + ": cannot open the file");
    std::ostringstream content;
    content << in.rdbuf();
    return content.str();
}

xmlNode* find_descendant(xmlNode* node, const char* ns_uri, const char* local, int depth = 0)
{
    if (xml::is(node, ns_uri, local)) return node;
    if (depth > 8) return nullptr;
    for (xmlNode* c = xml::first_element(node); c != nullptr; c = xml::next_element(c))
        if (xmlNode* found = find_descendant(c, ns_uri, local, depth + 1)) return found;
    return nullptr;
}

}  // namespace

struct Mdib::Impl {
    struct Descriptor {
        xmlNode* node = nullptr;
        std::size_t mds = 0;  ///< index into mds_nodes
        std::string type;     ///< local part of the descriptor type
    };
    struct State {
        std::string descriptor_handle;
        std::string type;  ///< local part of xsi:type
        xmlNode* node = nullptr;
        std::string cache;
        bool dirty = true;
    };

    std::string what;
    xml::DocPtr doc;
    xml::DocPtr generated;  ///< default states, when the file had none
    xml::DocPtr added;      ///< states of descriptors added at run time
    /// Versions of removed descriptors and their states: a handle that comes
    /// back continues them (BICEPS: versions never go back for a handle).
    std::unordered_map<std::string, std::pair<unsigned long long, unsigned long long>> removed_versions;
    xmlNode* description = nullptr;
    std::vector<xmlNode*> mds_nodes;
    std::vector<std::string> mds_cache;
    std::unordered_map<std::string, Descriptor> descriptors;
    std::vector<State> states;
    std::unordered_map<std::string, std::vector<std::size_t>> by_descriptor;
    std::unordered_map<std::string, std::size_t> by_state_handle;
    std::string sequence_id;
    std::uint64_t version = 0;
    mutable std::mutex mutex;

    [[noreturn]] void fail(const std::string& why) const
    {
        throw SdcError(Errc::invalid_mdib, "MDIB " + what + ": " + why);
    }

    void index_descriptors(xmlNode* node, std::size_t mds, int depth)
    {
        if (depth > 64) fail("descriptor tree deeper than 64 levels");
        for (xmlNode* c = xml::first_element(node); c != nullptr; c = xml::next_element(c)) {
            if (c->ns == nullptr || std::string(chars(c->ns->href)) != ns::kPm) continue;
            const auto known = descriptor_elements().find(chars(c->name));
            if (known == descriptor_elements().end()) continue;
            const std::string handle = xml::attribute(c, "Handle");
            if (handle.empty())
                fail(std::string("a pm:") + chars(c->name) + " descriptor on line " + std::to_string(c->line) +
                     " has no Handle");
            std::string type = xml::qname_local(xml::attribute_ns(c, "type", ns::kXsi));
            if (type.empty()) type = known->second;
            if (type.empty()) fail("descriptor \"" + handle + "\" (pm:" + chars(c->name) + ") has no xsi:type");
            std::size_t owner = mds;
            if (known->first == "Mds") {
                owner = mds_nodes.size();
                mds_nodes.push_back(c);
            }
            if (!descriptors.emplace(handle, Descriptor{c, owner, type}).second)
                fail("duplicate descriptor handle \"" + handle + "\"");
            index_descriptors(c, owner, depth + 1);
        }
    }

    void add_state(xmlNode* node)
    {
        State s;
        s.node = node;
        s.descriptor_handle = xml::attribute(node, "DescriptorHandle");
        s.type = xml::qname_local(xml::attribute_ns(node, "type", ns::kXsi));
        if (s.descriptor_handle.empty())
            fail("a pm:State on line " + std::to_string(node->line) + " has no DescriptorHandle");
        if (descriptors.count(s.descriptor_handle) == 0)
            fail("state of unknown descriptor \"" + s.descriptor_handle + "\"");
        const std::string handle = xml::attribute(node, "Handle");
        const std::size_t index = states.size();
        if (!handle.empty()) by_state_handle.emplace(handle, index);
        else if (!by_descriptor[s.descriptor_handle].empty())
            fail("two single states of descriptor \"" + s.descriptor_handle + "\"");
        by_descriptor[s.descriptor_handle].push_back(index);
        states.push_back(std::move(s));
    }

    /// Default states as sdc11073 creates them for an MDIB without MdState,
    /// plus one unassociated state per context descriptor.
    void generate_states()
    {
        generated.reset(xmlNewDoc(x("1.0")));
        xmlNode* root = xmlNewDocNode(generated.get(), nullptr, x("MdState"), nullptr);
        xmlDocSetRootElement(generated.get(), root);
        xmlNs* pm = xmlNewNs(root, x(ns::kPm), x("pm"));
        xmlNs* xsi = xmlNewNs(root, x(ns::kXsi), x("xsi"));
        xmlSetNs(root, pm);
        // Document order, so that GetMdState lists states as the file lists descriptors.
        std::vector<const std::pair<const std::string, Descriptor>*> all;
        for (const auto& d : descriptors) all.push_back(&d);
        std::sort(all.begin(), all.end(), [](const auto* a, const auto* b) {
            return xmlGetLineNo(a->second.node) < xmlGetLineNo(b->second.node) ||
                   (xmlGetLineNo(a->second.node) == xmlGetLineNo(b->second.node) && a->first < b->first);
        });
        for (const auto* d : all) {
            const std::string& type = d->second.type;
            const std::string state_type = type.substr(0, type.size() - std::string("Descriptor").size()) + "State";
            xmlNode* s = xmlNewChild(root, pm, x("State"), nullptr);
            xmlNewNsProp(s, xsi, x("type"), x(("pm:" + state_type).c_str()));
            xmlNewProp(s, x("DescriptorHandle"), x(d->first.c_str()));
            const std::string dv = xml::attribute(d->second.node, "DescriptorVersion");
            xmlNewProp(s, x("DescriptorVersion"), x(dv.empty() ? "0" : dv.c_str()));
            if (ends_with(type, "ContextDescriptor") && type != "SystemContextDescriptor") {
                // A context is a multi-state. One unassociated state per
                // descriptor, so that a GetMdib holds context states (the
                // sdc11073 ConsumerMdib asks a ContextService otherwise).
                std::string handle = d->first + ".state";
                for (int n = 1; descriptors.count(handle) != 0 && n < 100; ++n)
                    handle = d->first + ".state" + std::to_string(n);
                xmlNewProp(s, x("Handle"), x(handle.c_str()));
                xmlNewProp(s, x("ContextAssociation"), x("No"));
            } else if (ends_with(state_type, "OperationState")) {
                xmlNewProp(s, x("OperatingMode"), x("En"));
            } else if (!ends_with(state_type, "MetricState")) {
                xmlNewProp(s, x("ActivationState"), x("On"));
                if (ends_with(state_type, "AlertConditionState")) xmlNewProp(s, x("Presence"), x("false"));
                if (state_type == "LimitAlertConditionState") {
                    xmlNewProp(s, x("MonitoredAlertLimits"), x("None"));
                    xmlNewChild(s, pm, x("Limits"), nullptr);  // required by the schema
                }
                if (state_type == "AlertSignalState") xmlNewProp(s, x("Presence"), x("Off"));
                if (state_type == "ClockState") xmlNewProp(s, x("RemoteSync"), x("false"));
            }
            add_state(s);
        }
    }

    const std::string& state_text(State& s) const
    {
        if (s.dirty) {
            s.cache = xml::serialize_scoped(s.node);
            s.dirty = false;
        }
        return s.cache;
    }

    State& metric_state(const std::string& handle, const char* kind)
    {
        const auto found = by_descriptor.find(handle);
        if (found == by_descriptor.end() || found->second.size() != 1)
            throw SdcError(Errc::unknown_handle,
                           "MDIB " + what + ": no single state with descriptor handle \"" + handle + "\"");
        State& s = states[found->second.front()];
        if (s.type != kind && !(std::string(kind) == "StringMetricState" && s.type == "EnumStringMetricState"))
            throw SdcError(Errc::not_a_metric,
                           "MDIB " + what + ": state \"" + handle + "\" is a " + s.type + ", not a " + kind);
        return s;
    }

    /// The state as `<msg:MetricState …>` (a report part): the serialized
    /// fragment with its element renamed and the message namespace declared.
    std::string report_text(State& s) const
    {
        std::string text = state_text(s);
        const std::string qname = s.node->ns != nullptr && s.node->ns->prefix != nullptr
                                      ? std::string(chars(s.node->ns->prefix)) + ":" + chars(s.node->name)
                                      : std::string(chars(s.node->name));
        const std::string open_tag = "<" + qname;
        if (text.compare(0, open_tag.size(), open_tag) != 0) return text;
        const std::string tag_end = text.substr(0, text.find('>'));
        // A prefix of our own unless the fragment already binds msg: to the message namespace.
        std::string prefix = "msg";
        std::string decl = std::string(" xmlns:msg=\"") + ns::kMsg + "\"";
        if (tag_end.find(decl) != std::string::npos) decl.clear();
        else if (tag_end.find(" xmlns:msg=") != std::string::npos) {
            prefix = "bsmsg";
            decl = std::string(" xmlns:bsmsg=\"") + ns::kMsg + "\"";
        }
        const std::string name = prefix + ":MetricState";
        std::string out = "<" + name + decl + text.substr(open_tag.size());
        const std::string close_tag = "</" + qname + ">";
        if (out.size() >= close_tag.size() &&
            out.compare(out.size() - close_tag.size(), close_tag.size(), close_tag) == 0)
            out.replace(out.size() - close_tag.size(), close_tag.size(), "</" + name + ">");
        return out;
    }

    // --- description changes ------------------------------------------------

    static unsigned long long version_of(const xmlNode* node, const char* name)
    {
        const std::string v = xml::attribute(node, name);
        try {
            return v.empty() ? 0 : std::stoull(v);
        } catch (const std::exception&) {
            return 0;
        }
    }

    /// Rebuilds by_descriptor / by_state_handle after `states` changed.
    void reindex_states()
    {
        by_descriptor.clear();
        by_state_handle.clear();
        for (std::size_t i = 0; i < states.size(); ++i) {
            const std::string handle = xml::attribute(states[i].node, "Handle");
            if (!handle.empty()) by_state_handle.emplace(handle, i);
            by_descriptor[states[i].descriptor_handle].push_back(i);
        }
    }

    bool is_descriptor_element(const xmlNode* c) const
    {
        return c->ns != nullptr && std::string(chars(c->ns->href)) == ns::kPm &&
               descriptor_elements().count(chars(c->name)) != 0;
    }

    /// `node` copied as a report element `<msg:NAME>` (BICEPS message
    /// namespace) with xsi:type, without nested descriptors (R5024), its
    /// namespace declarations included; serialized.
    std::string report_element(const xmlNode* node, const char* name, const std::string& type) const
    {
        xmlNode* copy = xmlDocCopyNode(const_cast<xmlNode*>(node), node->doc, 1);
        if (copy == nullptr) throw SdcError(Errc::invalid_mdib, "MDIB " + what + ": out of memory copying a node");
        for (xmlNode* c = xml::first_element(copy); c != nullptr;) {
            xmlNode* next = xml::next_element(c);
            if (is_descriptor_element(c)) {
                xmlUnlinkNode(c);
                xmlFreeNode(c);
            }
            c = next;
        }
        // Every namespace in scope at the original (QName values such as xsi:type keep resolving).
        if (xmlNs** list = xmlGetNsList(node->doc, node)) {
            for (xmlNs** n = list; *n != nullptr; ++n)
                if ((*n)->prefix == nullptr || std::string(chars((*n)->prefix)) != "xml")
                    xmlNewNs(copy, (*n)->href, (*n)->prefix);  // null when the prefix is declared there already
            xmlFree(list);
        }
        auto declared = [copy](const char* href) -> xmlNs* {
            for (xmlNs* d = copy->nsDef; d != nullptr; d = d->next)
                if (std::string(chars(d->href)) == href && d->prefix != nullptr) return d;
            return nullptr;
        };
        auto bind = [&](const char* href, const char* prefix) -> xmlNs* {
            if (xmlNs* d = declared(href)) return d;
            for (int n = 0; n < 100; ++n) {
                const std::string p = n == 0 ? prefix : std::string(prefix) + std::to_string(n);
                if (xmlNs* made = xmlNewNs(copy, x(href), x(p.c_str()))) return made;
            }
            throw SdcError(Errc::invalid_mdib, "MDIB " + what + ": no free namespace prefix for " + href);
        };
        xmlNs* msg = bind(ns::kMsg, "msg");
        xmlNs* pm = bind(ns::kPm, "pm");
        xmlNs* xsi = bind(ns::kXsi, "xsi");
        xmlNodeSetName(copy, x(name));
        xmlSetNs(copy, msg);
        if (xml::attribute_ns(copy, "type", ns::kXsi).empty())
            xmlSetNsProp(copy, xsi, x("type"), x((std::string(chars(pm->prefix)) + ":" + type).c_str()));
        std::string out = xml::serialize_scoped(copy);
        xmlFreeNode(copy);
        return out;
    }

    /// One `msg:ReportPart` of a DescriptionModificationReport.
    std::string report_part(const char* modification, const std::string& handle, bool with_state) const
    {
        const Descriptor& d = descriptors.at(handle);
        std::string part = std::string("<msg:ReportPart xmlns:msg=\"") + ns::kMsg + "\"";
        const xmlNode* parent = d.node->parent;
        if (parent != nullptr && is_descriptor_element(parent))
            part += " ParentDescriptor=\"" + xml::escape(xml::attribute(parent, "Handle")) + "\"";
        part += std::string(" ModificationType=\"") + modification + "\"><msg:SourceMds>" +
                xml::escape_text(xml::attribute(mds_nodes[d.mds], "Handle")) + "</msg:SourceMds>";
        part += report_element(d.node, "Descriptor", d.type);
        if (with_state)
            if (const auto found = by_descriptor.find(handle); found != by_descriptor.end())
                for (const std::size_t i : found->second)
                    part += report_element(states[i].node, "State", states[i].type);
        return part + "</msg:ReportPart>";
    }

    /// DescriptorVersion +1 of `handle`, its states follow (DescriptorVersion, StateVersion +1).
    void bump_descriptor(const std::string& handle)
    {
        xmlNode* node = descriptors.at(handle).node;
        const std::string next = std::to_string(version_of(node, "DescriptorVersion") + 1);
        xmlSetProp(node, x("DescriptorVersion"), x(next.c_str()));
        if (const auto found = by_descriptor.find(handle); found != by_descriptor.end())
            for (const std::size_t i : found->second) {
                State& s = states[i];
                xmlSetProp(s.node, x("DescriptorVersion"), x(next.c_str()));
                xmlSetProp(s.node, x("StateVersion"),
                           x(std::to_string(version_of(s.node, "StateVersion") + 1).c_str()));
                s.dirty = true;
            }
    }

    /// The end of every description change: DescriptionVersion, the MDS's
    /// cached GetMdDescription text, MdibVersion.
    void description_changed(std::size_t mds)
    {
        xmlSetProp(description, x("DescriptionVersion"),
                   x(std::to_string(version_of(description, "DescriptionVersion") + 1).c_str()));
        mds_cache[mds] = xml::serialize_scoped(mds_nodes[mds]);
        ++version;
    }

    Descriptor& metric_descriptor(const std::string& handle, const char* doing)
    {
        const auto found = descriptors.find(handle);
        if (found == descriptors.end())
            throw SdcError(Errc::unknown_handle, std::string("cannot ") + doing + " metric descriptor \"" + handle +
                                                     "\": MDIB " + what + " has no descriptor with that handle");
        if (!ends_with(found->second.type, "MetricDescriptor"))
            throw SdcError(Errc::not_a_metric, std::string("cannot ") + doing + " \"" + handle + "\": it is a " +
                                                   found->second.type + ", not a metric descriptor");
        return found->second;
    }

    /// Sets pm:Unit (Code, and its ConceptDescription) of a metric descriptor node.
    static void set_unit(xmlNode* metric, const std::string& code, const std::string& text)
    {
        xmlNs* pm = xmlSearchNsByHref(metric->doc, metric, x(ns::kPm));
        xmlNode* unit = xmlNewNode(pm, x("Unit"));
        xmlNewProp(unit, x("Code"), x(code.c_str()));
        if (!text.empty()) {
            xmlNode* concept = xmlNewTextChild(unit, pm, x("ConceptDescription"), x(text.c_str()));
            xmlNewProp(concept, x("Lang"), x("en-US"));
        }
        if (xmlNode* old = xml::child(metric, ns::kPm, "Unit")) {
            xmlReplaceNode(old, unit);
            xmlFreeNode(old);
            return;
        }
        // pm:Unit follows Extension and Type (AbstractMetricDescriptor's sequence).
        xmlNode* after = nullptr;
        for (xmlNode* c = xml::first_element(metric); c != nullptr; c = xml::next_element(c))
            if (c->name != nullptr &&
                (std::string(chars(c->name)) == "Extension" || std::string(chars(c->name)) == "Type"))
                after = c;
        if (after != nullptr) xmlAddNextSibling(after, unit);
        else if (xmlNode* first = xml::first_element(metric)) xmlAddPrevSibling(first, unit);
        else xmlAddChild(metric, unit);
    }

    void set_value(State& s, const std::string& value, bool bump_version = true)
    {
        xmlNode* node = s.node;
        xmlNs* pm = xmlSearchNsByHref(node->doc, node, x(ns::kPm));
        if (pm == nullptr) pm = xmlNewNs(node, x(ns::kPm), x("pm"));
        xmlNode* fresh = xmlNewNode(pm, x("MetricValue"));
        xmlNewProp(fresh, x("Value"), x(value.c_str()));
        const auto now_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        xmlNewProp(fresh, x("DeterminationTime"), x(std::to_string(now_ms).c_str()));
        xmlNode* quality = xmlNewChild(fresh, pm, x("MetricQuality"), nullptr);
        xmlNewProp(quality, x("Validity"), x("Vld"));
        if (xmlNode* old = xml::child(node, ns::kPm, "MetricValue")) {
            xmlReplaceNode(old, fresh);
            xmlFreeNode(old);
        } else if (xmlNode* first = xml::first_element(node);
                   first != nullptr && !xml::is(first, ns::kPm, "MetricValue") && first->ns != nullptr &&
                   std::string(chars(first->name)) == "Extension") {
            xmlAddNextSibling(first, fresh);
        } else if (first != nullptr) {
            xmlAddPrevSibling(first, fresh);
        } else {
            xmlAddChild(node, fresh);
        }
        const std::string old_version = xml::attribute(node, "StateVersion");
        const unsigned long long next = old_version.empty() ? 1 : std::stoull(old_version) + 1;
        xmlSetProp(node, x("StateVersion"), x(std::to_string(next).c_str()));
        s.dirty = true;
        if (bump_version) ++version;
    }
};

Mdib::Mdib(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Mdib::Mdib(Mdib&&) noexcept = default;
Mdib& Mdib::operator=(Mdib&&) noexcept = default;
Mdib::~Mdib() = default;

Mdib Mdib::load_file(const std::string& path) { return load_string(read_file(path), path); }

Mdib Mdib::load_string(const std::string& text, const std::string& what)
{
    auto impl = std::make_unique<Impl>();
    impl->what = what;
    std::string error;
    impl->doc = xml::parse(text, error);
    if (!impl->doc) impl->fail("not well-formed XML: " + error);
    xmlNode* root = xmlDocGetRootElement(impl->doc.get());
    impl->description = find_descendant(root, ns::kPm, "MdDescription");
    if (impl->description == nullptr)
        impl->fail("no pm:MdDescription element (namespace " + std::string(ns::kPm) + ")");
    impl->index_descriptors(impl->description, 0, 0);
    if (impl->mds_nodes.empty()) impl->fail("pm:MdDescription holds no pm:Mds");
    xmlNode* md_state = find_descendant(root, ns::kPm, "MdState");
    if (md_state != nullptr) {
        for (xmlNode* s = xml::first_element(md_state); s != nullptr; s = xml::next_element(s))
            if (xml::is(s, ns::kPm, "State")) impl->add_state(s);
    } else {
        impl->generate_states();
    }
    xmlNode* mdib = find_descendant(root, ns::kMsg, "Mdib");
    const std::string version = xml::attribute(mdib != nullptr ? mdib : root, "MdibVersion");
    try {
        impl->version = version.empty() ? 0 : std::stoull(version);
    } catch (const std::exception&) {
        impl->fail("MdibVersion \"" + version + "\" is not a number");
    }
    impl->sequence_id = make_urn_uuid();
    impl->mds_cache.resize(impl->mds_nodes.size());
    for (std::size_t i = 0; i < impl->mds_nodes.size(); ++i)
        impl->mds_cache[i] = xml::serialize_scoped(impl->mds_nodes[i]);
    return Mdib(std::move(impl));
}

std::string Mdib::sequence_id() const { return impl_->sequence_id; }

std::uint64_t Mdib::mdib_version() const
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    return impl_->version;
}

std::size_t Mdib::descriptor_count() const
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    return impl_->descriptors.size();
}

std::size_t Mdib::state_count() const
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    return impl_->states.size();
}

bool Mdib::has_descriptor(const std::string& handle) const
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    return impl_->descriptors.count(handle) != 0;
}

std::vector<std::string> Mdib::state_handles() const
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    std::vector<std::string> handles;
    for (const auto& s : impl_->states)
        if (const auto d = impl_->by_descriptor.find(s.descriptor_handle); d->second.size() == 1)
            handles.push_back(s.descriptor_handle);
    return handles;
}

std::string Mdib::states_xml(const std::vector<std::string>& handles, std::uint64_t& version) const
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    version = impl_->version;
    std::string out;
    if (handles.empty()) {
        for (auto& s : impl_->states) out += impl_->state_text(s);
        return out;
    }
    std::set<std::size_t> seen;
    for (const auto& h : handles) {
        if (const auto d = impl_->by_descriptor.find(h); d != impl_->by_descriptor.end()) {
            for (const std::size_t i : d->second)
                if (seen.insert(i).second) out += impl_->state_text(impl_->states[i]);
        } else if (const auto s = impl_->by_state_handle.find(h); s != impl_->by_state_handle.end()) {
            if (seen.insert(s->second).second) out += impl_->state_text(impl_->states[s->second]);
        } else if (impl_->descriptors.count(h) == 0) {
            throw SdcError(Errc::unknown_handle, "unknown handle \"" + h + "\": no descriptor or state has it");
        }
    }
    return out;
}

std::string Mdib::mds_xml(const std::vector<std::string>& handles, std::uint64_t& version,
                          std::string* description_attributes) const
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    version = impl_->version;
    if (description_attributes != nullptr) {
        const std::string v = xml::attribute(impl_->description, "DescriptionVersion");
        *description_attributes = v.empty() ? std::string() : " DescriptionVersion=\"" + xml::escape(v) + "\"";
    }
    std::string out;
    if (handles.empty()) {
        for (const auto& m : impl_->mds_cache) out += m;
        return out;
    }
    std::set<std::size_t> wanted;
    for (const auto& h : handles) {
        const auto d = impl_->descriptors.find(h);
        if (d == impl_->descriptors.end())
            throw SdcError(Errc::unknown_handle, "unknown handle \"" + h + "\": no descriptor has it");
        wanted.insert(d->second.mds);
    }
    for (const std::size_t i : wanted) out += impl_->mds_cache[i];
    return out;
}

std::string Mdib::description_attributes() const
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    const std::string v = xml::attribute(impl_->description, "DescriptionVersion");
    return v.empty() ? std::string() : " DescriptionVersion=\"" + xml::escape(v) + "\"";
}

void Mdib::set_metric(const std::string& handle, double value)
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->set_value(impl_->metric_state(handle, "NumericMetricState"), decimal(value));
}

void Mdib::set_metric(const std::string& handle, const std::string& value)
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->set_value(impl_->metric_state(handle, "StringMetricState"), value);
}

}  // namespace blobstreaming::sdc

namespace blobstreaming::sdc {

std::string Mdib::set_metrics(const std::vector<MetricUpdate>& updates, std::uint64_t& version)
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    std::vector<Impl::State*> targets;
    for (const auto& u : updates)
        targets.push_back(&impl_->metric_state(u.handle, u.is_text ? "StringMetricState" : "NumericMetricState"));
    std::string parts;
    for (std::size_t i = 0; i < updates.size(); ++i)
        impl_->set_value(*targets[i], updates[i].is_text ? updates[i].text : decimal(updates[i].number), false);
    if (!updates.empty()) ++impl_->version;
    std::set<Impl::State*> seen;
    for (Impl::State* s : targets)
        if (seen.insert(s).second) parts += impl_->report_text(*s);
    version = impl_->version;
    return parts;
}

std::string Mdib::add_metric(const std::string& parent, const MetricDescriptorSpec& spec, std::uint64_t& version)
{
    check_token("handle", spec.handle);
    check_token("unit code", spec.unit_code);
    if (!spec.type_code.empty()) check_token("type code", spec.type_code);
    check_metric_attribute("MetricCategory", spec.metric_category, spec.numeric);
    check_metric_attribute("MetricAvailability", spec.metric_availability, spec.numeric);
    if (!spec.safety_classification.empty())
        check_metric_attribute("SafetyClassification", spec.safety_classification, spec.numeric);
    if (spec.numeric) check_metric_attribute("Resolution", spec.resolution, true);

    Impl& m = *impl_;
    std::lock_guard<std::mutex> lock(m.mutex);
    const auto owner = m.descriptors.find(parent);
    if (owner == m.descriptors.end())
        throw SdcError(Errc::unknown_handle, "cannot add metric \"" + spec.handle + "\": parent \"" + parent +
                                                 "\" is not a descriptor of MDIB " + m.what);
    if (owner->second.type != "ChannelDescriptor")
        throw SdcError(Errc::invalid_argument, "cannot add metric \"" + spec.handle + "\" under \"" + parent +
                                                   "\": it is a " + owner->second.type +
                                                   "; metrics are added under a ChannelDescriptor");
    if (m.descriptors.count(spec.handle) != 0 || m.by_state_handle.count(spec.handle) != 0)
        throw SdcError(Errc::already_exists,
                       "cannot add metric \"" + spec.handle + "\": the handle is in use in MDIB " + m.what);

    unsigned long long descriptor_version = 0, state_version = 0;
    if (const auto old = m.removed_versions.find(spec.handle); old != m.removed_versions.end()) {
        descriptor_version = old->second.first + 1;
        state_version = old->second.second + 1;
    }
    const std::string type = spec.numeric ? "NumericMetricDescriptor" : "StringMetricDescriptor";
    xmlNode* channel = owner->second.node;
    const std::size_t mds = owner->second.mds;  // `owner` does not survive the emplace below
    xmlNs* pm = xmlSearchNsByHref(channel->doc, channel, x(ns::kPm));
    xmlNs* xsi = xmlSearchNsByHref(channel->doc, channel, x(ns::kXsi));
    if (xsi == nullptr) xsi = xmlNewNs(channel, x(ns::kXsi), x("xsi"));
    const std::string pm_prefix = pm->prefix != nullptr ? std::string(chars(pm->prefix)) + ":" : "";
    xmlNode* metric = xmlNewChild(channel, pm, x("Metric"), nullptr);
    xmlNewProp(metric, x("Handle"), x(spec.handle.c_str()));
    xmlNewProp(metric, x("DescriptorVersion"), x(std::to_string(descriptor_version).c_str()));
    if (!spec.safety_classification.empty())
        xmlNewProp(metric, x("SafetyClassification"), x(spec.safety_classification.c_str()));
    xmlNewProp(metric, x("MetricCategory"), x(spec.metric_category.c_str()));
    xmlNewProp(metric, x("MetricAvailability"), x(spec.metric_availability.c_str()));
    if (spec.numeric) xmlNewProp(metric, x("Resolution"), x(spec.resolution.c_str()));
    xmlNewNsProp(metric, xsi, x("type"), x((pm_prefix + type).c_str()));
    if (!spec.type_code.empty()) {
        xmlNode* t = xmlNewChild(metric, pm, x("Type"), nullptr);
        xmlNewProp(t, x("Code"), x(spec.type_code.c_str()));
        if (!spec.type_text.empty()) {
            xmlNode* concept = xmlNewTextChild(t, pm, x("ConceptDescription"), x(spec.type_text.c_str()));
            xmlNewProp(concept, x("Lang"), x("en-US"));
        }
    }
    Impl::set_unit(metric, spec.unit_code, spec.unit_text);
    m.descriptors.emplace(spec.handle, Impl::Descriptor{metric, mds, type});

    if (!m.added) {
        m.added.reset(xmlNewDoc(x("1.0")));
        xmlNode* root = xmlNewDocNode(m.added.get(), nullptr, x("MdState"), nullptr);
        xmlDocSetRootElement(m.added.get(), root);
        xmlSetNs(root, xmlNewNs(root, x(ns::kPm), x("pm")));
        xmlNewNs(root, x(ns::kXsi), x("xsi"));
    }
    xmlNode* root = xmlDocGetRootElement(m.added.get());
    xmlNode* state = xmlNewChild(root, root->ns, x("State"), nullptr);
    const std::string state_type = spec.numeric ? "NumericMetricState" : "StringMetricState";
    xmlNewNsProp(state, xmlSearchNsByHref(m.added.get(), root, x(ns::kXsi)), x("type"),
                 x(("pm:" + state_type).c_str()));
    xmlNewProp(state, x("DescriptorHandle"), x(spec.handle.c_str()));
    xmlNewProp(state, x("DescriptorVersion"), x(std::to_string(descriptor_version).c_str()));
    xmlNewProp(state, x("StateVersion"), x(std::to_string(state_version).c_str()));
    Impl::State st;
    st.node = state;
    st.descriptor_handle = spec.handle;
    st.type = state_type;
    m.states.push_back(std::move(st));
    m.reindex_states();
    m.removed_versions.erase(spec.handle);

    m.bump_descriptor(parent);
    m.description_changed(mds);
    version = m.version;
    return m.report_part("Upt", parent, true) + m.report_part("Crt", spec.handle, true);
}

std::string Mdib::update_metric(const std::string& handle, const MetricDescriptorChange& change, std::uint64_t& version)
{
    Impl& m = *impl_;
    std::lock_guard<std::mutex> lock(m.mutex);
    Impl::Descriptor& d = m.metric_descriptor(handle, "update");
    const bool numeric = d.type == "NumericMetricDescriptor";
    for (const auto& [name, value] : change.attributes) check_metric_attribute(name, value, numeric);
    if (!change.unit_code.empty()) check_token("unit code", change.unit_code);
    if (change.attributes.empty() && change.unit_code.empty())
        throw SdcError(Errc::invalid_argument, "update of metric descriptor \"" + handle +
                                                   "\": nothing to change (give attributes or a unit code)");
    for (const auto& [name, value] : change.attributes) xmlSetProp(d.node, x(name.c_str()), x(value.c_str()));
    if (!change.unit_code.empty()) Impl::set_unit(d.node, change.unit_code, change.unit_text);
    m.bump_descriptor(handle);
    m.description_changed(d.mds);
    version = m.version;
    return m.report_part("Upt", handle, true);
}

std::string Mdib::remove_metric(const std::string& handle, std::uint64_t& version)
{
    Impl& m = *impl_;
    std::lock_guard<std::mutex> lock(m.mutex);
    const Impl::Descriptor d = m.metric_descriptor(handle, "remove");
    const std::string parent = xml::attribute(d.node->parent, "Handle");
    const std::string deleted = m.report_part("Del", handle, false);

    unsigned long long state_version = 0;
    std::vector<Impl::State> kept;
    for (auto& s : m.states) {
        if (s.descriptor_handle != handle) {
            kept.push_back(std::move(s));
            continue;
        }
        state_version = std::max(state_version, Impl::version_of(s.node, "StateVersion"));
        xmlUnlinkNode(s.node);
        xmlFreeNode(s.node);
    }
    m.states = std::move(kept);
    m.reindex_states();
    m.removed_versions[handle] = {Impl::version_of(d.node, "DescriptorVersion"), state_version};
    xmlUnlinkNode(d.node);
    xmlFreeNode(d.node);
    m.descriptors.erase(handle);

    m.bump_descriptor(parent);
    m.description_changed(d.mds);
    version = m.version;
    return m.report_part("Upt", parent, true) + deleted;
}

void Mdib::mdib_xml(std::string& mds, std::string& states, std::string& description_attributes,
                    std::uint64_t& version) const
{
    std::lock_guard<std::mutex> lock(impl_->mutex);
    version = impl_->version;
    mds.clear();
    states.clear();
    for (const auto& m : impl_->mds_cache) mds += m;
    for (auto& s : impl_->states) states += impl_->state_text(s);
    const std::string v = xml::attribute(impl_->description, "DescriptionVersion");
    description_attributes = v.empty() ? std::string() : " DescriptionVersion=\"" + xml::escape(v) + "\"";
}

}  // namespace blobstreaming::sdc
