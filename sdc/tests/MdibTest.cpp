#include "blobstreaming/sdc/Mdib.h"

#include "blobstreaming/sdc/SdcError.h"

#define BOOST_TEST_MODULE Mdib
#include <boost/test/unit_test.hpp>

using namespace blobstreaming::sdc;
using blobstreaming::Errc;

namespace {

const std::string kData = SDC_TEST_DATA;

const std::string kSmall =
    "<msg:GetMdibResponse xmlns:msg=\"http://standards.ieee.org/downloads/11073/11073-10207-2017/message\" "
    "xmlns:pm=\"http://standards.ieee.org/downloads/11073/11073-10207-2017/participant\" "
    "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" SequenceId=\"urn:oid:1\">"
    "<msg:Mdib SequenceId=\"urn:oid:1\" MdibVersion=\"7\"><pm:MdDescription><pm:Mds Handle=\"m\"><pm:Vmd Handle=\"v\">"
    "<pm:Channel Handle=\"c\"><pm:Metric xsi:type=\"pm:NumericMetricDescriptor\" Handle=\"n\" Resolution=\"1\" "
    "MetricCategory=\"Msrmt\" MetricAvailability=\"Cont\"><pm:Unit Code=\"1\"/></pm:Metric>"
    "<pm:Metric xsi:type=\"pm:StringMetricDescriptor\" Handle=\"s\" MetricCategory=\"Msrmt\" "
    "MetricAvailability=\"Cont\"><pm:Unit Code=\"1\"/></pm:Metric></pm:Channel></pm:Vmd></pm:Mds>"
    "</pm:MdDescription></msg:Mdib></msg:GetMdibResponse>";

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

template <class F>
std::string error_of(F&& f, Errc expected)
{
    try {
        f();
    } catch (const SdcError& e) {
        BOOST_TEST(static_cast<int>(e.code()) == static_cast<int>(expected));
        return e.what();
    }
    BOOST_FAIL("no SdcError thrown");
    return {};
}

}  // namespace

BOOST_AUTO_TEST_CASE(loads_both_sdc11073_test_mdibs)
{
    const Mdib small = Mdib::load_file(kData + "/mdib.xml");
    BOOST_TEST(small.descriptor_count() == 35u);
    BOOST_TEST(small.state_count() == 35u);  // 32 single states + one per context descriptor
    BOOST_TEST(small.has_descriptor("numeric.ch0.vmd0"));
    const Mdib big = Mdib::load_file(kData + "/70041_MDIB_Final.xml");
    BOOST_TEST(big.descriptor_count() == 100u);
    BOOST_TEST(big.mdib_version() == 174u);
}

BOOST_AUTO_TEST_CASE(state_lookup_by_handle_carries_its_namespaces)
{
    const Mdib mdib = Mdib::load_string(kSmall, "small");
    std::uint64_t version = 0;
    const std::string state = mdib.states_xml({"n"}, version);
    BOOST_TEST(version == 7u);
    BOOST_TEST(contains(state, "DescriptorHandle=\"n\""), state);
    BOOST_TEST(contains(state, "xsi:type=\"pm:NumericMetricState\""), state);
    BOOST_TEST(contains(state, "xmlns:pm=\"http://standards.ieee.org/downloads/11073/11073-10207-2017/participant\""),
               state);
    BOOST_TEST(contains(state, "xmlns:xsi="), state);
    BOOST_TEST(!contains(state, "DescriptorHandle=\"s\""));
    const std::string all = mdib.states_xml({}, version);
    BOOST_TEST((contains(all, "pm:MdsState") && contains(all, "pm:VmdState") && contains(all, "pm:ChannelState")));
    BOOST_TEST(contains(all, "ActivationState=\"On\""));
}

BOOST_AUTO_TEST_CASE(unknown_handles_are_named)
{
    const Mdib mdib = Mdib::load_string(kSmall, "small");
    std::uint64_t version = 0;
    const std::string why = error_of([&] { mdib.states_xml({"n", "nope"}, version); }, Errc::unknown_handle);
    BOOST_TEST(why == "unknown handle \"nope\": no descriptor or state has it");
    error_of([&] { mdib.mds_xml({"nope"}, version); }, Errc::unknown_handle);
}

