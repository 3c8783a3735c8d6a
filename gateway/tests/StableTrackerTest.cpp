// StableTracker (blob-dicomd's study-stable) over a real SQLite index in a
// temporary directory: with a fixed clock, a study is published once, after
// its last instance, with its counts and stores, and recorded in the index;
// a new tracker on the same index publishes what was pending and not what
// was published; an instance that comes while a study is published makes
// it unstable again; the thread publishes on its own and stop() ends it at
// once however far the next deadline.
#include "StableTracker.h"

#define BOOST_TEST_MODULE StableTrackerTest
#include <boost/test/unit_test.hpp>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

using namespace blobstreaming::dicom;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct Fixture {
    Fixture()
    {
        std::string pattern = (fs::temp_directory_path() / "stable-tracker-XXXXXX").string();
        dir = ::mkdtemp(pattern.data());
        url = "sqlite:" + (dir / "index.sqlite").string();
    }
    ~Fixture() { fs::remove_all(dir); }

    fs::path dir;
    std::string url;
};

InstanceRecord instance(const std::string& sop, const std::string& study, const std::string& series,
                        const std::string& store = "ws1")
{
    InstanceRecord r;
    r.values = {{"SOPInstanceUID", sop},
                {"StudyInstanceUID", study},
                {"SeriesInstanceUID", series},
                {"PatientID", "PAT1"},
                {"AccessionNumber", "ACC1"}};
    r.blob = sop + ".dcm";
    r.store = store;
    r.size = 100;
    r.checksum = "crc32c:00000000";
    return r;
}

const StableTracker::Clock::time_point t0 = StableTracker::Clock::now();

}  // namespace

BOOST_FIXTURE_TEST_CASE(published_once_after_the_last_instance, Fixture)
{
    StudyIndex index(url, true);
    std::vector<StableStudy> published;
    StableTracker tracker(
        index, 10s, [&](const StableStudy& s) { published.push_back(s); }, false);
    StableTracker::Clock::time_point now = t0;
    index.on_put([&](const std::string& study, std::int64_t ns) { tracker.instance_at(study, ns, now); });

    index.put(instance("1.1.1", "1.1", "1.1.9"));
    now = t0 + 5s;
    index.put(instance("1.1.2", "1.1", "1.1.9", "ws2"));
    index.put(instance("1.1.3", "1.1", "1.1.8"));
    BOOST_TEST(tracker.waiting() == 1u);
    BOOST_TEST((tracker.due(t0 + 10s) == t0 + 15s));  // 10 s after the last instance
    BOOST_TEST(published.empty());
    BOOST_TEST(!tracker.due(t0 + 15s));
    BOOST_TEST_REQUIRE(published.size() == 1u);
    const StudySummary& s = published[0].summary;
    BOOST_TEST(s.study_instance_uid == "1.1");
    BOOST_TEST(s.patient_id == "PAT1");
    BOOST_TEST(s.accession_number == "ACC1");
    BOOST_TEST(s.series == 2u);
    BOOST_TEST(s.instances == 3u);
    BOOST_TEST(s.stores == (std::vector<std::string>{"ws1", "ws2"}));
    BOOST_TEST(published[0].last_instance_ns > 0);
    BOOST_TEST(index.pending_studies().empty());
    BOOST_TEST(!tracker.due(t0 + 1000s));
    BOOST_TEST(published.size() == 1u);

    now = t0 + 20s;  // a late instance: stable again 10 s later, published again
    index.put(instance("1.1.4", "1.1", "1.1.8"));
    BOOST_TEST(index.pending_studies().size() == 1u);
    tracker.due(t0 + 29s);
    BOOST_TEST(published.size() == 1u);
    tracker.due(t0 + 30s);
    BOOST_TEST_REQUIRE(published.size() == 2u);
    BOOST_TEST(published[1].summary.instances == 4u);
    BOOST_TEST(tracker.published() == 2u);
}

