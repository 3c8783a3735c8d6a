#include <blobstreaming/common/Sha256.h>

#include <blobstreaming/common/Error.h>

#include <openssl/evp.h>

namespace blobstreaming {

struct Sha256::Ctx {
    EVP_MD_CTX* md = nullptr;
    ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>())
{
    ctx_->md = EVP_MD_CTX_new();
    if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1)
        throw Error(Errc::io_error, "cannot initialise SHA-256 (OpenSSL EVP)");
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(const void* data, std::size_t size)
{
    if (size > 0) EVP_DigestUpdate(ctx_->md, data, size);
}

Digest Sha256::finish()
{
    Digest out{};
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_->md, out.data(), &len);
    return out;
}

Digest Sha256::of(const void* data, std::size_t size)
{
    Sha256 sha;
    sha.update(data, size);
    return sha.finish();
}

std::string to_hex(const Digest& digest)
{
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(64);
    for (auto b : digest) {
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
    }
    return out;
}

std::optional<Digest> digest_from_hex(std::string_view hex)
{
    if (hex.size() != 64) return std::nullopt;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    Digest out{};
    for (std::size_t i = 0; i < 32; ++i) {
        const int hi = nibble(hex[2 * i]);
        const int lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return out;
}

}  // namespace blobstreaming
