#include <blobstreaming/blobstore/MemoryStore.h>

#define BOOST_TEST_MODULE MemoryStore
#include "TestSupport.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

using namespace blobstreaming;
using test::random_bytes;

namespace {

void put(Store& store, const std::string& name, std::size_t size)
{
    const auto bytes = random_bytes(size);
    auto r = store.reserve(name, size);
    BOOST_REQUIRE(!r->write(bytes.data(), size));
    r->commit();
}

void put_bytes(Store& store, const std::string& name, const std::vector<std::uint8_t>& bytes)
{
    auto r = store.reserve(name, bytes.size());
    BOOST_REQUIRE(!r->write(bytes.data(), bytes.size()));
    r->commit();
}

}  // namespace

BOOST_AUTO_TEST_CASE(capacity_is_required)
{
    BS_CHECK_ERROR(MemoryStore({0}), Errc::invalid_argument, "memory store: capacity must be greater than 0 bytes");
}

BOOST_AUTO_TEST_CASE(a_full_store_refuses)
{
    MemoryStore store({200});
    put(store, "a", 150);
    BS_CHECK_ERROR(store.reserve("b", 100), Errc::out_of_space,
                   "no room for blob \"b\": need 100 bytes, 50 free of capacity 200 (150 used, 0 reserved)");
    BOOST_TEST(store.contains("a"));
}

// The mapping of a removed Blob (from 2 MiB on) receives the next Blob of
// the same size, whose bytes and checksum are its own; never while a
// reader still holds the old Blob, and never for another size.
BOOST_AUTO_TEST_CASE(freed_mappings_are_reused_only_once_unread)
{
    constexpr std::size_t kSize = (4u << 20) + 123;
    MemoryStore store({64u << 20});
    const auto first = random_bytes(kSize, 1);
    {
        auto r = store.reserve("a", kSize);
        BOOST_REQUIRE(!r->write(first.data(), kSize));
        r->commit();
    }
    const std::uint8_t* old_bytes = nullptr;
    const std::uint8_t* held_bytes = nullptr;
    {
        const BlobRange view = store.read_all("a");
        old_bytes = view.data();
        store.remove("a");
        std::error_code ec;
        auto held = store.reserve("b", kSize);  // "a" is still being read
        held_bytes = held->window(kSize, ec).data;
        BOOST_TEST(held_bytes != old_bytes);
        BOOST_TEST(std::memcmp(view.data(), first.data(), kSize) == 0);
    }  // "a"'s mapping and the aborted "b"'s are free now
    std::error_code ec;
    auto other_size = store.reserve("c", kSize + (2u << 20));
    BOOST_TEST(other_size->window(1, ec).data != old_bytes);
    BOOST_TEST(other_size->window(1, ec).data != held_bytes);

    const auto second = random_bytes(kSize, 2);
    auto r = store.reserve("d", kSize);
    const Reservation::Window w = r->window(kSize, ec);
    BOOST_TEST((w.data == old_bytes || w.data == held_bytes));  // a freed mapping, mapped already
    BOOST_REQUIRE(w.size == kSize);
    std::memcpy(w.data, second.data(), kSize);
    BOOST_REQUIRE(!r->advance(kSize));
    const BlobInfo info = r->commit();
    BOOST_TEST((info.checksum == ChecksumState::of(info.checksum.algorithm, second.data(), kSize)));
    const BlobRange view = store.read_all("d");
    BOOST_TEST(std::memcmp(view.data(), second.data(), kSize) == 0);
}

namespace {

/// How many of the pages of [data, data + size) are resident (mincore).
std::size_t resident_pages(const std::uint8_t* data, std::size_t size)
{
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> in((size + page - 1) / page);
    BOOST_REQUIRE(::mincore(const_cast<std::uint8_t*>(data), size, in.data()) == 0);
    return static_cast<std::size_t>(std::count_if(in.begin(), in.end(), [](unsigned char c) { return c & 1; }));
}

}  // namespace

