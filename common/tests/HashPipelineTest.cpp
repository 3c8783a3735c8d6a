// HashPipeline: the digest is the same inline and on the helper thread, for
// any way the stream is cut, with a resumed prefix, after settle() and after
// stop(); wait_hashed() returns once the bytes are hashed, on the helper.
#include <blobstreaming/common/HashPipeline.h>

#define BOOST_TEST_MODULE HashPipelineTest
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <random>
#include <thread>
#include <vector>

using namespace blobstreaming;

namespace {

std::vector<std::uint8_t> random_bytes(std::size_t size, unsigned seed)
{
    std::mt19937 gen(seed);
    std::vector<std::uint8_t> v(size);
    for (auto& b : v) b = static_cast<std::uint8_t>(gen());
    return v;
}

/// Feeds `bytes` from `from` on in pieces of pseudo-random length.
void feed(HashPipeline& hash, const std::vector<std::uint8_t>& bytes, std::size_t from, unsigned seed)
{
    std::mt19937 gen(seed);
    std::uniform_int_distribution<std::size_t> piece(1, 3 << 20);
    for (std::size_t at = from; at < bytes.size();) {
        const std::size_t n = std::min(piece(gen), bytes.size() - at);
        hash.update(bytes.data() + at, n);
        at += n;
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(background_and_inline_give_the_one_shot_digest)
{
    const auto bytes = random_bytes((std::size_t{21} << 20) + 5, 1);
    const Digest expected = Sha256::of(bytes.data(), bytes.size());
    for (const bool background : {false, true}) {
        HashPipeline hash;
        hash.reset(ChecksumState(ChecksumAlgorithm::sha256));
        if (background) hash.run_in_background();
        BOOST_TEST(hash.background() == background);
        feed(hash, bytes, 0, 2);
        BOOST_TEST(hash.finish().text() == Checksum::sha256(expected).text());
        BOOST_TEST(!hash.background());
    }
}

// CRC32C stays inline (a thread costs more than the CRC), with the same
// result as the reference.
BOOST_AUTO_TEST_CASE(crc32c_is_computed_inline)
{
    const auto bytes = random_bytes((std::size_t{5} << 20) + 3, 2);
    HashPipeline hash;
    hash.reset(ChecksumState(ChecksumAlgorithm::crc32c));
    hash.run_in_background();
    BOOST_TEST(!hash.background());
    feed(hash, bytes, 0, 3);
    BOOST_TEST(hash.finish().text() == ChecksumState::of(ChecksumAlgorithm::crc32c, bytes.data(), bytes.size()).text());
}

BOOST_AUTO_TEST_CASE(ranges_out_of_order_in_memory_are_hashed_in_call_order)
{
    const auto a = random_bytes(3 << 20, 3);
    const auto b = random_bytes(2 << 20, 4);
    Sha256 one;
    one.update(b.data(), b.size());
    one.update(a.data(), a.size());
    one.update(b.data(), 100);
    HashPipeline hash;
    hash.reset(ChecksumState(ChecksumAlgorithm::sha256));
    hash.run_in_background();
    hash.update(b.data(), b.size());
    hash.update(a.data(), a.size());
    hash.update(b.data(), 100);
    BOOST_TEST(hash.finish().text() == Checksum::sha256(one.finish()).text());
}

BOOST_AUTO_TEST_CASE(a_resumed_prefix_is_part_of_the_digest)
{
    const auto bytes = random_bytes(9 << 20, 5);
    const std::size_t resumed_at = (5 << 20) + 17;
    ChecksumState prefix(ChecksumAlgorithm::sha256);
    prefix.update(bytes.data(), resumed_at);
    HashPipeline hash;
    hash.reset(std::move(prefix));
    hash.run_in_background();
    feed(hash, bytes, resumed_at, 6);
    BOOST_TEST(hash.finish().text() == Checksum::sha256(Sha256::of(bytes.data(), bytes.size())).text());
}

BOOST_AUTO_TEST_CASE(stop_lets_go_of_the_bytes_and_the_pipeline_starts_over)
{
    const auto bytes = random_bytes(32 << 20, 7);
    HashPipeline hash;
    hash.reset(ChecksumState(ChecksumAlgorithm::sha256));
    hash.run_in_background();
    {
        const auto doomed = random_bytes(16 << 20, 8);
        hash.update(doomed.data(), doomed.size());
        hash.stop();  // `doomed` dies next: the helper must have let go
        BOOST_TEST(!hash.background());
        hash.stop();  // twice is fine
    }
    hash.reset(ChecksumState(ChecksumAlgorithm::sha256));
    hash.run_in_background();
    feed(hash, bytes, 0, 9);
    BOOST_TEST(hash.finish().text() == Checksum::sha256(Sha256::of(bytes.data(), bytes.size())).text());
}

// The bytes are hashed on the helper, not on the thread that queues them;
// inline (CRC32C, or SHA-256 without a helper) on the caller's.
BOOST_AUTO_TEST_CASE(background_hashing_runs_on_another_thread)
{
    const auto bytes = random_bytes(3 << 20, 10);
    for (const auto algorithm : {ChecksumAlgorithm::sha256, ChecksumAlgorithm::crc32c}) {
        HashPipeline hash(ChecksumState{algorithm});
        BOOST_TEST((hash.hashed_on() == std::thread::id{}));
        hash.run_in_background();
        hash.update(bytes.data(), bytes.size());
        hash.wait_hashed(hash.submitted());
        const bool helper = algorithm == ChecksumAlgorithm::sha256;
        BOOST_TEST(hash.background() == helper);
        BOOST_TEST((hash.hashed_on() != std::thread::id{}));
        BOOST_TEST((hash.hashed_on() != std::this_thread::get_id()) == helper);
        BOOST_TEST(hash.finish().text() == ChecksumState::of(algorithm, bytes.data(), bytes.size()).text());
    }
}

// Two buffers used in turn, each reused only after wait_hashed() let go of
// it (what a FileStore reservation does): the digest is the one of the
// whole stream, although every buffer is overwritten many times.
BOOST_AUTO_TEST_CASE(wait_hashed_lets_a_buffer_be_reused)
{
    const auto bytes = random_bytes((std::size_t{13} << 20) + 11, 11);
    constexpr std::size_t kSlot = (std::size_t{1} << 20) + 3;
    std::vector<std::uint8_t> slots[2] = {std::vector<std::uint8_t>(kSlot), std::vector<std::uint8_t>(kSlot)};
    std::uint64_t slot_end[2] = {0, 0};
    HashPipeline hash(ChecksumState{ChecksumAlgorithm::sha256});
    hash.run_in_background();
    BOOST_REQUIRE(hash.background());
    std::size_t k = 0;
    for (std::size_t at = 0; at < bytes.size(); k ^= 1) {
        hash.wait_hashed(slot_end[k]);
        const std::size_t n = std::min(kSlot, bytes.size() - at);
        std::copy_n(bytes.data() + at, n, slots[k].data());
        // In two calls, as a buffer filled by several receives.
        hash.update(slots[k].data(), n / 3);
        hash.update(slots[k].data() + n / 3, n - n / 3);
        at += n;
        slot_end[k] = hash.submitted();
        BOOST_TEST(hash.submitted() == at);
    }
    BOOST_TEST(hash.finish().text() == ChecksumState::of(ChecksumAlgorithm::sha256, bytes.data(), bytes.size()).text());
}

// settle() hashes what is queued and ends the helper; the state goes on,
// inline or on a new helper, and positions keep counting.
BOOST_AUTO_TEST_CASE(settle_keeps_the_state)
{
    const auto bytes = random_bytes(10 << 20, 12);
    HashPipeline hash(ChecksumState{ChecksumAlgorithm::sha256});
    hash.run_in_background();
    hash.update(bytes.data(), 4 << 20);
    hash.settle();
    BOOST_TEST(!hash.background());
    hash.settle();                                   // twice is fine
    hash.update(bytes.data() + (4 << 20), 1 << 20);  // inline
    hash.run_in_background();
    BOOST_REQUIRE(hash.background());
    hash.update(bytes.data() + (5 << 20), bytes.size() - (5 << 20));
    BOOST_TEST(hash.submitted() == bytes.size());
    BOOST_TEST(hash.finish().text() == ChecksumState::of(ChecksumAlgorithm::sha256, bytes.data(), bytes.size()).text());
}
