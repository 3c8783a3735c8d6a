#include <blobstreaming/common/Sha256.h>

#define BOOST_TEST_MODULE Sha256
#include "TestSupport.h"

#include <openssl/sha.h>

using namespace blobstreaming;

BOOST_AUTO_TEST_CASE(known_answers)
{
    // FIPS 180-2 test vectors.
    BOOST_TEST(to_hex(Sha256::of("abc", 3)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    BOOST_TEST(to_hex(Sha256::of(nullptr, 0)) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

BOOST_AUTO_TEST_CASE(streamed_equals_one_shot_openssl_on_random_data)
{
    const auto data = test::random_bytes(3 * 1024 * 1024 + 17, 42);
    Digest reference{};
    ::SHA256(data.data(), data.size(), reference.data());

    std::mt19937 rng(7);
    Sha256 sha;
    std::size_t at = 0;
    while (at < data.size()) {
        const std::size_t n = std::min<std::size_t>(data.size() - at, rng() % 70000);
        sha.update(data.data() + at, n);
        at += n;
    }
    BOOST_TEST(to_hex(sha.finish()) == to_hex(reference));
}

BOOST_AUTO_TEST_CASE(hex_round_trip_and_rejects)
{
    const Digest d = Sha256::of("x", 1);
    BOOST_TEST(to_hex(*digest_from_hex(to_hex(d))) == to_hex(d));
    BOOST_TEST(!digest_from_hex("abc"));
    BOOST_TEST(!digest_from_hex(std::string(64, 'g')));
    std::string upper = to_hex(d);
    for (auto& c : upper) c = static_cast<char>(std::toupper(c));
    BOOST_TEST(to_hex(*digest_from_hex(upper)) == to_hex(d));
}
