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