// A Blob larger than the 128 MiB the pool used to keep at most: the next
// Blob of its size receives into its memory, every page mapped already
// (fresh memory has none: each would be faulted in while the bytes
// arrive); the pool is sized by the store's capacity.
BOOST_AUTO_TEST_CASE(the_memory_of_a_blob_beyond_128_mib_is_reused)
{
    constexpr std::size_t kSize = std::size_t{160} << 20;
    MemoryStore store({std::uint64_t{400} << 20});
    const std::vector<std::uint8_t> bytes(kSize, 0x5a);
    put_bytes(store, "big.1", bytes);
    store.remove("big.1");
    auto r = store.reserve("big.2", kSize);
    std::error_code ec;
    const Reservation::Window w = r->window(kSize, ec);
    BOOST_REQUIRE(w.size == kSize);
    BOOST_TEST(resident_pages(w.data, kSize) == kSize / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
    std::memset(w.data, 0xa5, kSize);
    BOOST_REQUIRE(!r->advance(kSize));
    r->commit();
    const BlobRange view = store.read_all("big.2");
    BOOST_TEST(std::all_of(view.data(), view.data() + kSize, [](std::uint8_t b) { return b == 0xa5; }));
}

// Below 2 MiB (from 64 KiB on) the memory of a freed Blob is reused too, for
// a Blob of its size or up to an eighth smaller, never a larger one.
BOOST_AUTO_TEST_CASE(freed_slices_are_reused_by_slices_of_about_their_size)
{
    MemoryStore store({64u << 20});
    const auto put_and_remove = [&](const std::string& name, std::size_t size) {
        auto r = store.reserve(name, size);
        std::error_code ec;
        const std::uint8_t* at = r->window(size, ec).data;
        const auto bytes = random_bytes(size, 3);
        BOOST_REQUIRE(!r->write(bytes.data(), size));
        r->commit();
        store.remove(name);
        return at;
    };
    const std::uint8_t* slice = put_and_remove("CT.1", 600u << 10);
    std::error_code ec;
    auto larger = store.reserve("CT.2", (600u << 10) + 1);
    BOOST_TEST(larger->window(1, ec).data != slice);
    auto much_smaller = store.reserve("CT.3", 500u << 10);  // 100 KiB less: more than an eighth
    BOOST_TEST(much_smaller->window(1, ec).data != slice);
    auto slightly_smaller = store.reserve("CT.4", 560u << 10);
    BOOST_TEST(slightly_smaller->window(1, ec).data == slice);
    auto tiny = store.reserve("CT.5", 1000);  // below 64 KiB: the heap as ever
    BOOST_TEST(tiny->window(1, ec).data != slice);
}

// Reservation::adopt: the Blob's bytes are the ones handed over (no copy),
// alive as long as the Blob is; without a verified checksum they are
// hashed, and bytes that do not match the expected checksum commit nothing.
BOOST_AUTO_TEST_CASE(an_adopted_image_is_the_blob_without_a_copy)
{
    MemoryStore store({1u << 20});
    BOOST_TEST(store.adopts_images());
    const auto bytes = random_bytes(4096, 5);
    const Checksum sum = ChecksumState::of(kDefaultChecksum, bytes.data(), bytes.size());
    auto owned = std::make_shared<std::vector<std::uint8_t>>(bytes);
    std::weak_ptr<std::vector<std::uint8_t>> alive = owned;
    const std::shared_ptr<const std::uint8_t> image(owned, owned->data());
    owned.reset();

    auto r = store.reserve("CT.img", bytes.size());
    BOOST_TEST(r->adopt(image));
    BOOST_TEST(r->written() == bytes.size());
    BOOST_TEST(!r->adopt(image));  // once, and only before any byte
    BOOST_TEST(r->commit(&sum).checksum.text() == sum.text());
    const BlobRange view = store.read_all("CT.img");
    BOOST_TEST(view.data() == image.get());
    BOOST_TEST(std::memcmp(view.data(), bytes.data(), bytes.size()) == 0);

    // Verified by its maker: committed with that checksum, not hashed again.
    auto v = store.reserve("CT.verified", bytes.size());
    BOOST_TEST(v->adopt(image, &sum));
    BOOST_TEST(v->commit(&sum).checksum.text() == sum.text());

    auto bad = store.reserve("CT.bad", bytes.size());
    const auto other = random_bytes(4096, 6);
    const Checksum other_sum = ChecksumState::of(kDefaultChecksum, other.data(), other.size());
    BOOST_TEST(bad->adopt(image));
    BS_CHECK_ERROR(bad->commit(&other_sum), Errc::digest_mismatch, "nothing was stored");
    BOOST_TEST(!store.contains("CT.bad"));

    auto partly = store.reserve("CT.partly", bytes.size());
    BOOST_REQUIRE(!partly->write(bytes.data(), 10));
    BOOST_TEST(!partly->adopt(image));

    store.remove("CT.img");
    BOOST_TEST(!alive.expired());  // CT.verified and the view still hold it
    store.remove("CT.verified");
}
