// The placement rule (Placement.h) that the BlobLocator servant and the
// client library's fallback share.

#include <blobstreaming/transporter/Placement.h>

#define BOOST_TEST_MODULE PlacementTest
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace blobstreaming;

namespace {

constexpr int kWorkstation = 1;
constexpr int kCluster = 2;

PlacementCandidate store(std::string name, int tier, std::uint64_t room)
{
    PlacementCandidate c;
    c.store = std::move(name);
    c.answered = true;
    c.tier = tier;
    c.room = room;
    return c;
}

PlacementCandidate silent(std::string name)
{
    PlacementCandidate c;
    c.store = std::move(name);
    c.problem = "CORBA TRANSIENT";
    return c;
}

std::string chosen(const std::vector<PlacementCandidate>& c, const PlacementChoice& choice)
{
    return choice.index ? c[*choice.index].store : "(none: " + choice.message + ")";
}

}  // namespace

BOOST_AUTO_TEST_CASE(room_is_capacity_less_used_and_reserved_and_unbounded_without_capacity)
{
    BOOST_TEST(room_of(100, 30, 20) == 50u);
    BOOST_TEST(room_of(100, 80, 40) == 0u);
    BOOST_TEST(room_of(0, 80, 40) == kUnboundedRoom);
    BOOST_TEST(room_of(100, kUnboundedRoom, 5) == 0u);
}

BOOST_AUTO_TEST_CASE(the_default_first_when_it_fits_the_tier_and_has_room)
{
    const std::vector<PlacementCandidate> c = {store("a", kWorkstation, 10), store("c1", kCluster, 10),
                                               store("c2", kCluster, 10)};
    auto choice = choose_placement(c, 5, {}, "c2");
    BOOST_TEST(chosen(c, choice) == "c2");
    BOOST_TEST(choice.by_default);
    // Another tier asked: the default is not of it.
    choice = choose_placement(c, 5, {kWorkstation}, "c2");
    BOOST_TEST(chosen(c, choice) == "a");
    BOOST_TEST(!choice.by_default);
    // The default full: the nearest with room, whatever the order given.
    choice = choose_placement(c, 11, {}, "c2");
    BOOST_TEST(choice.code == Errc::out_of_space);
    choice = choose_placement({store("c1", kCluster, 10), store("a", kWorkstation, 10), store("c2", kCluster, 1)},
                              5, {}, "c2");
    BOOST_TEST(*choice.index == 1u);
}

BOOST_AUTO_TEST_CASE(within_a_tier_the_order_given_and_only_stores_with_room)
{
    const std::vector<PlacementCandidate> c = {store("c1", kCluster, 3), store("c2", kCluster, 8)};
    BOOST_TEST(chosen(c, choose_placement(c, 3, {kCluster}, "")) == "c1");
    BOOST_TEST(chosen(c, choose_placement(c, 4, {kCluster}, "")) == "c2");
}

BOOST_AUTO_TEST_CASE(none_with_room_names_the_tier_each_store_and_the_silent_ones)
{
    const std::vector<PlacementCandidate> c = {store("a", kWorkstation, 100), store("c1", kCluster, 3),
                                               store("c2", kCluster, 0), silent("c3")};
    const auto choice = choose_placement(c, 4, {kCluster}, "c2");
    BOOST_TEST(!choice.index);
    BOOST_TEST(choice.code == Errc::out_of_space);
    BOOST_TEST(choice.message == "no store of tier cluster has room for 4 bytes (asked: c1 (cluster): 3 bytes free, "
                                 "c2 (cluster, the default): 0 bytes free; of other tiers: a (workstation); did not "
                                 "answer: c3)");
}

BOOST_AUTO_TEST_CASE(no_store_of_the_tier_and_none_registered)
{
    const std::vector<PlacementCandidate> c = {store("a", kWorkstation, 100)};
    auto choice = choose_placement(c, 4, {0}, "");
    BOOST_TEST(choice.code == Errc::unknown_store);
    BOOST_TEST(choice.message == "no registered store is of tier memory (registered: a (workstation))");
    choice = choose_placement({silent("x")}, 4, {kCluster}, "");
    BOOST_TEST(choice.code == Errc::unreachable);
    BOOST_TEST(choice.message == "no store of tier cluster answered to place 4 bytes (did not answer: x)");
    choice = choose_placement({}, 4, {}, "");
    BOOST_TEST(choice.code == Errc::unknown_store);
    BOOST_TEST(choice.message == "no store is registered to place 4 bytes in");
}

BOOST_AUTO_TEST_CASE(a_default_that_is_not_registered_is_named)
{
    const std::vector<PlacementCandidate> c = {store("c1", kCluster, 3)};
    const auto choice = choose_placement(c, 4, {}, "gone");
    BOOST_TEST(choice.message == "no store of any tier has room for 4 bytes (asked: c1 (cluster): 3 bytes free; the "
                                 "default store \"gone\" is not registered)");
    BOOST_TEST(chosen(c, choose_placement(c, 3, {}, "gone")) == "c1");
}
