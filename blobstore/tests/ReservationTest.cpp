// Reservation's checksum, on both stores: SHA-256 hashed on the helper
// thread gives OpenSSL's one-shot digest whatever the sizes and windows,
// across suspend(), with a FileStore's receive buffers reused in turn; abort
// and destruction with bytes still queued (run under the sanitizers too);
// CRC32C stays inline.
#include <blobstreaming/blobstore/Reservation.h>

#define BOOST_TEST_MODULE Reservation
#include "TestSupport.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/blobstore/MemoryStore.h>

#include <boost/mpl/list.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>

#include <openssl/sha.h>

using namespace blobstreaming;
using test::random_bytes;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

struct FileStoreFactory {
    test::TempDir dir;
    std::unique_ptr<Store> make()
    {
        return std::make_unique<FileStore>(dir.path() / "store", FileStore::Options{0, true});
    }
};

struct MemoryStoreFactory {
    std::unique_ptr<Store> make()
    {
        return std::make_unique<MemoryStore>(MemoryStore::Options{std::uint64_t{1} << 30});
    }
};

using Factories = boost::mpl::list<FileStoreFactory, MemoryStoreFactory>;

Checksum openssl_sha256(const std::uint8_t* data, std::size_t size)
{
    Digest d{};
    ::SHA256(data, size, d.data());
    return Checksum::sha256(d);
}

Checksum openssl_sha256(const std::vector<std::uint8_t>& bytes) { return openssl_sha256(bytes.data(), bytes.size()); }

/// Fills `r` with bytes[from, to) window by window, as a receiving
/// connection does: windows of varying sizes (up to 3 MiB, past a FileStore's
/// buffer), each advanced over in one or two parts (short receives).
void fill(Reservation& r, const std::vector<std::uint8_t>& bytes, std::size_t from, std::size_t to, unsigned seed)
{
    std::mt19937 gen(seed);
    std::uniform_int_distribution<std::size_t> want(1, 3 * kMiB);
    BOOST_REQUIRE(r.written() == from);
    for (std::size_t at = from; at < to;) {
        std::error_code ec;
        const auto w = r.window(std::min(want(gen), to - at), ec);
        BOOST_REQUIRE(!ec);
        BOOST_REQUIRE(w.size > 0);
        const std::size_t first = gen() % 2 ? w.size : w.size / 2 + 1;
        std::memcpy(w.data, bytes.data() + at, first);
        BOOST_REQUIRE(!r.advance(first));
        at += first;
        if (first < w.size) {
            std::memcpy(w.data + first, bytes.data() + at, w.size - first);
            BOOST_REQUIRE(!r.advance(w.size - first));
            at += w.size - first;
        }
    }
}

std::vector<std::uint8_t> stored(const Store& store, const std::string& name)
{
    const BlobRange v = store.read_all(name);
    return {v.data(), v.data() + v.size()};
}

}  // namespace

// Below, around and above a FileStore's 1 MiB buffer and the helper's
// kMaxHashLag, several MiB: the committed checksum is OpenSSL's one-shot
// SHA-256 of the bytes, and the bytes are stored unchanged.
BOOST_AUTO_TEST_CASE_TEMPLATE(sha256_in_the_background_is_the_one_shot_digest, F, Factories)
{
    F f;
    auto store = f.make();
    const std::size_t lag = Reservation::kMaxHashLag;
    unsigned seed = 1;
    for (const std::size_t size : {std::size_t{1}, std::size_t{4095}, kMiB - 1, kMiB, kMiB + 1, 2 * kMiB - 1, 2 * kMiB,
                                   2 * kMiB + 1, 3 * kMiB + 5, lag - 1, lag + 1, 3 * lag + 4 * kMiB + 7}) {
        BOOST_TEST_CONTEXT("size " << size)
        {
            const auto bytes = random_bytes(size, ++seed);
            const std::string name = "SHA.size." + std::to_string(size);
            auto r = store->reserve(name, size, ReserveMode::create, ChecksumAlgorithm::sha256);
            fill(*r, bytes, 0, size, seed);
            const Checksum expected = openssl_sha256(bytes);
            BOOST_TEST(r->commit(&expected).checksum.text() == expected.text());
            BOOST_TEST(!r->hashes_in_background());
            BOOST_TEST(store->stat(name).checksum.text() == expected.text());
            BOOST_TEST((stored(*store, name) == bytes));
            store->remove(name);
        }
    }
    // Nothing to hash: the digest of no bytes, no helper started.
    auto empty = store->reserve("SHA.empty", 0, ReserveMode::create, ChecksumAlgorithm::sha256);
    std::error_code ec;
    BOOST_TEST(empty->window(1, ec).size == 0u);
    BOOST_TEST(!empty->hashes_in_background());
    BOOST_TEST(empty->commit().checksum.text() == openssl_sha256(nullptr, 0).text());
}

