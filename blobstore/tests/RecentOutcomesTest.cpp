#define BOOST_TEST_MODULE RecentOutcomesTest
#include <blobstreaming/blobstore/RecentOutcomes.h>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <string>

using namespace blobstreaming;
using namespace std::chrono_literals;

namespace {

struct Fixture {
    std::chrono::steady_clock::time_point now{std::chrono::hours(1)};
    RecentOutcomes<int> outcomes{60s, 3, [this] { return now; }};
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(past_its_capacity_the_oldest_goes_never_the_newest, Fixture)
{
    // A copy of more Blobs than the capacity within the memory: each
    // awaitFetch finds the outcome recorded just before it.
    for (int i = 0; i < 10; ++i) {
        outcomes.record("CT." + std::to_string(i), i);
        const int* found = outcomes.find("CT." + std::to_string(i));
        BOOST_REQUIRE(found);
        BOOST_CHECK_EQUAL(*found, i);
        now += 1ms;
    }
    BOOST_CHECK_EQUAL(outcomes.size(), 3u);
    BOOST_CHECK(!outcomes.find("CT.6"));
    BOOST_CHECK(outcomes.find("CT.7"));
    BOOST_CHECK(outcomes.find("CT.9"));
}

BOOST_FIXTURE_TEST_CASE(an_outcome_is_found_for_its_memory_only, Fixture)
{
    outcomes.record("A", 1);
    now += 30s;
    outcomes.record("B", 2);
    now += 29s;
    BOOST_CHECK(outcomes.find("A"));
    now += 1s;  // A is 60 s old
    BOOST_CHECK(!outcomes.find("A"));
    BOOST_REQUIRE(outcomes.find("B"));
    BOOST_CHECK_EQUAL(*outcomes.find("B"), 2);
    now += 30s;
    BOOST_CHECK(!outcomes.find("B"));
    BOOST_CHECK_EQUAL(outcomes.size(), 0u);
}

BOOST_FIXTURE_TEST_CASE(recording_a_name_again_restarts_its_memory_and_keeps_one_entry, Fixture)
{
    outcomes.record("A", 1);
    outcomes.record("B", 2);
    now += 50s;
    outcomes.record("A", 3);  // the same Blob copied again
    now += 20s;               // the first A and B expired; the second A is 20 s old
    BOOST_CHECK(!outcomes.find("B"));
    BOOST_REQUIRE(outcomes.find("A"));
    BOOST_CHECK_EQUAL(*outcomes.find("A"), 3);
    // Recorded many times over, a name stays one entry and the others stay.
    outcomes.record("C", 4);
    outcomes.record("D", 5);
    for (int i = 0; i < 1000; ++i) outcomes.record("A", i);
    BOOST_CHECK_EQUAL(outcomes.size(), 3u);
    BOOST_CHECK(outcomes.find("C"));
    BOOST_CHECK(outcomes.find("D"));
    BOOST_CHECK_EQUAL(*outcomes.find("A"), 999);
    // The next name pushes out the oldest live one (C), not A.
    outcomes.record("E", 6);
    BOOST_CHECK(!outcomes.find("C"));
    BOOST_CHECK(outcomes.find("D") && outcomes.find("E") && outcomes.find("A"));
}
