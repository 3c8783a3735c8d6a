/// A pull that follows a Blob in flight, then its committed version.
#include "FollowTransfer.h"

#include "DataPath.h"

#include <algorithm>

namespace blobstreaming::server {

using data_path::bytes_of;

Step FollowTransfer::start()
{
    try {
        // Still arriving: sent on as it lands (fill_follow()).
        follow_ = binding_.follow;
        range_ = BlobRange(follow_->expected(), request_.offset, request_.offset + request_.length, nullptr);
    } catch (const Error& e) {
        return refuse(e);
    }
    return answer();
}

const char* FollowTransfer::method() const noexcept
{
    return follow_ ? "following its fetch" : PullTransfer::method();
}

PullTransfer::Fill FollowTransfer::send_chunk(std::size_t want, IoResult& r)
{
    if (!follow_) return PullTransfer::send_chunk(want, r);
    const Fill fill = fill_follow();
    if (fill == Fill::ready) r = send_buffered(want);
    return fill;
}

PullTransfer::Fill FollowTransfer::fill_follow()
{
    if (stream_at_ < stream_end_) return Fill::ready;
    const std::uint64_t total = range_.size();
    ensure_buffer();
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(stream_.size(), total - body_done_));
    const BlobInFlight::Read read = follow_->read(range_.start() + body_done_, stream_.data(), want, link_.waker());
    switch (read.state) {
    case BlobInFlight::State::bytes:
        stream_at_ = 0;
        stream_end_ = read.bytes;
        return Fill::ready;
    case BlobInFlight::State::wait: return Fill::wait;
    case BlobInFlight::State::committed:
        // Go on from the committed Blob, where the sent bytes end.
        follow_.reset();
        stream_at_ = stream_end_ = 0;
        try {
            range_ = read_ticket_version();
        } catch (const Error& e) {
            fail(e.code(), "after " + bytes_of(body_done_, total) + ": " + e.what(), false);
            return Fill::failed;
        }
        return Fill::switched;
    case BlobInFlight::State::failed: {
        const Error e = follow_->error();
        fail(e.code(), "the fetch it followed failed after " + bytes_of(body_done_, total) + ": " + e.what(), false);
        return Fill::failed;
    }
    }
    return Fill::failed;
}

void FollowTransfer::release() noexcept
{
    follow_.reset();
    PullTransfer::release();
}

}  // namespace blobstreaming::server