// For SHA-256 the bytes are hashed on a helper thread from the first window
// on, not on the thread that fills the reservation (HashPipelineTest shows
// that background() means another thread hashes); suspend() and commit()
// end it. CRC32C never starts one.
BOOST_AUTO_TEST_CASE_TEMPLATE(sha256_is_hashed_off_the_filling_thread, F, Factories)
{
    F f;
    auto store = f.make();
    const auto bytes = random_bytes(4 * kMiB + 3, 7);
    for (const auto algorithm : {ChecksumAlgorithm::sha256, ChecksumAlgorithm::crc32c}) {
        const bool helper = algorithm == ChecksumAlgorithm::sha256;
        auto r = store->reserve("OFF", bytes.size(), ReserveMode::replace, algorithm);
        BOOST_TEST(!r->hashes_in_background());  // nothing to hash yet
        fill(*r, bytes, 0, kMiB, 8);
        BOOST_TEST(r->hashes_in_background() == helper);
        r->suspend();
        BOOST_TEST(!r->hashes_in_background());
        fill(*r, bytes, kMiB, bytes.size(), 9);
        BOOST_TEST(r->hashes_in_background() == helper);
        BOOST_TEST(r->commit().checksum.text() == ChecksumState::of(algorithm, bytes.data(), bytes.size()).text());
        BOOST_TEST(!r->hashes_in_background());
    }
}

// suspend() mid-way (the helper drained and ended, a FileStore's buffers and
// descriptor given back), then the push continues: the digest is the one of
// the whole Blob, as for a push resumed after its client was interrupted.
BOOST_AUTO_TEST_CASE_TEMPLATE(sha256_continues_across_suspend, F, Factories)
{
    F f;
    auto store = f.make();
    const auto bytes = random_bytes(13 * kMiB + 11, 10);
    auto r = store->reserve("SUSP", bytes.size(), ReserveMode::create, ChecksumAlgorithm::sha256);
    const std::size_t cuts[] = {0, 1, kMiB + 5, kMiB + 6, 6 * kMiB, 12 * kMiB + 1, bytes.size()};
    for (std::size_t i = 0; i + 1 < std::size(cuts); ++i) {
        fill(*r, bytes, cuts[i], cuts[i + 1], 11 + static_cast<unsigned>(i));
        r->suspend();
        BOOST_TEST(r->written() == cuts[i + 1]);
        BOOST_TEST((r->checksum_algorithm() == ChecksumAlgorithm::sha256));
    }
    const Checksum expected = openssl_sha256(bytes);
    BOOST_TEST(r->commit(&expected).checksum.text() == expected.text());
    BOOST_TEST((stored(*store, "SUSP") == bytes));
}