BOOST_AUTO_TEST_CASE(description_by_handle_is_its_mds)
{
    const Mdib mdib = Mdib::load_string(kSmall, "small");
    std::uint64_t version = 0;
    const std::string mds = mdib.mds_xml({"s"}, version);
    BOOST_TEST(mds.rfind("<pm:Mds ", 0) == 0, mds);
    BOOST_TEST(contains(mds, "Handle=\"s\""));
}

BOOST_AUTO_TEST_CASE(set_metric_updates_value_and_versions)
{
    Mdib mdib = Mdib::load_string(kSmall, "small");
    mdib.set_metric("n", 42.5);
    mdib.set_metric("n", 1234567890123.0);
    mdib.set_metric("s", std::string("ok"));
    BOOST_TEST(mdib.mdib_version() == 10u);
    std::uint64_t version = 0;
    const std::string n = mdib.states_xml({"n"}, version);
    BOOST_TEST(contains(n, "Value=\"1234567890123\""), n);
    BOOST_TEST(contains(n, "StateVersion=\"2\""), n);
    BOOST_TEST(contains(n, "<pm:MetricQuality Validity=\"Vld\"/>"), n);
    BOOST_TEST(contains(mdib.states_xml({"s"}, version), "Value=\"ok\""));
    BOOST_TEST(error_of([&] { mdib.set_metric("c", 1.0); }, Errc::not_a_metric) ==
               "MDIB small: state \"c\" is a ChannelState, not a NumericMetricState");
    error_of([&] { mdib.set_metric("x", 1.0); }, Errc::unknown_handle);
}

BOOST_AUTO_TEST_CASE(bad_mdibs_are_rejected_with_reasons)
{
    BOOST_TEST(
        contains(error_of([] { Mdib::load_string("<a>", "t1"); }, Errc::invalid_mdib), "MDIB t1: not well-formed XML"));
    BOOST_TEST(contains(error_of([] { Mdib::load_string("<a/>", "t2"); }, Errc::invalid_mdib), "no pm:MdDescription"));
    std::string no_type = kSmall;
    no_type.erase(no_type.find("xsi:type=\"pm:NumericMetricDescriptor\" "), 38);
    BOOST_TEST(error_of([&] { Mdib::load_string(no_type, "t3"); }, Errc::invalid_mdib) ==
               "MDIB t3: descriptor \"n\" (pm:Metric) has no xsi:type");
    BOOST_TEST(contains(error_of([] { Mdib::load_file("/nonexistent.xml"); }, Errc::invalid_mdib), "cannot open"));
}

