#pragma once
/// A pull of a Blob this store is still receiving (read-through,
/// TicketBinding::follow): follows its BlobInFlight while the bytes arrive,
/// then serves the committed Blob.

#include "PullTransfer.h"

#include <blobstreaming/blobstore/BlobInFlight.h>

#include <memory>

namespace blobstreaming::server {

/// Promises the version being received (its size and checksum) in its
/// Response, sends the bytes as they land through the bounded buffer, and
/// leaves the reactor (Step::wait) while none is there to send. Once the
/// fetch commits it goes on from the committed Blob where the sent bytes
/// end, as a PullTransfer of that version; a fetch that fails fails it.
class FollowTransfer final : public PullTransfer {
public:
    using PullTransfer::PullTransfer;

    Step start() override;

private:
    const char* method() const noexcept override;
    Fill send_chunk(std::size_t want, IoResult& r) override;
    void release() noexcept override;
    /// Refills stream_ from the BlobInFlight; switched: it was committed
    /// meanwhile and range_ is now the committed Blob's.
    Fill fill_follow();

    std::shared_ptr<BlobInFlight> follow_;  ///< null once it serves the committed Blob
};

}  // namespace blobstreaming::server