// abort() and the destructor with bytes still queued for the helper: it
// lets go of them before the store frees the window's memory (a
// use-after-free here is what the sanitizer build would report), and the
// space comes back.
BOOST_AUTO_TEST_CASE_TEMPLATE(abort_with_bytes_queued_for_the_helper, F, Factories)
{
    F f;
    auto store = f.make();
    const auto bytes = random_bytes(24 * kMiB + 1, 20);
    for (const std::size_t upto : {std::size_t{1}, kMiB + 1, 2 * kMiB, 20 * kMiB + 3}) {
        BOOST_TEST_CONTEXT("aborted after " << upto << " bytes")
        {
            auto r = store->reserve("AB", bytes.size(), ReserveMode::create, ChecksumAlgorithm::sha256);
            fill(*r, bytes, 0, upto, 21);
            BOOST_TEST(r->hashes_in_background());
            r->abort();
            BOOST_TEST(!r->is_open());
            BOOST_TEST(!r->hashes_in_background());
            BOOST_TEST(!store->contains("AB"));
            BOOST_TEST(store->usage().reserved == 0u);

            auto dropped = store->reserve("AB", bytes.size(), ReserveMode::create, ChecksumAlgorithm::sha256);
            fill(*dropped, bytes, 0, upto, 22);
            dropped.reset();  // the destructor aborts
            BOOST_TEST(store->usage().reserved == 0u);
        }
    }
    // Suspended, then aborted: nothing queued any more, nothing to stop.
    auto r = store->reserve("AB", bytes.size(), ReserveMode::create, ChecksumAlgorithm::sha256);
    fill(*r, bytes, 0, 5 * kMiB, 23);
    r->suspend();
    r->abort();
    BOOST_TEST(store->usage().reserved == 0u);
}

// A SHA-256 push whose sender announces another digest is aborted at commit
// and stores nothing, with the helper's result in the message.
BOOST_AUTO_TEST_CASE_TEMPLATE(sha256_digest_mismatch_stores_nothing, F, Factories)
{
    F f;
    auto store = f.make();
    const auto bytes = random_bytes(5 * kMiB + 9, 30);
    const Checksum right = openssl_sha256(bytes);
    Checksum wrong = right;
    wrong.value[31] ^= 1;
    auto r = store->reserve("MIS", bytes.size(), ReserveMode::create, ChecksumAlgorithm::sha256);
    fill(*r, bytes, 0, bytes.size(), 31);
    BS_CHECK_ERROR(r->commit(&wrong), Errc::digest_mismatch,
                   "commit \"MIS\": the received bytes have checksum " + right.text() + ", the sender announced " +
                       wrong.text() + "; nothing was stored");
    BOOST_TEST(!r->is_open());
    BOOST_TEST(!store->contains("MIS"));
    BOOST_TEST(store->usage().reserved == 0u);
    BOOST_TEST(store->list().empty());
}

// A FileStore reservation receives a SHA-256 push into two 1 MiB buffers in
// turn (one hashed while the other receives), a CRC32C push into one: its
// memory stays a few MiB whatever the Blob's size.
BOOST_AUTO_TEST_CASE(a_file_store_receives_sha256_into_two_buffers_in_turn)
{
    test::TempDir dir;
    FileStore store(dir.path() / "store", FileStore::Options{0, false});
    const auto bytes = random_bytes(10 * kMiB + 5, 40);
    for (const auto algorithm : {ChecksumAlgorithm::sha256, ChecksumAlgorithm::crc32c}) {
        auto r = store.reserve("BUF", bytes.size(), ReserveMode::replace, algorithm);
        std::map<const std::uint8_t*, std::size_t> regions;  // window start -> largest size seen
        std::size_t at = 0;
        while (at < bytes.size()) {
            std::error_code ec;
            const auto w = r->window(256 * 1024 + 3, ec);
            BOOST_REQUIRE(w.size > 0);
            auto& largest = regions[w.data];
            largest = std::max(largest, w.size);
            std::memcpy(w.data, bytes.data() + at, w.size);
            BOOST_REQUIRE(!r->advance(w.size));
            at += w.size;
        }
        // The memory the windows covered (regions sorted by address).
        std::size_t covered = 0;
        std::uintptr_t end = 0;
        for (const auto& [data, size] : regions) {
            const auto start = reinterpret_cast<std::uintptr_t>(data);
            if (start + size > end) covered += start + size - std::max(start, end);
            end = std::max<std::uintptr_t>(end, start + size);
        }
        if (algorithm == ChecksumAlgorithm::sha256) {
            BOOST_TEST(covered == 2 * kMiB);
            BOOST_TEST(regions.size() == 8u);  // filled front to back: 4 windows each
        } else {
            BOOST_TEST(covered == 256 * 1024 + 3);
            BOOST_TEST(regions.size() == 1u);  // every window at the buffer's start
        }
        BOOST_TEST(r->commit().checksum.text() == ChecksumState::of(algorithm, bytes.data(), bytes.size()).text());
        BOOST_TEST((stored(store, "BUF") == bytes));
    }
}
