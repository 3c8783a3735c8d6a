// The one "nearest holder by tier" rule (Nearest.h) that the client
// library, the BlobLocator servant and read-through share.

#include <blobstreaming/transporter/Nearest.h>

#define BOOST_TEST_MODULE NearestTest
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

namespace {

struct Place {
    std::string store;
    int tier = 0;  ///< 0 memory, 1 workstation, 2 central
    bool holds = true;
};

std::vector<std::string> stores(const std::vector<Place>& places)
{
    std::vector<std::string> out;
    for (const Place& p : places) out.push_back(p.store);
    return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(holders_nearest_tier_first_in_answer_order_within_a_tier)
{
    const auto got = blobstreaming::nearest(std::vector<Place>{
        {"central", 2, true}, {"ws-b", 1, true}, {"mem", 0, true}, {"ws-a", 1, true}});
    BOOST_TEST(stores(got) == (std::vector<std::string>{"mem", "ws-b", "ws-a", "central"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_filler_only_when_nearer_than_the_farthest_holder)
{
    const auto got = blobstreaming::nearest(std::vector<Place>{
        {"cache-far", 2, false}, {"central", 2, true}, {"cache", 1, false}, {"ws", 1, true}});
    // cache (tier 1) is nearer than central (tier 2): listed, after ws, the
    // holder of its tier; cache-far is as far as the farthest holder: not.
    BOOST_TEST(stores(got) == (std::vector<std::string>{"ws", "cache", "central"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(nobody_holds_it_no_filler_either)
{
    BOOST_TEST(blobstreaming::nearest(std::vector<Place>{{"cache", 0, false}, {"cache2", 1, false}}).empty());
    BOOST_TEST(blobstreaming::nearest(std::vector<Place>{}).empty());
}
