#pragma once
/// Incremental SHA-256 (OpenSSL EVP), for digests computed while bytes flow.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace blobstreaming {

using Digest = std::array<std::uint8_t, 32>;

/// Lower-case hex, 64 characters.
std::string to_hex(const Digest& digest);
/// Parses 64 hex characters (either case); nullopt otherwise.
std::optional<Digest> digest_from_hex(std::string_view hex);

class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(Sha256&&) noexcept;
    Sha256& operator=(Sha256&&) noexcept;
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(const void* data, std::size_t size);
    /// Ends the computation; the object may not be updated afterwards.
    Digest finish();

    /// One-shot digest of a buffer.
    static Digest of(const void* data, std::size_t size);

private:
    struct Ctx;
    std::unique_ptr<Ctx> ctx_;
};

}  // namespace blobstreaming
