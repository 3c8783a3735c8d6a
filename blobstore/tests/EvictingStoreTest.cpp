// EvictingStore, the --evict decorator, over a MemoryStore and a FileStore
// alike: least recently used Blobs go first, never in vain, never the Blob
// being replaced; readers keep what was evicted.
#include <blobstreaming/blobstore/EvictingStore.h>

#define BOOST_TEST_MODULE EvictingStore
#include "TestSupport.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/blobstore/MemoryStore.h>

#include <boost/mpl/list.hpp>

#include <cstring>
#include <thread>

using namespace blobstreaming;
using test::random_bytes;

namespace {

struct OverMemory {
    static constexpr std::string_view kind = "memory";
    std::unique_ptr<Store> make(std::uint64_t capacity)
    {
        return std::make_unique<MemoryStore>(MemoryStore::Options{capacity});
    }
};

struct OverFiles {
    static constexpr std::string_view kind = "file";
    test::TempDir dir;
    std::unique_ptr<Store> make(std::uint64_t capacity)
    {
        return std::make_unique<FileStore>(dir.path() / "store", FileStore::Options{capacity, false});
    }
};

using Kinds = boost::mpl::list<OverMemory, OverFiles>;

std::vector<std::uint8_t> put(Store& store, const std::string& name, std::size_t size,
                              ReserveMode mode = ReserveMode::create)
{
    auto bytes = random_bytes(size, static_cast<unsigned>(name.size() + size));
    auto r = store.reserve(name, size, mode);
    BOOST_REQUIRE(!r->write(bytes.data(), size));
    r->commit();
    return bytes;
}

std::vector<std::string> names(const Store& store)
{
    std::vector<std::string> out;
    for (const auto& info : store.list()) out.push_back(info.name);
    return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(least_recently_used_go_first, Kind, Kinds)
{
    Kind kind;
    EvictingStore store(kind.make(300));
    put(store, "a", 100);
    put(store, "b", 100);
    put(store, "c", 100);
    store.read_all("a");  // a is now more recent than b and c
    put(store, "d", 100);
    BOOST_TEST(names(store) == std::vector<std::string>({"a", "c", "d"}));
    BOOST_TEST(store.evictions() == 1u);
    put(store, "e", 200);  // least recent now: c, then a
    BOOST_TEST(names(store) == std::vector<std::string>({"d", "e"}));
    BOOST_TEST(store.evictions() == 3u);
    BOOST_TEST(store.usage().used == 300u);
    BOOST_TEST(store.kind() == Kind::kind);  // the wrapped store's
}

BOOST_AUTO_TEST_CASE_TEMPLATE(nothing_is_evicted_for_a_blob_that_cannot_fit, Kind, Kinds)
{
    Kind kind;
    EvictingStore store(kind.make(300));
    put(store, "a", 100);
    BS_CHECK_ERROR(store.reserve("huge", 301), Errc::out_of_space, "need 301 bytes, 200 free of capacity 300");
    // Room held by an open reservation cannot be made: 250 + 100 > 300.
    auto held = store.reserve("held", 250 - 100);
    BS_CHECK_ERROR(store.reserve("big", 200), Errc::out_of_space, "need 200 bytes");
    BOOST_TEST(names(store) == std::vector<std::string>({"a"}));
    BOOST_TEST(store.evictions() == 0u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(the_blob_being_replaced_stays, Kind, Kinds)
{
    Kind kind;
    EvictingStore store(kind.make(300));
    put(store, "old", 100);
    put(store, "x", 100);
    put(store, "y", 100);
    // Replacing "old" needs room for both versions until the commit: the
    // least recent other Blob goes, "old" stays readable meanwhile.
    auto r = store.reserve("old", 100, ReserveMode::replace);
    BOOST_TEST(names(store) == std::vector<std::string>({"old", "y"}));
    BOOST_TEST(store.contains("old"));
    r->abort();
}

BOOST_AUTO_TEST_CASE_TEMPLATE(concurrent_reservations_make_room_one_at_a_time, Kind, Kinds)
{
    Kind kind;
    EvictingStore store(kind.make(800));
    for (int i = 0; i < 8; ++i) put(store, "old" + std::to_string(i), 100);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&store, t] {
            for (int i = 0; i < 4; ++i) put(store, "new" + std::to_string(t) + "." + std::to_string(i), 50);
        });
    for (auto& t : threads) t.join();
    const auto left = names(store);
    BOOST_TEST(left.size() == 8u + 16u - store.evictions());
    BOOST_TEST(store.evictions() == 8u);
    BOOST_TEST(store.usage().used == 800u);
    BOOST_TEST(store.usage().reserved == 0u);
}

BOOST_AUTO_TEST_CASE(an_evicted_blob_stays_valid_for_its_reader)
{
    EvictingStore store(std::make_unique<MemoryStore>(MemoryStore::Options{100}));
    const auto bytes = put(store, "a", 100);
    const BlobRange view = store.read_all("a");
    put(store, "b", 100);
    BOOST_TEST(!store.contains("a"));
    BOOST_TEST(std::memcmp(view.data(), bytes.data(), 100) == 0);
}

BOOST_AUTO_TEST_CASE(a_store_without_capacity_is_refused)
{
    test::TempDir dir;
    BS_CHECK_ERROR(EvictingStore(std::make_unique<FileStore>(dir.path() / "s", FileStore::Options{0, false})),
                   Errc::invalid_argument,
                   "eviction needs a capacity: this file store is bounded only by what its medium has left");
}
