#include <blobstreaming/transporter/DataIo.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <utility>

#include <sys/sendfile.h>
#include <sys/types.h>

namespace blobstreaming {
namespace {

/// The result of a Channel call that returned `n` (-1: errno says why).
/// `writing`: a plain socket that would block waits to become writable.
IoResult classify(Channel& channel, long n, bool writing)
{
    if (n > 0) return IoResult::moved(static_cast<std::size_t>(n));
    if (n == 0) return IoResult::stopped(IoResult::Status::eof);
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
        const bool want_write = channel.tls() ? channel.wants_write() : writing;
        return IoResult::stopped(want_write ? IoResult::Status::want_write : IoResult::Status::want_read);
    }
    return IoResult::failed(err, channel.error_text(err));
}

/// Calls `op` (a Channel call returning `long` + errno) until it is not
/// interrupted, and classifies what it returned.
template <class Op>
IoResult retrying(Channel& channel, bool writing, Op op)
{
    for (;;) {
        const long n = op();
        if (n < 0 && errno == EINTR) continue;
        return classify(channel, n, writing);
    }
}

}  // namespace

IoResult IoResult::failed(int error_number, std::string text)
{
    IoResult r(Status::error, 0);
    r.error_number_ = error_number;
    r.text_ = std::move(text);
    return r;
}

IoResult IoResult::after(std::size_t bytes) && noexcept
{
    bytes_ += bytes;
    return std::move(*this);
}

IoResult read_some(Channel& channel, void* data, std::size_t size)
{
    return retrying(channel, false, [&] { return channel.read(data, size); });
}

IoResult write_some(Channel& channel, const void* data, std::size_t size, bool more)
{
    if (size == 0) return IoResult::moved(0);
    IoResult r = retrying(channel, true, [&] { return channel.write(data, size, more); });
    if (r.eof()) return IoResult::failed(EPIPE, channel.error_text(EPIPE));  // send() moved nothing of `size`
    return r;
}

IoResult send_file(Channel& channel, int file, std::uint64_t offset, std::size_t size)
{
    return retrying(channel, true, [&] {
        auto off = static_cast<off_t>(offset);
        return static_cast<long>(::sendfile(channel.fd(), file, &off, size));
    });
}

IoResult peek(Channel& channel)
{
    return retrying(channel, false, [&] { return channel.probe(); });
}

IoResult discard(Channel& channel, std::uint64_t limit)
{
    thread_local std::uint8_t sink[65536];
    std::uint64_t dropped = 0;
    while (dropped < limit) {
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof sink, limit - dropped));
        IoResult r = read_some(channel, sink, want);
        if (!r.done()) return std::move(r).after(static_cast<std::size_t>(dropped));
        dropped += r.bytes();
    }
    return IoResult::moved(static_cast<std::size_t>(dropped));
}

void FrameReader::expect(std::size_t size)
{
    if (size > buffer_.size())
        throw std::length_error("FrameReader: a frame of " + std::to_string(size) + " bytes exceeds its " +
                                std::to_string(buffer_.size()));
    size_ = size;
    got_ = 0;
}

void FrameReader::extend(std::size_t more)
{
    const std::size_t got = got_;
    expect(size_ + more);
    got_ = got;
}

IoResult FrameReader::fill(Channel& channel)
{
    std::size_t arrived = 0;
    while (got_ < size_) {
        IoResult r = read_some(channel, buffer_.data() + got_, size_ - got_);
        if (!r.done()) return std::move(r).after(arrived);
        got_ += r.bytes();
        arrived += r.bytes();
    }
    return IoResult::moved(arrived);
}

void OutputBuffer::append(const void* data, std::size_t size) { bytes_.append(static_cast<const char*>(data), size); }

IoResult OutputBuffer::drain(Channel& channel, bool more)
{
    std::size_t left = 0;
    while (sent_ < bytes_.size()) {
        IoResult r = write_some(channel, bytes_.data() + sent_, bytes_.size() - sent_, more);
        if (!r.done()) return std::move(r).after(left);
        sent_ += r.bytes();
        left += r.bytes();
    }
    clear();
    return IoResult::moved(left);
}

void OutputBuffer::clear() noexcept
{
    bytes_.clear();
    sent_ = 0;
}

}  // namespace blobstreaming
