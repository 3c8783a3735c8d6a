// BlobInFlight: followers of a Blob being received read back what has
// landed, wait (and are woken) for the rest, then go on from the commit or
// end with the failure; on both stores that can read a reservation back.
#include <blobstreaming/blobstore/BlobInFlight.h>
#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/blobstore/MemoryStore.h>

#define BOOST_TEST_MODULE BlobInFlight
#include "TestSupport.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::test;

namespace {

constexpr std::size_t kSize = 3 * 1024 * 1024 + 17;

BlobInfo expected_of(const std::vector<std::uint8_t>& bytes)
{
    ChecksumState state(ChecksumAlgorithm::crc32c);
    state.update(bytes.data(), bytes.size());
    return BlobInfo{"CT.1", bytes.size(), state.finish(), {}};
}

/// Counts wake-ups; each read that waits registers one.
struct Wakes {
    std::atomic<int> count{0};
    std::function<void()> fn()
    {
        return [this] { ++count; };
    }
};

void follow_on(Store& store)
{
    const auto bytes = random_bytes(kSize, 7);
    const BlobInfo expected = expected_of(bytes);
    auto reservation = store.reserve("CT.1", kSize, ReserveMode::create, ChecksumAlgorithm::crc32c);
    BlobInFlight flight(expected);
    Wakes wakes;
    std::vector<std::uint8_t> out(kSize);

    // Nothing landed: the follower waits, woken by the first bytes.
    auto r = flight.read(0, out.data(), out.size(), wakes.fn());
    BOOST_TEST((r.state == BlobInFlight::State::wait));
    flight.attach(reservation.get());
    const std::size_t half = kSize / 2;
    BOOST_TEST(!reservation->write(bytes.data(), half));
    flight.landed(half);
    BOOST_TEST(wakes.count.load() == 1);

    // What landed is read back, exactly; beyond it the follower waits.
    r = flight.read(0, out.data(), out.size(), wakes.fn());
    BOOST_TEST((r.state == BlobInFlight::State::bytes));
    BOOST_TEST(r.bytes == half);
    BOOST_TEST(std::memcmp(out.data(), bytes.data(), half) == 0);
    r = flight.read(half, out.data() + half, kSize - half, wakes.fn());
    BOOST_TEST((r.state == BlobInFlight::State::wait));

    // A read from another thread while the filler goes on: the bytes
    // landed are the bytes written.
    std::thread follower([&] {
        std::uint64_t at = half;
        while (at < kSize) {
            std::mutex m;
            std::condition_variable cv;
            bool woken = false;
            const auto got = flight.read(at, out.data() + at, kSize - at, [&] {
                std::lock_guard lock(m);
                woken = true;
                cv.notify_all();
            });
            if (got.state == BlobInFlight::State::bytes) {
                at += got.bytes;
                continue;
            }
            BOOST_REQUIRE((got.state == BlobInFlight::State::wait));
            std::unique_lock lock(m);
            cv.wait(lock, [&] { return woken; });
        }
    });
    for (std::size_t at = half; at < kSize;) {
        const std::size_t n = std::min<std::size_t>(64 * 1024, kSize - at);
        BOOST_REQUIRE(!reservation->write(bytes.data() + at, n));
        at += n;
        flight.landed(at);
    }
    follower.join();
    BOOST_TEST(std::memcmp(out.data(), bytes.data(), kSize) == 0);

    // Detached for the commit: a follower waits; after it, it is told to
    // read the committed Blob, which is nowhere visible before.
    flight.detach();
    const int before = wakes.count.load();
    r = flight.read(0, out.data(), 1, wakes.fn());
    BOOST_TEST((r.state == BlobInFlight::State::wait));
    BOOST_TEST(store.list().empty());
    const BlobInfo info = reservation->commit(&expected.checksum);
    flight.finish(info);
    BOOST_TEST(wakes.count.load() == before + 1);
    r = flight.read(0, out.data(), 1, wakes.fn());
    BOOST_TEST((r.state == BlobInFlight::State::committed));
    BOOST_TEST(same_version(flight.committed(), store.stat("CT.1")));
    BOOST_TEST(!flight.receiving());
}

}  // namespace

BOOST_AUTO_TEST_CASE(memory_store_followers_read_back_wait_and_switch_to_the_commit)
{
    MemoryStore store(MemoryStore::Options{64u << 20});
    follow_on(store);
}

BOOST_AUTO_TEST_CASE(file_store_followers_read_back_wait_and_switch_to_the_commit)
{
    TempDir dir;
    FileStore store(dir.path(), FileStore::Options{0, false});
    follow_on(store);
}

BOOST_AUTO_TEST_CASE(a_failure_ends_every_follower_with_its_reason)
{
    MemoryStore store(MemoryStore::Options{64u << 20});
    const auto bytes = random_bytes(1024, 3);
    auto reservation = store.reserve("CT.2", bytes.size(), ReserveMode::create, ChecksumAlgorithm::crc32c);
    BlobInFlight flight(expected_of(bytes));
    flight.attach(reservation.get());
    Wakes wakes;
    std::vector<std::uint8_t> out(bytes.size());
    BOOST_TEST((flight.read(0, out.data(), out.size(), wakes.fn()).state == BlobInFlight::State::wait));
    BOOST_TEST((flight.read(0, out.data(), out.size(), wakes.fn()).state == BlobInFlight::State::wait));
    flight.detach();
    reservation->abort();
    flight.fail(Errc::timeout, "fetch \"CT.2\" from store \"central\": no progress within 2.000 s");
    BOOST_TEST(wakes.count.load() == 2);
    BOOST_TEST((flight.read(0, out.data(), out.size(), wakes.fn()).state == BlobInFlight::State::failed));
    BOOST_TEST(flight.failed());
    BOOST_TEST((flight.error().code() == Errc::timeout));
    BOOST_TEST(std::string(flight.error().what()).find("store \"central\"") != std::string::npos);
    // A late finish() changes nothing.
    flight.finish(BlobInfo{});
    BOOST_TEST(flight.failed());
}
