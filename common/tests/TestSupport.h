#pragma once
// Helpers shared by the unit tests of common/, blobstore/ and clients/: a
// private temporary directory, reproducible random bytes, an independent
// CRC32C, whole reads and writes on a socket, and an assertion on an Error's
// code and text.

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <sys/socket.h>
#include <sys/types.h>

namespace blobstreaming::test {

/// A fresh directory under $TMPDIR, removed with everything in it.
class TempDir {
public:
    TempDir()
    {
        std::string templ = (std::filesystem::temp_directory_path() / "bs-test-XXXXXX").string();
        if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
        path_ = templ;
    }
    ~TempDir()
    {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

inline std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint32_t seed = 1)
{
    std::mt19937_64 rng(seed);
    std::vector<std::uint8_t> out(n);
    for (auto& b : out) b = static_cast<std::uint8_t>(rng());
    return out;
}

/// The textbook bitwise CRC32C, independent of ISA-L: the reference the
/// library's checksums are compared with.
inline std::uint32_t reference_crc32c(const std::uint8_t* p, std::size_t n)
{
    std::uint32_t crc = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < n; ++i) {
        crc ^= p[i];
        for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

/// The CRC32C checksum of `bytes`, computed by the reference.
inline Checksum reference_checksum(const std::vector<std::uint8_t>& bytes)
{
    return Checksum::crc32c(reference_crc32c(bytes.data(), bytes.size()));
}

/// send(2) all of `size` bytes to a blocking socket; false when the peer
/// is gone (never SIGPIPE).
inline bool write_all(int fd, const void* data, std::size_t size)
{
    const auto* p = static_cast<const std::uint8_t*>(data);
    while (size > 0) {
        const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
        if (n <= 0) return false;
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

/// recv(2) exactly `size` bytes from a blocking socket; false on EOF or error.
inline bool read_all(int fd, void* data, std::size_t size)
{
    auto* p = static_cast<std::uint8_t*>(data);
    while (size > 0) {
        const ssize_t n = ::recv(fd, p, size, 0);
        if (n <= 0) return false;
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace blobstreaming::test

/// Asserts that `statement` throws blobstreaming::Error with code `errc`
/// and a message containing `text`.
#define BS_CHECK_ERROR(statement, errc, text)                                                                          \
    do {                                                                                                               \
        try {                                                                                                          \
            statement;                                                                                                 \
            BOOST_ERROR("expected Error(" #errc ") from: " #statement);                                                \
        } catch (const ::blobstreaming::Error& e_) {                                                                   \
            BOOST_CHECK_MESSAGE(e_.code() == (errc), "code " << static_cast<int>(e_.code()) << ": " << e_.what());     \
            BOOST_CHECK_MESSAGE(std::string(e_.what()).find(text) != std::string::npos,                                \
                                "message \"" << e_.what() << "\" lacks \"" << (text) << "\"");                         \
        }                                                                                                              \
    } while (0)