namespace {

/// The report part of `parts` (concatenated msg:ReportPart elements) whose ModificationType is `type`.
std::string part_of(const std::string& parts, const std::string& type)
{
    const auto at = parts.find("ModificationType=\"" + type + "\"");
    if (at == std::string::npos) return {};
    const auto start = parts.rfind("<msg:ReportPart", at);
    const auto end = parts.find("</msg:ReportPart>", at);
    return parts.substr(start, end + 17 - start);
}

MetricDescriptorSpec spec(const std::string& handle)
{
    MetricDescriptorSpec s;
    s.handle = handle;
    s.type_code = "196174";
    s.unit_code = "262656";
    s.unit_text = "no unit";
    return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(description_changes_make_report_parts_and_versions)
{
    Mdib mdib = Mdib::load_string(kSmall, "small");
    std::uint64_t version = 0;
    const std::string added = mdib.add_metric("c", spec("added"), version);
    BOOST_TEST(version == 8u);
    BOOST_TEST(mdib.mdib_version() == 8u);
    BOOST_TEST(mdib.descriptor_count() == 6u);
    BOOST_TEST(mdib.has_descriptor("added"));
    BOOST_TEST(mdib.description_attributes() == " DescriptionVersion=\"1\"");
    std::string attributes;
    mdib.mds_xml({}, version, &attributes);
    BOOST_TEST(attributes == " DescriptionVersion=\"1\"");
    // Crt: the descriptor (with xsi:type, in the message namespace) and its new state.
    const std::string crt = part_of(added, "Crt");
    BOOST_TEST(contains(crt, "ParentDescriptor=\"c\""), crt);
    BOOST_TEST(contains(crt, "<msg:SourceMds>m</msg:SourceMds>"), crt);
    BOOST_TEST(contains(crt, "<msg:Descriptor "), crt);
    BOOST_TEST(contains(crt, "xsi:type=\"pm:NumericMetricDescriptor\""), crt);
    BOOST_TEST(contains(crt, "Handle=\"added\" DescriptorVersion=\"0\""), crt);
    BOOST_TEST(contains(crt, "<pm:Unit Code=\"262656\"><pm:ConceptDescription Lang=\"en-US\">no unit"), crt);
    BOOST_TEST(contains(crt, "<msg:State "), crt);
    BOOST_TEST(contains(crt, "xsi:type=\"pm:NumericMetricState\" DescriptorHandle=\"added\" DescriptorVersion=\"0\" "
                             "StateVersion=\"0\""),
               crt);
    BOOST_TEST(contains(crt, "xmlns:msg=\"http://standards.ieee.org/downloads/11073/11073-10207-2017/message\""));
    // Upt of the channel, parts before the created one, without nested descriptors (BICEPS R5024).
    const std::string upt = part_of(added, "Upt");
    BOOST_TEST(added.find(upt) == 0u);
    BOOST_TEST(contains(upt, "ParentDescriptor=\"v\""), upt);
    BOOST_TEST(contains(upt, "xsi:type=\"pm:ChannelDescriptor\""), upt);
    BOOST_TEST(contains(upt, "Handle=\"c\""), upt);
    BOOST_TEST(contains(upt, "DescriptorVersion=\"1\""), upt);
    BOOST_TEST(!contains(upt, "Handle=\"n\""), upt);
    BOOST_TEST(contains(upt, "xsi:type=\"pm:ChannelState\""), upt);
    BOOST_TEST(contains(upt, "StateVersion=\"1\""), upt);
    // The MDIB serves the new descriptor and state.
    BOOST_TEST(contains(mdib.mds_xml({"added"}, version), "Handle=\"added\""));
    BOOST_TEST(contains(mdib.states_xml({"added"}, version), "DescriptorHandle=\"added\""));
    mdib.set_metric("added", 5.0);
    BOOST_TEST(mdib.mdib_version() == 9u);

    MetricDescriptorChange change;
    change.attributes = {{"Resolution", "0.01"}, {"MetricCategory", "Clc"}};
    change.unit_code = "264352";
    change.unit_text = "percent";
    const std::string updated = mdib.update_metric("added", change, version);
    BOOST_TEST(version == 10u);
    BOOST_TEST(part_of(updated, "Crt").empty());
    const std::string u = part_of(updated, "Upt");
    BOOST_TEST(contains(u, "DescriptorVersion=\"1\""), u);
    BOOST_TEST(contains(u, "Resolution=\"0.01\""), u);
    BOOST_TEST(contains(u, "MetricCategory=\"Clc\""), u);
    BOOST_TEST(contains(u, "<pm:Unit Code=\"264352\"><pm:ConceptDescription Lang=\"en-US\">percent"), u);
    BOOST_TEST(contains(u, "DescriptorHandle=\"added\" DescriptorVersion=\"1\" StateVersion=\"2\""), u);
    BOOST_TEST(contains(u, "Value=\"5\""), u);  // the state keeps its value
    BOOST_TEST(mdib.description_attributes() == " DescriptionVersion=\"2\"");

    const std::string removed = mdib.remove_metric("added", version);
    BOOST_TEST(version == 11u);
    const std::string del = part_of(removed, "Del");
    BOOST_TEST(contains(del, "Handle=\"added\""), del);
    BOOST_TEST(!contains(del, "<msg:State"), del);  // BICEPS R5053
    BOOST_TEST(contains(part_of(removed, "Upt"), "DescriptorVersion=\"2\""));
    BOOST_TEST(!mdib.has_descriptor("added"));
    BOOST_TEST(mdib.descriptor_count() == 5u);
    BOOST_TEST(!contains(mdib.mds_xml({}, version), "Handle=\"added\""));
    error_of([&] { mdib.states_xml({"added"}, version); }, Errc::unknown_handle);

    // A handle that comes back continues its versions.
    MetricDescriptorSpec text = spec("added");
    text.numeric = false;
    const std::string again = part_of(mdib.add_metric("c", text, version), "Crt");
    BOOST_TEST(contains(again, "Handle=\"added\" DescriptorVersion=\"2\""), again);
    BOOST_TEST(contains(again, "xsi:type=\"pm:StringMetricDescriptor\""), again);
    BOOST_TEST(contains(again, "StateVersion=\"3\""), again);
    mdib.set_metric("added", std::string("text"));
}

BOOST_AUTO_TEST_CASE(bad_description_changes_are_refused_and_change_nothing)
{
    Mdib mdib = Mdib::load_string(kSmall, "small");
    std::uint64_t version = 0;
    const std::string before = mdib.mds_xml({}, version);
    const std::string states_before = mdib.states_xml({}, version);
    BOOST_TEST(error_of([&] { mdib.add_metric("nope", spec("x"), version); }, Errc::unknown_handle) ==
               "cannot add metric \"x\": parent \"nope\" is not a descriptor of MDIB small");
    BOOST_TEST(error_of([&] { mdib.add_metric("v", spec("x"), version); }, Errc::invalid_argument) ==
               "cannot add metric \"x\" under \"v\": it is a VmdDescriptor; metrics are added under a "
               "ChannelDescriptor");
    BOOST_TEST(error_of([&] { mdib.add_metric("c", spec("n"), version); }, Errc::already_exists) ==
               "cannot add metric \"n\": the handle is in use in MDIB small");
    BOOST_TEST(
        contains(error_of([&] { mdib.add_metric("c", spec("a b"), version); }, Errc::invalid_argument), "white space"));
    BOOST_TEST(contains(error_of([&] { mdib.add_metric("c", spec(""), version); }, Errc::invalid_argument),
                        "1 to 256 characters"));
    MetricDescriptorSpec bad = spec("x");
    bad.resolution = "1e3";
    BOOST_TEST(contains(error_of([&] { mdib.add_metric("c", bad, version); }, Errc::invalid_argument),
                        "Resolution \"1e3\": not an xsd:decimal"));
    bad = spec("x");
    bad.metric_category = "Guess";
    BOOST_TEST(error_of([&] { mdib.add_metric("c", bad, version); }, Errc::invalid_argument) ==
               "MetricCategory \"Guess\": allowed are Unspec, Msrmt, Clc, Set, Preset, Rcmm");

    MetricDescriptorChange change;
    change.attributes = {{"Resolution", "2"}};
    BOOST_TEST(error_of([&] { mdib.update_metric("nope", change, version); }, Errc::unknown_handle) ==
               "cannot update metric descriptor \"nope\": MDIB small has no descriptor with that handle");
    BOOST_TEST(error_of([&] { mdib.update_metric("c", change, version); }, Errc::not_a_metric) ==
               "cannot update \"c\": it is a ChannelDescriptor, not a metric descriptor");
    BOOST_TEST(contains(error_of([&] { mdib.update_metric("s", change, version); }, Errc::invalid_argument),
                        "only a NumericMetricDescriptor has it"));
    change.attributes = {{"Resolution", "2"}, {"Handle", "other"}};
    BOOST_TEST(contains(error_of([&] { mdib.update_metric("n", change, version); }, Errc::invalid_argument),
                        "attribute \"Handle\" cannot be set: allowed are MetricCategory"));
    BOOST_TEST(
        contains(error_of([&] { mdib.update_metric("n", {}, version); }, Errc::invalid_argument), "nothing to change"));
    BOOST_TEST(error_of([&] { mdib.remove_metric("nope", version); }, Errc::unknown_handle) ==
               "cannot remove metric descriptor \"nope\": MDIB small has no descriptor with that handle");
    error_of([&] { mdib.remove_metric("m", version); }, Errc::not_a_metric);

    BOOST_TEST(mdib.mdib_version() == 7u);
    BOOST_TEST(mdib.description_attributes().empty());
    BOOST_TEST(mdib.mds_xml({}, version) == before);
    BOOST_TEST(mdib.states_xml({}, version) == states_before);
}
