#include <blobstreaming/transporter/client/Streams.h>

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Protocol.h>

#include <algorithm>
#include <cerrno>

namespace blobstreaming::dataplane {

void Source::select(std::uint64_t, std::uint64_t)
{
    throw Error(Errc::invalid_argument, "this push source produces its bytes in order only: it cannot send a part");
}

void Source::hash_range(std::uint64_t, std::uint64_t, ChecksumState&)
{
    throw Error(Errc::invalid_argument, "this push source produces its bytes in order only: it cannot hash a part");
}

std::pair<const std::uint8_t*, std::size_t> Source::next(std::size_t, HashPipeline&)
{
    throw Error(Errc::invalid_argument, "this push source cannot be compressed on the wire: push with compression none");
}

ChunkedSource::ChunkedSource(Produce produce, std::string what, std::size_t chunk)
    : produce_(std::move(produce)), what_(std::move(what)),
      // A frame of `chunk` bytes, header included: a whole frame per send
      // of that size, never a 4-byte write of its own.
      frame_(std::max<std::size_t>(std::min<std::size_t>(chunk, protocol::kMaxChunk), protocol::kChunkHeaderSize + 1))
{}

long ChunkedSource::send(Channel& channel, std::size_t max, HashPipeline& hash)
{
    if (begin_ == end_) {
        if (last_) return 0;
        const std::size_t room = frame_.size() - protocol::kChunkHeaderSize;
        std::size_t got = 0;
        try {
            got = produce_(frame_.data() + protocol::kChunkHeaderSize, room);
        } catch (const Error&) {
            throw;
        } catch (const std::exception& e) {
            throw Error(Errc::io_error, what_ + ": the producer threw: " + e.what());
        }
        if (got > room)
            throw Error(Errc::io_error, what_ + ": the producer returned " + std::to_string(got) + " bytes after " +
                                            std::to_string(produced_) + " (asked for up to " + std::to_string(room) +
                                            ")");
        std::uint8_t header[protocol::kChunkHeaderSize];
        protocol::encode_chunk_header(static_cast<std::uint32_t>(got), header);
        std::copy(std::begin(header), std::end(header), frame_.begin());
        hash.update(frame_.data() + protocol::kChunkHeaderSize, got);
        produced_ += got;
        last_ = got == 0;
        begin_ = 0;
        end_ = protocol::kChunkHeaderSize + got;
    }
    const long n = channel.write(frame_.data() + begin_, std::min(max, end_ - begin_));
    if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    begin_ += static_cast<std::size_t>(n);
    return n;
}

void ChunkedSource::skip(std::uint64_t, ChecksumState&)
{
    throw Error(Errc::invalid_argument,
                what_ + ": a push of unknown length cannot resume (its producer cannot give the same bytes again)");
}

}  // namespace blobstreaming::dataplane
