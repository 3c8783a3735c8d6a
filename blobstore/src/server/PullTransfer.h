#pragma once
/// A pull of a range of a committed version (docs/PROTOCOL.md, "Pull"): its
/// Response, then the bytes.

#include "Transfer.h"

#include <blobstreaming/blobstore/BlobRange.h>
#include <blobstreaming/transporter/DataIo.h>
#include <blobstreaming/transporter/WireCompression.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace blobstreaming::server {

/// Serves exactly the version its ticket names (else blob_changed, no
/// bytes): sendfile for a file-backed Blob; under TLS SSL_write from the
/// Blob's mapping (sendfile cannot encrypt); from a MemoryStore's buffer;
/// a streamed Blob (BlobRange::reader(): a RadosStore's, or a Blob being
/// filled, whose reader follows the fill: ReadThroughStore) through a
/// bounded buffer its reader fills, off the reactor (Step::wait) while a
/// read is on its way. At most data_path::kDispatchBudget bytes per writable event. A
/// store whose read() waits on another host (Store::read_waits()) opens the
/// range off the reactor.
class PullTransfer final : public Transfer {
public:
    using Transfer::Transfer;
    ~PullTransfer() override;

    Step start() override;
    Step on_writable() override;
    /// How the bytes go once answered: "sendfile", "from memory" (memory,
    /// or a file's mapping), "streamed" (a store's reader); for the log line.
    const char* method() const noexcept;

private:
    /// What one step of the send loop found.
    enum class Fill { ready, wait, failed };

    /// The Response for range_, then the bytes.
    Step answer();
    /// The refusal `e`: its Response, then the next Request.
    Step refuse(const Error& e);
    /// The pull's range from exactly the version its ticket names (one
    /// that was being received: the fill, or what it committed);
    /// Error(blob_changed) when the Blob was replaced or removed since. Any
    /// thread (a CommitPool thread for a store whose read() waits).
    BlobRange read_ticket_version();
    /// Sends at most `want` bytes at body_done_ (ready: `r` says what moved);
    /// wait: nothing to send until woken; failed: the transfer has failed.
    Fill send_chunk(std::size_t want, IoResult& r);
    /// Sends at most `want` of the buffered bytes.
    IoResult send_buffered(std::size_t want);
    /// stream_ allocated (once) for the range.
    void ensure_buffer();
    /// The range and the buffer are let go (a reader whose store still has a
    /// read on its way: on the CommitPool, which waits for it there).
    void release() noexcept;
    void abandon(Errc) override { release(); }

    BlobRange range_;
    /// A file view sent from its mapping rather than by sendfile (TLS,
    /// compression, or a small range of a file mapped already).
    bool from_mapping_ = false;
    /// Bytes read from the store's reader, [stream_at_,
    /// stream_end_) not sent yet; allocated for those only.
    std::vector<std::uint8_t> stream_;
    std::size_t stream_at_ = 0;
    std::size_t stream_end_ = 0;

    enum class Pump { done, again, wait, failed };
    Pump pump();
    /// A streamed pull: refills stream_ from the store once it is sent,
    /// without waiting for the store (the bytes on their way: Fill::wait).
    Fill fill_stream();
    /// start() for a store whose read() waits: opened on the CommitPool.
    Step open_away();

    // Compression on the wire (CompressedBody.cpp): a pull that asked for
    // it (Request::compress) from a store that compresses.
    /// The bytes as frames, at most a frame encoded ahead of the socket.
    Pump pump_frames();
    std::unique_ptr<wire::FrameEncoder> encoder_;
    std::optional<wire::CompressionPolicy> policy_;
    OutputBuffer frames_out_;
};

}  // namespace blobstreaming::server
