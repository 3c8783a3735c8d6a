#include "Workload.h"

#include <cstring>

namespace blobstreaming::bench {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) noexcept
{
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

}  // namespace

void fill_blob(std::uint32_t index, std::uint8_t* out, std::uint64_t size) noexcept
{
    std::uint64_t state = (static_cast<std::uint64_t>(index) << 40) ^ size ^ 0x42534245ULL;
    std::uint64_t done = 0;
    for (; done + 8 <= size; done += 8) {
        const std::uint64_t v = splitmix64(state);
        std::memcpy(out + done, &v, 8);
    }
    if (done < size) {
        const std::uint64_t v = splitmix64(state);
        std::memcpy(out + done, &v, size - done);
    }
}

BlobSet::BlobSet(std::uint32_t count, std::uint64_t size, bool generate) : size_(size), blobs_(count)
{
    for (std::uint32_t i = 0; i < count; ++i) {
        blobs_[i].assign(size, 0);  // zero-filling touches every page
        if (generate) fill_blob(i, blobs_[i].data(), size);
    }
}

void BlobSet::clear() noexcept
{
    for (auto& blob : blobs_) std::memset(blob.data(), 0, blob.size());
}

std::vector<Digest> BlobSet::digests() const
{
    std::vector<Digest> out;
    out.reserve(blobs_.size());
    for (const auto& blob : blobs_) out.push_back(Sha256::of(blob.data(), blob.size()));
    return out;
}

Digest expected_digest(std::uint32_t index, std::uint64_t size)
{
    std::vector<std::uint8_t> blob(size);
    fill_blob(index, blob.data(), size);
    return Sha256::of(blob.data(), blob.size());
}

std::string check_digests(const std::vector<Digest>& expected, const std::vector<Digest>& got)
{
    if (got.size() != expected.size())
        return "expected " + std::to_string(expected.size()) + " digests, the peer reported " +
               std::to_string(got.size());
    for (std::size_t i = 0; i < expected.size(); ++i)
        if (got[i] != expected[i])
            return "blob " + std::to_string(i) + ": sha256 " + to_hex(got[i]) + ", expected " + to_hex(expected[i]);
    return {};
}

}  // namespace blobstreaming::bench
