// StudyStability (blob-dicomd's study-stable tracking) with a fixed clock:
// a study is due stable_after after its last instance, not before; a new
// instance puts its deadline back; each stable study is reported once until
// another instance; a forgotten study is never reported; the earliest
// deadline is the next one to wait for.
#include "StudyStability.h"

#define BOOST_TEST_MODULE StudyStabilityTest
#include <boost/test/unit_test.hpp>

using namespace blobstreaming::dicom;
using namespace std::chrono_literals;
using Strings = std::vector<std::string>;

namespace {
const StudyStability::Clock::time_point t0{};
}

BOOST_AUTO_TEST_CASE(stable_after_the_last_instance_not_before)
{
    StudyStability s(60s);
    BOOST_TEST(!s.next_deadline());
    s.instance("1.1", t0);
    s.instance("1.1", t0 + 30s);  // still receiving: the deadline moves
    BOOST_TEST((s.next_deadline() == t0 + 90s));
    BOOST_TEST(s.take_due(t0 + 60s).empty());
    BOOST_TEST(s.take_due(t0 + 89s).empty());
    BOOST_TEST(s.take_due(t0 + 90s) == Strings{"1.1"});
    BOOST_TEST(s.take_due(t0 + 500s).empty());  // once
    BOOST_TEST(!s.next_deadline());
}

BOOST_AUTO_TEST_CASE(a_new_instance_after_stable_makes_a_second_event)
{
    StudyStability s(1s);
    s.instance("1.1", t0);
    BOOST_TEST(s.take_due(t0 + 1s) == Strings{"1.1"});
    s.instance("1.1", t0 + 5s);
    BOOST_TEST(s.take_due(t0 + 5500ms).empty());
    BOOST_TEST(s.take_due(t0 + 6s) == Strings{"1.1"});
}

BOOST_AUTO_TEST_CASE(studies_in_deadline_order_and_forget)
{
    StudyStability s(10s);
    s.instance("b", t0 + 2s);
    s.instance("a", t0 + 1s);
    s.instance("c", t0 + 3s);
    BOOST_TEST(s.waiting() == 3u);
    BOOST_TEST((s.next_deadline() == t0 + 11s));
    s.forget("c");
    s.forget("never-seen");
    BOOST_TEST(s.take_due(t0 + 100s) == (Strings{"a", "b"}));
    BOOST_TEST(s.waiting() == 0u);
}
