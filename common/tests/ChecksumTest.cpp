#include <blobstreaming/common/Checksum.h>

#define BOOST_TEST_MODULE Checksum
#include "TestSupport.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include <vector>

using namespace blobstreaming;

using test::reference_crc32c;

BOOST_AUTO_TEST_CASE(known_answers)
{
    // The check value of the CRC catalogue and RFC 3720 (iSCSI) B.4.
    BOOST_TEST(crc32c("123456789", 9) == 0xE3069283u);
    std::vector<std::uint8_t> zeros(32, 0), ones(32, 0xFF), up(32), down(32);
    for (int i = 0; i < 32; ++i) up[i] = static_cast<std::uint8_t>(i), down[i] = static_cast<std::uint8_t>(31 - i);
    BOOST_TEST(crc32c(zeros.data(), 32) == 0x8A9136AAu);
    BOOST_TEST(crc32c(ones.data(), 32) == 0x62A8AB43u);
    BOOST_TEST(crc32c(up.data(), 32) == 0x46DD794Eu);
    BOOST_TEST(crc32c(down.data(), 32) == 0x113FDB5Cu);
    BOOST_TEST(crc32c(nullptr, 0) == 0u);
    BOOST_TEST(ChecksumState::of(ChecksumAlgorithm::crc32c, "123456789", 9).text() == "crc32c:e3069283");
    BOOST_TEST(ChecksumState::of(ChecksumAlgorithm::sha256, "abc", 3).text() ==
               "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

BOOST_AUTO_TEST_CASE(streamed_equals_the_bitwise_reference_on_random_data)
{
    const auto data = test::random_bytes(1024 * 1024 + 13, 5);
    std::mt19937 rng(11);
    ChecksumState state;
    std::size_t at = 0;
    while (at < data.size()) {
        const std::size_t n = std::min<std::size_t>(data.size() - at, rng() % 9000);
        state.update(data.data() + at, n);
        at += n;
    }
    BOOST_TEST(state.finish().crc() == reference_crc32c(data.data(), data.size()));
}

BOOST_AUTO_TEST_CASE(combine_gives_the_crc_of_the_concatenation)
{
    const auto data = test::random_bytes(200000, 9);
    const std::uint32_t whole = crc32c(data.data(), data.size());
    for (std::size_t split : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{4096}, std::size_t{123457},
                              data.size() - 1, data.size()}) {
        const std::uint32_t a = crc32c(data.data(), split);
        const std::uint32_t b = crc32c(data.data() + split, data.size() - split);
        BOOST_TEST(crc32c_combine(a, b, data.size() - split) == whole, "split at " << split);
    }
    // Three parts, combined left to right, as parallel streams would.
    const std::uint32_t p1 = crc32c(data.data(), 1000), p2 = crc32c(data.data() + 1000, 50000),
                        p3 = crc32c(data.data() + 51000, data.size() - 51000);
    BOOST_TEST(crc32c_combine(crc32c_combine(p1, p2, 50000), p3, data.size() - 51000) == whole);
}

BOOST_AUTO_TEST_CASE(combine_over_lengths_beyond_4_gib)
{
    // crc(A ‖ 5 GiB + 3 of zeros): the zero part's CRC is built by combining
    // (not hashed byte by byte), then checked against a second combination
    // order; lengths above 32 bits must not wrap.
    const std::uint64_t n = (std::uint64_t{5} << 30) + 3;
    std::vector<std::uint8_t> mib(1 << 20, 0);
    std::uint32_t zeros_mib = crc32c(mib.data(), mib.size());
    std::uint32_t zeros = crc32c(mib.data(), 3);
    for (int i = 0; i < 5 * 1024; ++i) zeros = crc32c_combine(zeros, zeros_mib, mib.size());
    const std::uint32_t a = crc32c("abc", 3);
    const std::uint32_t direct = crc32c_combine(a, zeros, n);
    // (A ‖ 3 zeros) then the 5 GiB of zeros.
    std::uint32_t big = crc32c(mib.data(), 0);
    for (int i = 0; i < 5 * 1024; ++i) big = crc32c_combine(big, zeros_mib, mib.size());
    const std::uint32_t a3 = crc32c(mib.data(), 3, a);
    BOOST_TEST(crc32c_combine(a3, big, std::uint64_t{5} << 30) == direct);
    BOOST_TEST(crc32c_combine(a, zeros, n) != crc32c_combine(a, zeros, n & 0xFFFFFFFFu));
}

BOOST_AUTO_TEST_CASE(text_parses_back_and_rejects_what_is_not_a_checksum)
{
    const Checksum c = Checksum::crc32c(0xE3069283u);
    BOOST_TEST(c.text() == "crc32c:e3069283");
    BOOST_TEST(c.crc() == 0xE3069283u);
    BOOST_TEST((Checksum::parse("crc32c:E3069283").value() == c));
    const Checksum s = ChecksumState::of(ChecksumAlgorithm::sha256, "abc", 3);
    BOOST_TEST((Checksum::parse(s.text()).value() == s));
    BOOST_TEST(s.brief() == "sha256:ba7816bf8f01cfea…");
    BOOST_TEST((c != Checksum::sha256(Digest{})));
    for (const char* bad : {"", "e3069283", "crc32c:", "crc32c:e306928", "crc32c:e30692833", "crc32c:e306928g",
                            "crc64:e3069283", "sha256:e3069283", "CRC32C:e3069283"})
        BOOST_TEST(!Checksum::parse(bad), bad);
}

BOOST_AUTO_TEST_CASE(algorithm_names_and_codes)
{
    BOOST_TEST((checksum_algorithm_from("crc32c") == ChecksumAlgorithm::crc32c));
    BOOST_TEST((checksum_algorithm_from("sha256") == ChecksumAlgorithm::sha256));
    BOOST_TEST(!checksum_algorithm_from("sha-256"));
    BOOST_TEST((checksum_algorithm_from_code(1) == ChecksumAlgorithm::sha256));
    BOOST_TEST((checksum_algorithm_from_code(2) == ChecksumAlgorithm::crc32c));
    BOOST_TEST(!checksum_algorithm_from_code(0));
    BOOST_TEST(!checksum_algorithm_from_code(3));
    BOOST_TEST(checksum_size(ChecksumAlgorithm::crc32c) == 4u);
    BOOST_TEST(checksum_size(ChecksumAlgorithm::sha256) == 32u);
}

BOOST_AUTO_TEST_CASE(update_from_a_descriptor_reads_to_its_end)
{
    test::TempDir dir;
    const auto data = test::random_bytes((std::size_t{3} << 20) + 5, 21);
    const std::string path = (dir.path() / "f").string();
    {
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_REQUIRE(fd >= 0);
    ChecksumState state;
    std::error_code ec;
    BOOST_TEST(state.update_from(fd, ec) == data.size());
    BOOST_TEST(!ec);
    ::close(fd);
    BOOST_TEST(state.finish().crc() == test::reference_crc32c(data.data(), data.size()));

    // A descriptor that cannot be read: nothing added, the errno in `ec`.
    const int dir_fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    BOOST_REQUIRE(dir_fd >= 0);
    ChecksumState other;
    BOOST_TEST(other.update_from(dir_fd, ec) == 0u);
    BOOST_TEST(ec.value() == EISDIR);
    ::close(dir_fd);
}
