// The Store contract, run identically against FileStore and MemoryStore
// through the common interface.
#include <blobstreaming/blobstore/Store.h>

#define BOOST_TEST_MODULE Store
#include "TestSupport.h"

#include <blobstreaming/blobstore/EvictingStore.h>
#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/blobstore/MemoryStore.h>
#include <blobstreaming/blobstore/ObservedStore.h>

#include <boost/mpl/list.hpp>

#include <atomic>
#include <cstring>
#include <limits>
#include <thread>

#include <openssl/sha.h>

#include <cxxabi.h>
#include <dlfcn.h>

namespace {
/// Exceptions thrown in this process (every throw passes __cxa_throw).
std::atomic<int> g_throws{0};
}  // namespace

namespace __cxxabiv1 {
extern "C" [[noreturn]] void __cxa_throw(void* object, std::type_info* type, void (*destroy)(void*))
{
    ++g_throws;
    using Throw = void (*)(void*, std::type_info*, void (*)(void*));
    static const auto next = reinterpret_cast<Throw>(::dlsym(RTLD_NEXT, "__cxa_throw"));
    next(object, type, destroy);
    std::abort();  // not reached
}
}  // namespace __cxxabiv1

using namespace blobstreaming;
using test::random_bytes;

namespace {

struct FileStoreFactory {
    test::TempDir dir;
    std::unique_ptr<Store> make(std::uint64_t capacity = 0)
    {
        return std::make_unique<FileStore>(dir.path() / "store", FileStore::Options{capacity, true});
    }
};

struct MemoryStoreFactory {
    std::unique_ptr<Store> make(std::uint64_t capacity = 0)
    {
        return std::make_unique<MemoryStore>(MemoryStore::Options{capacity ? capacity : std::uint64_t{1} << 30});
    }
};

using Factories = boost::mpl::list<FileStoreFactory, MemoryStoreFactory>;

/// Writes `bytes` through window()/advance() in uneven pieces and commits.
BlobInfo put(Store& store, const std::string& name, const std::vector<std::uint8_t>& bytes,
             ReserveMode mode = ReserveMode::create)
{
    auto r = store.reserve(name, bytes.size(), mode);
    std::size_t at = 0, step = 1;
    while (at < bytes.size()) {
        std::error_code ec;
        auto w = r->window(step, ec);
        BOOST_REQUIRE(!ec);
        BOOST_REQUIRE(w.size > 0);
        std::memcpy(w.data, bytes.data() + at, w.size);
        BOOST_REQUIRE(!r->advance(w.size));
        at += w.size;
        step = step * 3 + 7;
    }
    return r->commit();
}

std::vector<std::uint8_t> get(const Store& store, const std::string& name)
{
    const BlobRange v = store.read_all(name);
    return {v.data(), v.data() + v.size()};
}

Digest openssl_sha256(const std::vector<std::uint8_t>& bytes)
{
    Digest d{};
    ::SHA256(bytes.data(), bytes.size(), d.data());
    return d;
}

/// The default checksum (CRC32C) of `bytes`, from the tests' reference.
Checksum crc_of(const std::vector<std::uint8_t>& bytes) { return test::reference_checksum(bytes); }

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(round_trip_with_digest_and_stat, F, Factories)
{
    F f;
    auto store = f.make();
    const auto bytes = random_bytes(1024 * 1024 + 13);
    const auto before = std::chrono::system_clock::now();
    const BlobInfo info = put(*store, "CT.1.2.840.10008.1", bytes);
    BOOST_TEST(info.size == bytes.size());
    BOOST_TEST(info.checksum.text() == crc_of(bytes).text());
    BOOST_TEST((info.committed >= before));

    const BlobInfo st = store->stat("CT.1.2.840.10008.1");
    BOOST_TEST(st.size == bytes.size());
    BOOST_TEST(st.checksum.text() == info.checksum.text());
    BOOST_TEST((st.committed == info.committed));
    BOOST_TEST(get(*store, "CT.1.2.840.10008.1") == bytes);
    BOOST_TEST(store->contains("CT.1.2.840.10008.1"));
    BOOST_TEST(!store->contains("CT.2"));
    const auto u = store->usage();
    BOOST_TEST(u.used == bytes.size());
    BOOST_TEST(u.reserved == 0u);
    BOOST_TEST(u.blob_count == 1u);
}

// MemoryStore maps Blobs from 2 MiB on separately (huge pages); both stores
// must behave the same on either side of that size, and a reader's view must
// outlive the Blob's removal there too.
BOOST_AUTO_TEST_CASE_TEMPLATE(sizes_around_two_mebibytes_round_trip, F, Factories)
{
    F f;
    auto store = f.make();
    constexpr std::size_t two_mib = std::size_t{2} << 20;
    for (const std::size_t size : {two_mib - 1, two_mib, two_mib + 1, 5 * two_mib + 3}) {
        const std::string name = "MR.size." + std::to_string(size);
        const auto bytes = random_bytes(size);
        BOOST_TEST(put(*store, name, bytes).checksum.text() == crc_of(bytes).text());
        const BlobRange view = store->read_all(name);
        store->remove(name);
        BOOST_TEST(!store->contains(name));
        BOOST_REQUIRE(view.size() == size);
        BOOST_TEST(std::memcmp(view.data(), bytes.data(), size) == 0);
    }
    BOOST_TEST(store->usage().used == 0u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(verify_rereads_and_confirms_the_digest, F, Factories)
{
    F f;
    auto store = f.make();
    const auto bytes = random_bytes(3 * 1024 * 1024 + 7);
    const BlobInfo info = put(*store, "CR.7", bytes);
    const BlobInfo checked = store->verify("CR.7");
    BOOST_TEST(checked.checksum.text() == crc_of(bytes).text());
    BOOST_TEST(checked.size == info.size);
    put(*store, "empty", {});
    BOOST_TEST(store->verify("empty").size == 0u);
    BS_CHECK_ERROR(store->verify("CR.8"), Errc::no_such_blob, "CR.8");
    BS_CHECK_ERROR(store->verify("../CR.7"), Errc::invalid_name, "../CR.7");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(zero_byte_blob, F, Factories)
{
    F f;
    auto store = f.make();
    const BlobInfo info = put(*store, "empty", {});
    BOOST_TEST(info.size == 0u);
    BOOST_TEST(info.checksum.text() == "crc32c:00000000");
    const BlobRange v = store->read_all("empty");
    BOOST_TEST(v.size() == 0u);
    BOOST_TEST(v.data() == nullptr);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(ranges_header_middle_last_byte, F, Factories)
{
    F f;
    auto store = f.make();
    const auto bytes = random_bytes(100000, 3);
    put(*store, "MR.7", bytes);
    const BlobRange header = store->read("MR.7", 0, 132);
    BOOST_TEST(std::vector<std::uint8_t>(header.data(), header.data() + 132) ==
               std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 132));
    const BlobRange middle = store->read_at("MR.7", 4097, 50000);
    BOOST_TEST(middle.start() == 4097u);
    BOOST_TEST(middle.end() == 54097u);
    BOOST_TEST(std::memcmp(middle.data(), bytes.data() + 4097, 50000) == 0);
    const BlobRange last = store->read_at("MR.7", 99999, 1);
    BOOST_TEST(last.size() == 1u);
    BOOST_REQUIRE(last.data() != nullptr);
    const std::uint8_t last_byte = *last.data();
    BOOST_TEST(last_byte == bytes.back());
    const BlobRange empty_at_end = store->read("MR.7", 100000, 100000);
    BOOST_TEST(empty_at_end.size() == 0u);
    BOOST_TEST(store->read("MR.7", 10, Store::kToEnd).size() == 99990u);
    BOOST_TEST(header.blob().size == 100000u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(range_past_end_is_rejected, F, Factories)
{
    F f;
    auto store = f.make();
    put(*store, "x", random_bytes(10));
    BS_CHECK_ERROR(store->read("x", 0, 11), Errc::invalid_range,
                   "read \"x\": range [0, 11) is outside the blob of 10 bytes");
    BS_CHECK_ERROR(store->read("x", 11, 11), Errc::invalid_range, "range [11, 11) is outside");
    BS_CHECK_ERROR(store->read("x", 5, 4), Errc::invalid_range, "range [5, 4) is outside");
    BS_CHECK_ERROR(store->read_at("x", 10, 1), Errc::invalid_range, "range [10, 11) is outside");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(offset_plus_length_overflow_is_rejected, F, Factories)
{
    F f;
    auto store = f.make();
    put(*store, "x", random_bytes(10));
    const auto max = std::numeric_limits<std::uint64_t>::max();
    BS_CHECK_ERROR(store->read_at("x", max, 2), Errc::invalid_range,
                   "read \"x\": offset 18446744073709551615 + length 2 overflows 64 bits");
    BS_CHECK_ERROR(store->read_at("x", 1ULL << 63, 1ULL << 63), Errc::invalid_range, "overflows 64 bits");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(unknown_blob_is_reported, F, Factories)
{
    F f;
    auto store = f.make();
    BS_CHECK_ERROR(store->stat("nope"), Errc::no_such_blob, "blob \"nope\" not found");
    BS_CHECK_ERROR(store->read("nope", 0, 0), Errc::no_such_blob, "blob \"nope\" not found");
    BS_CHECK_ERROR(store->remove("nope"), Errc::no_such_blob, "blob \"nope\" not found");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_missing_blob_is_a_value_not_an_exception, F, Factories)
{
    F f;
    // The kind through the decorators the daemon puts in front of it.
    auto store = std::make_unique<EvictingStore>(std::make_unique<ObservedStore>(f.make(1 << 20), nullptr));
    put(*store, "CT.1", random_bytes(1000));
    auto writing = store->reserve("CT.2", 10);
    const int before = g_throws.load();
    BOOST_TEST(!store->find("nope").has_value());
    BOOST_TEST(!store->contains("nope"));
    BOOST_TEST(!store->contains("CT.2"));  // only a reservation
    BOOST_TEST(store->contains("CT.1"));
    BOOST_TEST(store->find("CT.1")->size == 1000u);
    BOOST_TEST(g_throws.load() == before);
    // Where a refusal is reported, it keeps its error.
    BS_CHECK_ERROR(store->stat("nope"), Errc::no_such_blob, "blob \"nope\" not found");
    BS_CHECK_ERROR(store->stat("CT.2"), Errc::no_such_blob,
                   "blob \"CT.2\" not found (it is being written; it becomes visible at commit)");
    BS_CHECK_ERROR(store->find("../x"), Errc::invalid_name, "");
    BOOST_TEST(g_throws.load() > before);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(invalid_names_are_rejected_by_every_operation, F, Factories)
{
    F f;
    auto store = f.make();
    for (const std::string& bad : {std::string("../x"), std::string("/etc/passwd"), std::string(),
                                   std::string("a\0b", 3), std::string(201, 'n')}) {
        BS_CHECK_ERROR(store->reserve(bad, 1), Errc::invalid_name, "invalid blob name");
        BS_CHECK_ERROR(store->stat(bad), Errc::invalid_name, "invalid blob name");
        BS_CHECK_ERROR(store->read(bad, 0, 0), Errc::invalid_name, "invalid blob name");
        BS_CHECK_ERROR(store->read_at(bad, ~0ULL, 2), Errc::invalid_name, "invalid blob name");
        BS_CHECK_ERROR(store->remove(bad), Errc::invalid_name, "invalid blob name");
    }
    BOOST_TEST(store->list().empty());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(reserve_over_capacity_is_rejected, F, Factories)
{
    F f;
    auto store = f.make(1000);
    BS_CHECK_ERROR(store->reserve("big", 1001), Errc::out_of_space,
                   "no room for blob \"big\": need 1001 bytes, 1000 free of capacity 1000 (0 used, 0 reserved)");
    auto held = store->reserve("a", 600);
    BS_CHECK_ERROR(store->reserve("b", 500), Errc::out_of_space,
                   "need 500 bytes, 400 free of capacity 1000 (0 used, 600 reserved)");
    held->abort();
    BOOST_TEST(store->usage().reserved == 0u);
    BOOST_CHECK_NO_THROW(store->reserve("b", 1000));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(commit_twice_is_rejected, F, Factories)
{
    F f;
    auto store = f.make();
    auto r = store->reserve("x", 3);
    BOOST_REQUIRE(!r->write("abc", 3));
    r->commit();
    BS_CHECK_ERROR(r->commit(), Errc::reservation_closed, "commit \"x\": the reservation was already committed");
    BOOST_TEST(r->write("a", 1) == make_error_code(Errc::reservation_closed));
    BOOST_TEST(get(*store, "x") == std::vector<std::uint8_t>({'a', 'b', 'c'}));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(commit_of_incomplete_blob_is_rejected, F, Factories)
{
    F f;
    auto store = f.make();
    auto r = store->reserve("x", 10);
    BOOST_REQUIRE(!r->write("abcde", 5));
    BS_CHECK_ERROR(r->commit(), Errc::incomplete, "commit \"x\": 5 of 10 bytes written");
    BOOST_TEST(!store->contains("x"));
    BOOST_TEST(r->write("fghijk", 6) == make_error_code(Errc::invalid_range));
    BOOST_TEST(r->written() == 5u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(advance_beyond_window_is_rejected, F, Factories)
{
    F f;
    auto store = f.make();
    auto r = store->reserve("x", 10);
    std::error_code ec;
    auto w = r->window(4, ec);
    BOOST_TEST(w.size == 4u);
    BOOST_TEST(r->advance(5) == make_error_code(Errc::invalid_range));
    BOOST_TEST(r->written() == 0u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(abort_then_read_finds_nothing, F, Factories)
{
    F f;
    auto store = f.make(100);
    auto r = store->reserve("x", 100);
    BOOST_REQUIRE(!r->write(random_bytes(100).data(), 100));
    r->abort();
    BOOST_TEST(!r->is_open());
    BS_CHECK_ERROR(store->read("x", 0, 0), Errc::no_such_blob, "blob \"x\" not found");
    BS_CHECK_ERROR(r->commit(), Errc::reservation_closed, "already aborted");
    BOOST_TEST(store->usage().reserved == 0u);
    BOOST_TEST(store->list().empty());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(uncommitted_reservation_is_invisible, F, Factories)
{
    F f;
    auto store = f.make();
    auto r = store->reserve("x", 4);
    BOOST_REQUIRE(!r->write("abcd", 4));
    BS_CHECK_ERROR(store->read("x", 0, 4), Errc::no_such_blob,
                   "blob \"x\" not found (it is being written; it becomes visible at commit)");
    BS_CHECK_ERROR(store->stat("x"), Errc::no_such_blob, "it is being written");
    BOOST_TEST(store->list().empty());
    BOOST_TEST(store->usage().reserved == 4u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_an_open_reservation_aborts_it, F, Factories)
{
    F f;
    auto store = f.make();
    {
        auto r = store->reserve("x", 4);
        BOOST_REQUIRE(!r->write("ab", 2));
    }
    BOOST_TEST(store->usage().reserved == 0u);
    BOOST_TEST(!store->contains("x"));
    BOOST_CHECK_NO_THROW(store->reserve("x", 4));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(one_open_reservation_per_name, F, Factories)
{
    F f;
    auto store = f.make();
    auto r = store->reserve("x", 4);
    BS_CHECK_ERROR(store->reserve("x", 4, ReserveMode::replace), Errc::already_exists,
                   "blob \"x\" is already being written by another reservation");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(existing_name_needs_replace, F, Factories)
{
    F f;
    auto store = f.make();
    const auto old_bytes = random_bytes(5000, 1);
    const auto new_bytes = random_bytes(7000, 2);
    put(*store, "x", old_bytes);
    BS_CHECK_ERROR(store->reserve("x", 1), Errc::already_exists,
                   "blob \"x\" already exists (remove it first, or replace it)");
    const BlobRange old_view = store->read_all("x");
    put(*store, "x", new_bytes, ReserveMode::replace);
    BOOST_TEST(get(*store, "x") == new_bytes);
    // A reader of the replaced Blob keeps a consistent view of the old bytes.
    BOOST_TEST(std::vector<std::uint8_t>(old_view.data(), old_view.data() + old_view.size()) == old_bytes);
    BOOST_TEST(old_view.blob().size == 5000u);
    BOOST_TEST(store->usage().used == 7000u);
    BOOST_TEST(store->list().size() == 1u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(digest_mismatch_stores_nothing, F, Factories)
{
    F f;
    auto store = f.make();
    const auto bytes = random_bytes(4096);
    auto r = store->reserve("x", bytes.size());
    BOOST_REQUIRE(!r->write(bytes.data(), bytes.size()));
    Checksum wrong = crc_of(bytes);
    wrong.value[0] ^= 1;
    BS_CHECK_ERROR(r->commit(&wrong), Errc::digest_mismatch,
                   "commit \"x\": the received bytes have checksum " + crc_of(bytes).text() +
                       ", the sender announced " + wrong.text() + "; nothing was stored");
    BOOST_TEST(!store->contains("x"));
    BOOST_TEST(store->usage().reserved == 0u);

    // The right value in another algorithm is refused as well, and says so.
    auto other = store->reserve("x", bytes.size());
    BOOST_REQUIRE(!other->write(bytes.data(), bytes.size()));
    const Checksum sha = Checksum::sha256(openssl_sha256(bytes));
    BS_CHECK_ERROR(other->commit(&sha), Errc::digest_mismatch,
                   "commit \"x\": the sender announced a sha256 checksum, the push was granted for crc32c; "
                   "nothing was stored");
    BOOST_TEST(!store->contains("x"));

    auto ok = store->reserve("x", bytes.size());
    BOOST_REQUIRE(!ok->write(bytes.data(), bytes.size()));
    const Checksum right = crc_of(bytes);
    BOOST_TEST(ok->commit(&right).checksum.text() == right.text());
}

// A Blob reserved with SHA-256 is checksummed, stored, listed and verified
// with SHA-256 (OpenSSL's one-shot digest as the reference).
BOOST_AUTO_TEST_CASE_TEMPLATE(sha256_blobs_keep_their_algorithm, F, Factories)
{
    F f;
    auto store = f.make();
    const auto bytes = random_bytes(2 * 1024 * 1024 + 5, 3);
    auto r = store->reserve("US.sha", bytes.size(), ReserveMode::create, ChecksumAlgorithm::sha256);
    BOOST_TEST((r->checksum_algorithm() == ChecksumAlgorithm::sha256));
    BOOST_REQUIRE(!r->write(bytes.data(), bytes.size()));
    const Checksum expected = Checksum::sha256(openssl_sha256(bytes));
    BOOST_TEST(r->commit(&expected).checksum.text() == expected.text());
    BOOST_TEST(store->stat("US.sha").checksum.text() == expected.text());
    BOOST_TEST(store->verify("US.sha").checksum.text() == expected.text());
    BOOST_TEST(store->list().at(0).checksum.text() == expected.text());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(remove_keeps_readers_views, F, Factories)
{
    F f;
    auto store = f.make();
    const auto bytes = random_bytes(9000);
    put(*store, "x", bytes);
    const BlobRange view = store->read_all("x");
    store->remove("x");
    BS_CHECK_ERROR(store->stat("x"), Errc::no_such_blob, "not found");
    BOOST_TEST(std::memcmp(view.data(), bytes.data(), bytes.size()) == 0);
    BOOST_TEST(store->usage().used == 0u);
    BOOST_TEST(store->usage().blob_count == 0u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(list_is_sorted_by_name, F, Factories)
{
    F f;
    auto store = f.make();
    for (const char* n : {"c", "a", "b"}) put(*store, n, random_bytes(10));
    const auto all = store->list();
    BOOST_REQUIRE(all.size() == 3u);
    BOOST_TEST(all[0].name == "a");
    BOOST_TEST(all[1].name == "b");
    BOOST_TEST(all[2].name == "c");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(reservation_may_outlive_the_store_object, F, Factories)
{
    F f;
    auto store = f.make();
    auto r = store->reserve("x", 3);
    store.reset();
    BOOST_TEST(!r->write("abc", 3));
    BOOST_CHECK_NO_THROW(r->commit());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(concurrent_readers_and_writers, F, Factories)
{
    F f;
    auto store = f.make();
    const auto a = random_bytes(200000, 10);
    const auto b = random_bytes(150000, 11);
    const std::string da = to_hex(openssl_sha256(a)), db = to_hex(openssl_sha256(b));
    put(*store, "shared", a);

    constexpr int kWriters = 3, kBlobsEach = 15;
    std::atomic<bool> done{false};
    std::atomic<int> failures{0}, reads{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
        threads.emplace_back([&, w] {
            for (int i = 0; i < kBlobsEach; ++i) {
                const auto bytes = random_bytes(20000 + 1000 * i, 100 * w + i);
                auto r = store->reserve("w" + std::to_string(w) + "-" + std::to_string(i), bytes.size());
                if (r->write(bytes.data(), bytes.size())) ++failures;
                if (r->commit().checksum != crc_of(bytes)) ++failures;
            }
        });
    }
    // A replacer alternates "shared" between two contents.
    threads.emplace_back([&] {
        for (int i = 0; i < 30; ++i) {
            const auto& bytes = i % 2 ? a : b;
            auto r = store->reserve("shared", bytes.size(), ReserveMode::replace);
            if (r->write(bytes.data(), bytes.size())) ++failures;
            r->commit();
        }
    });
    // Readers: every view of "shared" is entirely the old or the new content.
    std::vector<std::thread> readers;
    for (int rd = 0; rd < 3; ++rd) {
        readers.emplace_back([&] {
            do {  // at least one read, however late a loaded machine schedules the reader
                const BlobRange v = store->read_all("shared");
                const std::string d = to_hex(Sha256::of(v.data(), v.size()));
                if (d != da && d != db) ++failures;
                if (v.blob().checksum != (v.size() == a.size() ? crc_of(a) : crc_of(b))) ++failures;
                ++reads;
            } while (!done);
        });
    }
    for (auto& t : threads) t.join();
    done = true;
    for (auto& t : readers) t.join();
    BOOST_TEST(failures.load() == 0);
    BOOST_TEST(reads.load() > 0);
    BOOST_TEST(store->list().size() == std::size_t{kWriters * kBlobsEach + 1});
    for (int w = 0; w < kWriters; ++w)
        for (int i = 0; i < kBlobsEach; ++i)
            BOOST_TEST(get(*store, "w" + std::to_string(w) + "-" + std::to_string(i)) ==
                       random_bytes(20000 + 1000 * i, 100 * w + i));
}
