// memcpy: no peer and no socket, one memcpy() per blob between two buffers
// of this process, both touched before the runs. The memory ceiling of the
// table: a transfer over loopback copies every byte at least twice (into
// the kernel and out of it), so it cannot pass half of this rate on one core.
#include "Variant.h"

#include <blobstreaming/common/Error.h>

#include <cstring>
#include <optional>

namespace blobstreaming::bench {
namespace {

class MemcpyClient : public ClientTransport {
public:
    void open(const Config& config) override
    {
        // The other end's blobs: a push's destination (zeroes), a pull's
        // source (the blobs' content).
        peer_.emplace(config.count, config.size, config.direction == Direction::pull);
    }

    void push(std::uint32_t index, const std::uint8_t* data, std::uint64_t size) override
    {
        check(index, 0, size);
        std::memcpy(peer_->data(index), data, size);
    }

    void pull(std::uint32_t index, std::uint64_t offset, std::uint64_t length, std::uint8_t* out) override
    {
        check(index, offset, length);
        std::memcpy(out, peer_->data(index) + offset, length);
    }

    std::vector<Digest> stored_digests() override
    {
        auto digests = peer_->digests();
        peer_->clear();  // the next run must copy its own bytes
        return digests;
    }

    TransportInfo info() const override { return {}; }

private:
    void check(std::uint32_t index, std::uint64_t offset, std::uint64_t length) const
    {
        if (index >= peer_->count() || offset > peer_->size() || length > peer_->size() - offset)
            throw Error(Errc::invalid_range, "memcpy: blob " + std::to_string(index) + " range " +
                                                 std::to_string(offset) + "+" + std::to_string(length) + " outside " +
                                                 std::to_string(peer_->count()) + " x " +
                                                 std::to_string(peer_->size()));
    }

    std::optional<BlobSet> peer_;
};

}  // namespace

std::unique_ptr<ClientTransport> make_memcpy_client() { return std::make_unique<MemcpyClient>(); }

}  // namespace blobstreaming::bench
