// The consumer's MDIB mirror against our provider, in one process over
// loopback: reports keep it in sync, a change made without a report (a lost
// notification) is noticed as a gap in MdibVersion and repaired by reading
// the states again, and the provider's stop ends the subscription.
#include "blobstreaming/sdc/MdibMirror.h"

#include "blobstreaming/sdc/Provider.h"
#include "blobstreaming/sdc/SdcError.h"

#define BOOST_TEST_MODULE MdibMirrorTest
#include <boost/test/unit_test.hpp>

#include <condition_variable>
#include <deque>
#include <mutex>

using namespace blobstreaming::sdc;
using namespace std::chrono_literals;

namespace {

const std::string kHandle = "numeric.ch0.vmd0";

/// Reports as the mirror's callback hands them over, waited for with a deadline.
struct Inbox {
    std::mutex mutex;
    std::condition_variable arrived;
    std::deque<Report> reports;

    void put(const Report& r)
    {
        std::lock_guard<std::mutex> lock(mutex);
        reports.push_back(r);
        arrived.notify_all();
    }

    Report next()
    {
        std::unique_lock<std::mutex> lock(mutex);
        BOOST_REQUIRE_MESSAGE(arrived.wait_for(lock, 10s, [this] { return !reports.empty(); }),
                              "no report within 10 s");
        Report r = reports.front();
        reports.pop_front();
        return r;
    }
};

std::string value_of(const MdibMirror& mirror) { return mirror.states({kHandle}).front().value; }

ProviderOptions options()
{
    ProviderOptions o;
    o.address = "127.0.0.1:0";
    o.discovery = false;
    return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(reports_keep_the_mirror_in_sync_and_a_gap_resyncs)
{
    Provider provider(Mdib::load_file(std::string(SDC_TEST_DATA) + "/mdib.xml"), options());
    Inbox inbox;
    MdibMirror mirror(provider.device_url(), [&inbox](const Report& r) { inbox.put(r); });
    BOOST_TEST(provider.subscriber_count() == 2u);  // StateEventService and DescriptionEventService
    const std::uint64_t start = mirror.mdib_version();
    BOOST_TEST(start == provider.mdib().mdib_version());

    for (int i = 1; i <= 3; ++i) {
        provider.set_metric(kHandle, 100.0 + i);
        const Report r = inbox.next();
        BOOST_TEST(r.action == "EpisodicMetricReport");
        BOOST_TEST(r.mdib_version == start + static_cast<std::uint64_t>(i));
        BOOST_REQUIRE(r.states.size() == 1u);
        BOOST_TEST(r.states[0].descriptor_handle == kHandle);
        BOOST_TEST(r.states[0].value == std::to_string(100 + i));
        BOOST_TEST(r.received_ns > 0);
    }
    BOOST_TEST(value_of(mirror) == "103");
    BOOST_TEST(mirror.mdib_version() == start + 3);

    // A change without a report, as if a notification had been lost: the next report shows a gap.
    const_cast<Mdib&>(provider.mdib()).set_metric(kHandle, 200.0);
    provider.set_metric(kHandle, 201.0);
    const Report resync = inbox.next();
    BOOST_TEST(resync.action == "Resync");
    BOOST_TEST(mirror.resyncs() == 1u);
    BOOST_TEST(value_of(mirror) == "201");
    BOOST_TEST(mirror.mdib_version() == start + 5);

    // Several metrics in one change: one report, one MdibVersion.
    provider.set_metrics({MetricUpdate::numeric(kHandle, 7), MetricUpdate::numeric(kHandle, 8)});
    const Report batch = inbox.next();
    BOOST_TEST(batch.mdib_version == start + 6);
    BOOST_TEST(value_of(mirror) == "8");

    BOOST_CHECK_THROW(mirror.states({"no.such.handle"}), SdcError);
    provider.stop();
    const Report end = inbox.next();
    BOOST_TEST(end.action == "SubscriptionEnd");
    BOOST_TEST(end.reason.find("SourceShuttingDown") != std::string::npos);
    BOOST_TEST(mirror.ended());
}

BOOST_AUTO_TEST_CASE(a_provider_without_event_services_is_refused)
{
    ProviderOptions o = options();
    o.events = false;
    Provider provider(Mdib::load_file(std::string(SDC_TEST_DATA) + "/mdib.xml"), o);
    try {
        MdibMirror mirror(provider.device_url(), nullptr);
        BOOST_FAIL("a mirror of a provider without a StateEventService was created");
    } catch (const SdcError& e) {
        BOOST_TEST(std::string(e.what()).find("lists no StateEventService") != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(description_changes_reach_the_mirror_and_a_gap_reads_the_mdib_again)
{
    Provider provider(Mdib::load_file(std::string(SDC_TEST_DATA) + "/mdib.xml"), options());
    Inbox inbox;
    MdibMirror mirror(provider.device_url(), [&inbox](const Report& r) { inbox.put(r); });
    const std::uint64_t start = mirror.mdib_version();
    BOOST_TEST(mirror.descriptors().size() == provider.mdib().descriptor_count());
    BOOST_TEST(mirror.descriptors({"ch0.vmd0"}).front().parent_handle == "vmd0");

    MetricDescriptorSpec spec;
    spec.handle = "added.ch0.vmd0";
    provider.add_metric("ch0.vmd0", spec);
    Report r = inbox.next();
    BOOST_TEST(r.action == "DescriptionModificationReport");
    BOOST_TEST(r.mdib_version == start + 1);
    BOOST_REQUIRE(r.created.size() == 1u);
    BOOST_TEST(r.created[0].handle == "added.ch0.vmd0");
    BOOST_TEST(r.created[0].parent_handle == "ch0.vmd0");
    BOOST_TEST(r.created[0].type == "NumericMetricDescriptor");
    BOOST_TEST(r.created[0].unit_code == "262656");
    BOOST_REQUIRE(r.updated.size() == 1u);
    BOOST_TEST(r.updated[0].handle == "ch0.vmd0");
    BOOST_TEST(r.updated[0].type == "ChannelDescriptor");
    BOOST_TEST(r.deleted.empty());
    BOOST_TEST(r.states.size() == 2u);  // the channel's and the new metric's
    BOOST_TEST(mirror.descriptors({"added.ch0.vmd0"}).front().descriptor_version == "0");
    BOOST_TEST(mirror.states({"added.ch0.vmd0"}).front().type == "NumericMetricState");

    provider.set_metric("added.ch0.vmd0", 17.0);
    r = inbox.next();
    BOOST_TEST(r.action == "EpisodicMetricReport");
    BOOST_TEST(mirror.states({"added.ch0.vmd0"}).front().value == "17");

    MetricDescriptorChange change;
    change.unit_code = "264352";
    change.attributes = {{"Resolution", "0.5"}};
    provider.update_metric("added.ch0.vmd0", change);
    r = inbox.next();
    BOOST_TEST(r.action == "DescriptionModificationReport");
    BOOST_TEST(r.mdib_version == start + 3);
    BOOST_REQUIRE(r.updated.size() == 1u);
    const Descriptor updated = mirror.descriptors({"added.ch0.vmd0"}).front();
    BOOST_TEST(updated.descriptor_version == "1");
    BOOST_TEST(updated.unit_code == "264352");
    BOOST_TEST(mirror.states({"added.ch0.vmd0"}).front().value == "17");

    // Bad input changes nothing and sends nothing: the next report follows without a gap.
    BOOST_CHECK_THROW(provider.add_metric("no.such.channel", spec), SdcError);
    BOOST_CHECK_THROW(provider.add_metric("ch0.vmd0", spec), SdcError);
    BOOST_CHECK_THROW(provider.update_metric("no.such.metric", change), SdcError);
    BOOST_CHECK_THROW(provider.remove_metric("vmd0"), SdcError);
    BOOST_TEST(provider.mdib().mdib_version() == start + 3);

    provider.remove_metric("added.ch0.vmd0");
    r = inbox.next();
    BOOST_TEST(r.mdib_version == start + 4);
    BOOST_REQUIRE(r.deleted.size() == 1u);
    BOOST_TEST(r.deleted[0].handle == "added.ch0.vmd0");
    BOOST_CHECK_THROW(mirror.descriptors({"added.ch0.vmd0"}), SdcError);
    BOOST_CHECK_THROW(mirror.states({"added.ch0.vmd0"}), SdcError);
    BOOST_TEST(mirror.resyncs() == 0u);

    // A description change without a report: the next report shows a gap and the MDIB is read again.
    std::uint64_t version = 0;
    spec.handle = "unreported.ch0.vmd0";
    const_cast<Mdib&>(provider.mdib()).add_metric("ch0.vmd0", spec, version);
    provider.set_metric(kHandle, 5.0);
    r = inbox.next();
    BOOST_TEST(r.action == "Resync");
    BOOST_TEST(r.description_resynced);
    BOOST_TEST(mirror.descriptors({"unreported.ch0.vmd0"}).size() == 1u);
    BOOST_TEST(mirror.states({"unreported.ch0.vmd0"}).size() == 1u);
    BOOST_TEST(mirror.mdib_version() == start + 6);
    BOOST_TEST(mirror.descriptors().size() == provider.mdib().descriptor_count());
}

BOOST_AUTO_TEST_CASE(reports_of_two_subscriptions_out_of_order_need_no_resync)
{
    // Description changes and metric changes travel on two subscriptions
    // (two connections), so a metric report may overtake the description
    // report before it: the mirror holds it until the gap closes.
    Provider provider(Mdib::load_file(std::string(SDC_TEST_DATA) + "/mdib.xml"), options());
    Inbox inbox;
    MirrorOptions mirror_options;
    mirror_options.reorder_window = 5s;
    MdibMirror mirror(
        provider.device_url(), [&inbox](const Report& r) { inbox.put(r); }, mirror_options);
    constexpr int kRounds = 30;
    for (int i = 0; i < kRounds; ++i) {
        MetricDescriptorSpec spec;
        spec.handle = "m" + std::to_string(i) + ".ch0.vmd0";
        provider.add_metric("ch0.vmd0", spec);
        provider.set_metric(spec.handle, static_cast<double>(i));
    }
    const std::uint64_t target = provider.mdib().mdib_version();
    std::uint64_t last = 0;
    int reports = 0;
    while (last < target && reports < 2 * kRounds) {
        const Report r = inbox.next();
        BOOST_TEST(r.action != "Resync");
        BOOST_TEST(r.mdib_version == last + (last == 0 ? r.mdib_version : 1));  // in order, one by one
        last = r.mdib_version;
        ++reports;
    }
    BOOST_TEST(reports == 2 * kRounds);
    BOOST_TEST(mirror.resyncs() == 0u);
    BOOST_TEST(mirror.mdib_version() == target);
    for (int i = 0; i < kRounds; ++i)
        BOOST_TEST(mirror.states({"m" + std::to_string(i) + ".ch0.vmd0"}).front().value == std::to_string(i));
    BOOST_TEST(mirror.descriptors().size() == provider.mdib().descriptor_count());
}