BOOST_FIXTURE_TEST_CASE(a_restart_publishes_the_pending_not_the_published, Fixture)
{
    {
        StudyIndex index(url, true);
        StableTracker tracker(
            index, 10s, [](const StableStudy&) {}, false);
        index.on_put([&](const std::string& study, std::int64_t ns) { tracker.instance_at(study, ns, t0); });
        index.put(instance("1.1.1", "1.1", "1.1.9"));
        index.put(instance("2.2.1", "2.2", "2.2.9"));
        tracker.due(t0 + 10s);                         // both published
        index.put(instance("3.3.1", "3.3", "3.3.9"));  // pending at the "stop"
    }
    StudyIndex index(url, true);
    BOOST_TEST_REQUIRE(index.pending_studies().size() == 1u);
    BOOST_TEST(index.pending_studies()[0].study == "3.3");
    std::vector<std::string> published;
    StableTracker tracker(
        index, 1h, [&](const StableStudy& s) { published.push_back(s.summary.study_instance_uid); }, false);
    BOOST_TEST(tracker.waiting() == 1u);
    BOOST_TEST(tracker.due(StableTracker::Clock::now() + 1h - 1s).has_value());  // not at once: 1 h after the start
    BOOST_TEST(published.empty());
    tracker.due(StableTracker::Clock::now() + 1h + 1s);
    BOOST_TEST(published == std::vector<std::string>{"3.3"});
    StableTracker third(
        index, 1h, [](const StableStudy&) {}, false);
    BOOST_TEST(third.waiting() == 0u);
}

BOOST_FIXTURE_TEST_CASE(an_instance_during_publication_keeps_it_pending, Fixture)
{
    StudyIndex index(url, true);
    StableTracker* self = nullptr;
    StableTracker::Clock::time_point now = t0;
    int calls = 0;
    StableTracker tracker(
        index, 10s,
        [&](const StableStudy&) {
            if (++calls > 1) return;
            now = t0 + 3s;
            index.put(instance("1.1.2", "1.1", "1.1.9"));  // arrives meanwhile
        },
        false);
    self = &tracker;
    index.on_put([&](const std::string& study, std::int64_t ns) { self->instance_at(study, ns, now); });
    index.put(instance("1.1.1", "1.1", "1.1.9"));
    // published once; the index keeps it pending for the instance that came meanwhile
    BOOST_TEST((tracker.due(t0 + 10s) == t0 + 13s));
    BOOST_TEST(calls == 1);
    BOOST_TEST(index.pending_studies().size() == 1u);
    tracker.due(t0 + 13s);
    BOOST_TEST(calls == 2);
    BOOST_TEST(index.pending_studies().empty());
}

BOOST_FIXTURE_TEST_CASE(the_thread_publishes_and_stops, Fixture)
{
    StudyIndex index(url, true);
    std::mutex mutex;
    std::condition_variable published;
    std::vector<StableTracker::Clock::time_point> times;
    StableTracker tracker(index, 50ms, [&](const StableStudy&) {
        std::lock_guard lock(mutex);
        times.push_back(StableTracker::Clock::now());
        published.notify_all();
    });
    index.on_put([&](const std::string& study, std::int64_t ns) { tracker.instance(study, ns); });
    const auto put_at = StableTracker::Clock::now();
    index.put(instance("1.1.1", "1.1", "1.1.9"));
    {
        std::unique_lock lock(mutex);
        BOOST_TEST_REQUIRE(published.wait_for(lock, 20s, [&] { return !times.empty(); }));
        BOOST_TEST((times[0] - put_at >= 50ms));
    }
    // a deadline an hour away: stop() wakes the thread, the join returns at once
    StableTracker idle(index, 1h, [](const StableStudy&) {});
    index.on_put([&](const std::string& study, std::int64_t ns) { idle.instance(study, ns); });
    index.put(instance("2.2.1", "2.2", "2.2.9"));
    const auto before = StableTracker::Clock::now();
    idle.stop();
    BOOST_TEST((StableTracker::Clock::now() - before < 10s));
    tracker.stop();
    std::lock_guard lock(mutex);
    BOOST_TEST(times.size() == 1u);
}
