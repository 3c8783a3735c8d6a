#include <blobstreaming/common/Checksum.h>

#include <isa-l/crc.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include <unistd.h>

namespace blobstreaming {

namespace {

/// CRC32C's polynomial, bit-reflected (x^0 in the top bit).
constexpr std::uint32_t kCrc32cPoly = 0x82F63B78u;

/// a(x) * b(x) modulo the CRC polynomial, both reflected.
std::uint32_t multiply_mod_poly(std::uint32_t a, std::uint32_t b) noexcept
{
    std::uint32_t product = 0;
    for (std::uint32_t bit = 1u << 31; bit != 0; bit >>= 1) {
        if (a & bit) product ^= b;
        b = (b & 1) ? (b >> 1) ^ kCrc32cPoly : b >> 1;
    }
    return product;
}

/// x^(2^k) modulo the polynomial for k = 0..63, reflected.
struct PowersOfX {
    std::array<std::uint32_t, 64> x2k{};
    PowersOfX() noexcept
    {
        std::uint32_t p = 1u << 30;  // x^1
        for (auto& entry : x2k) {
            entry = p;
            p = multiply_mod_poly(p, p);
        }
    }
};

/// x^(8 * bytes) modulo the polynomial: what shifting a CRC over `bytes`
/// zero bytes multiplies it by.
std::uint32_t x_pow_8n(std::uint64_t bytes) noexcept
{
    static const PowersOfX powers;
    std::uint32_t p = 1u << 31;  // x^0
    for (unsigned k = 3; bytes != 0 && k < 64; ++k, bytes >>= 1)
        if (bytes & 1) p = multiply_mod_poly(powers.x2k[k], p);
    return p;
}

int hex_nibble(char c) noexcept
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

std::string_view to_string(ChecksumAlgorithm algorithm) noexcept
{
    switch (algorithm) {
    case ChecksumAlgorithm::crc32c: return "crc32c";
    case ChecksumAlgorithm::sha256: return "sha256";
    }
    return "unknown";
}

std::optional<ChecksumAlgorithm> checksum_algorithm_from(std::string_view name) noexcept
{
    if (name == "crc32c") return ChecksumAlgorithm::crc32c;
    if (name == "sha256") return ChecksumAlgorithm::sha256;
    return std::nullopt;
}

std::optional<ChecksumAlgorithm> checksum_algorithm_from_code(unsigned code) noexcept
{
    switch (code) {
    case static_cast<unsigned>(ChecksumAlgorithm::crc32c): return ChecksumAlgorithm::crc32c;
    case static_cast<unsigned>(ChecksumAlgorithm::sha256): return ChecksumAlgorithm::sha256;
    default: return std::nullopt;
    }
}

std::size_t checksum_size(ChecksumAlgorithm algorithm) noexcept
{
    return algorithm == ChecksumAlgorithm::sha256 ? 32 : 4;
}

std::string Checksum::hex() const
{
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * size());
    for (std::size_t i = 0; i < size(); ++i) {
        out += kHex[value[i] >> 4];
        out += kHex[value[i] & 0xf];
    }
    return out;
}

std::string Checksum::text() const { return std::string(to_string(algorithm)) + ":" + hex(); }

std::string Checksum::brief() const
{
    if (size() <= 8) return text();
    return std::string(to_string(algorithm)) + ":" + hex().substr(0, 16) + "…";
}

std::optional<Checksum> Checksum::parse(std::string_view text)
{
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto algorithm = checksum_algorithm_from(text.substr(0, colon));
    if (!algorithm) return std::nullopt;
    const std::string_view hex = text.substr(colon + 1);
    Checksum out;
    out.algorithm = *algorithm;
    if (hex.size() != 2 * out.size()) return std::nullopt;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const int hi = hex_nibble(hex[2 * i]), lo = hex_nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out.value[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return out;
}

Checksum Checksum::crc32c(std::uint32_t crc) noexcept
{
    Checksum out;
    out.algorithm = ChecksumAlgorithm::crc32c;
    for (int i = 0; i < 4; ++i) out.value[i] = static_cast<std::uint8_t>(crc >> (24 - 8 * i));
    return out;
}

Checksum Checksum::sha256(const Digest& digest) noexcept
{
    Checksum out;
    out.algorithm = ChecksumAlgorithm::sha256;
    std::copy(digest.begin(), digest.end(), out.value.begin());
    return out;
}

std::uint32_t Checksum::crc() const noexcept
{
    return std::uint32_t{value[0]} << 24 | std::uint32_t{value[1]} << 16 | std::uint32_t{value[2]} << 8 | value[3];
}

std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t previous) noexcept
{
    // ISA-L's crc32_iscsi works on the raw register (no pre- or
    // post-inversion) and takes an int length.
    auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
    std::uint32_t reg = ~previous;
    constexpr std::size_t kMaxChunk = std::size_t{1} << 30;
    while (size > 0) {
        const std::size_t n = size < kMaxChunk ? size : kMaxChunk;
        reg = crc32_iscsi(p, static_cast<int>(n), reg);
        p += n;
        size -= n;
    }
    return ~reg;
}

std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t length_b) noexcept
{
    // crc(A‖B) = crc(A) * x^(8 len B) + crc(B) over GF(2) modulo the
    // polynomial; the pre- and post-inversions cancel out in this form.
    return multiply_mod_poly(x_pow_8n(length_b), crc_a) ^ crc_b;
}

ChecksumState::ChecksumState(ChecksumAlgorithm algorithm) : algorithm_(algorithm)
{
    if (algorithm_ == ChecksumAlgorithm::sha256) sha_.emplace();
}

void ChecksumState::update(const void* data, std::size_t size)
{
    if (size == 0) return;
    if (sha_) sha_->update(data, size);
    else crc_ = crc32c(data, size, crc_);
}

std::uint64_t ChecksumState::update_from(int fd, std::error_code& ec)
{
    ec.clear();
    std::vector<std::uint8_t> buffer(std::size_t{1} << 20);
    std::uint64_t added = 0;
    for (;;) {
        const ssize_t n = ::read(fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            ec = std::error_code(errno, std::generic_category());
            return added;
        }
        if (n == 0) return added;
        update(buffer.data(), static_cast<std::size_t>(n));
        added += static_cast<std::uint64_t>(n);
    }
}

Checksum ChecksumState::finish()
{
    if (sha_) return Checksum::sha256(sha_->finish());
    return Checksum::crc32c(crc_);
}

Checksum ChecksumState::of(ChecksumAlgorithm algorithm, const void* data, std::size_t size)
{
    ChecksumState state(algorithm);
    state.update(data, size);
    return state.finish();
}

}  // namespace blobstreaming
