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
