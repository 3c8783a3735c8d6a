/// The frames of a compressed body, their codec and the choice of `auto`.
#include <blobstreaming/transporter/WireCompression.h>

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/LittleEndian.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <linux/tcp.h>  // tcp_info with tcpi_delivery_rate (glibc's lacks it)
#include <sys/socket.h>

#include <zstd.h>

namespace blobstreaming::wire {

const char* to_string(CompressMode mode) noexcept
{
    switch (mode) {
    case CompressMode::none: return "none";
    case CompressMode::zstd: return "zstd";
    case CompressMode::automatic: return "auto";
    }
    return "none";
}

std::optional<CompressMode> compress_mode_from(std::string_view text) noexcept
{
    if (text == "none") return CompressMode::none;
    if (text == "zstd") return CompressMode::zstd;
    if (text == "auto") return CompressMode::automatic;
    return std::nullopt;
}

std::size_t max_wire() noexcept { return ZSTD_COMPRESSBOUND(kMaxFrame); }

// kind u8 | reserved[3] | wire u32 | bytes u32
void encode(const FrameHeader& h, std::uint8_t (&out)[kFrameHeaderSize])
{
    std::memset(out, 0, kFrameHeaderSize);
    out[0] = static_cast<std::uint8_t>(h.kind);
    le::put<std::uint32_t>(out + 4, h.wire);
    le::put<std::uint32_t>(out + 8, h.bytes);
}

std::error_code decode(const std::uint8_t (&in)[kFrameHeaderSize], FrameHeader& h, std::string& why)
{
    if (in[0] != static_cast<std::uint8_t>(FrameKind::zstd) && in[0] != static_cast<std::uint8_t>(FrameKind::raw)) {
        why = "unknown compressed frame kind " + std::to_string(in[0]) + " (allowed: 1 zstd, 2 raw)";
        return Errc::protocol_error;
    }
    if (in[1] != 0 || in[2] != 0 || in[3] != 0) {
        why = "reserved bytes of a compressed frame's header are set";
        return Errc::protocol_error;
    }
    h.kind = static_cast<FrameKind>(in[0]);
    h.wire = le::get<std::uint32_t>(in + 4);
    h.bytes = le::get<std::uint32_t>(in + 8);
    if (h.bytes == 0 || h.bytes > kMaxFrame) {
        why = "a compressed frame announces " + std::to_string(h.bytes) + " bytes (allowed: 1 to " +
              std::to_string(kMaxFrame) + ")";
        return Errc::protocol_error;
    }
    if (h.kind == FrameKind::raw && h.wire != h.bytes) {
        why = "a raw frame of " + std::to_string(h.bytes) + " bytes announces " + std::to_string(h.wire) +
              " bytes on the wire";
        return Errc::protocol_error;
    }
    if (h.kind == FrameKind::zstd && (h.wire == 0 || h.wire > max_wire())) {
        why = "a zstd frame announces " + std::to_string(h.wire) + " bytes on the wire (allowed: 1 to " +
              std::to_string(max_wire()) + ")";
        return Errc::protocol_error;
    }
    return {};
}

FrameEncoder::FrameEncoder() : cctx_(ZSTD_createCCtx()), scratch_(max_wire())
{
    if (!cctx_) throw Error(Errc::io_error, "cannot create a zstd compression context (out of memory)");
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, kLevel);
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 0);  // the end-to-end checksum covers the bytes
}

FrameEncoder::~FrameEncoder() { ZSTD_freeCCtx(cctx_); }

FrameKind FrameEncoder::encode(const std::uint8_t* data, std::size_t n, bool compress, OutputBuffer& out)
{
    if (n == 0 || n > kMaxFrame)
        throw Error(Errc::invalid_argument, "a compressed frame holds 1 to " + std::to_string(kMaxFrame) +
                                                " bytes, not " + std::to_string(n));
    FrameHeader h;
    h.bytes = static_cast<std::uint32_t>(n);
    std::size_t wire = n;
    if (compress) {
        wire = ZSTD_compress2(cctx_, scratch_.data(), scratch_.size(), data, n);
        if (ZSTD_isError(wire))
            throw Error(Errc::io_error, std::string("zstd compression failed: ") + ZSTD_getErrorName(wire));
    }
    h.kind = compress && wire < n ? FrameKind::zstd : FrameKind::raw;
    h.wire = static_cast<std::uint32_t>(h.kind == FrameKind::zstd ? wire : n);
    std::uint8_t head[kFrameHeaderSize];
    wire::encode(h, head);
    out.append(head, sizeof head);
    out.append(h.kind == FrameKind::zstd ? scratch_.data() : data, h.wire);
    return h.kind;
}

FrameDecoder::FrameDecoder() : dctx_(ZSTD_createDCtx()), payload_(max_wire())
{
    if (!dctx_) throw Error(Errc::io_error, "cannot create a zstd decompression context (out of memory)");
    // A frame holds at most kMaxFrame bytes: a window beyond that is a
    // corrupt (or hostile) frame, not a reason to allocate.
    ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, 21);
    header_.expect(kFrameHeaderSize);
}

FrameDecoder::~FrameDecoder() { ZSTD_freeDCtx(dctx_); }

IoResult FrameDecoder::corrupt(const std::string& why) const { return IoResult::failed(EBADMSG, why); }

IoResult FrameDecoder::step(Channel& channel, std::uint8_t* dst, std::size_t room, std::uint64_t left,
                            std::size_t& produced)
{
    produced = 0;
    switch (state_) {
    case State::header: {
        IoResult r = header_.fill(channel);
        wire_ += r.bytes();
        if (!r.done()) return r;
        FrameHeader h;
        std::string why;
        if (decode(header_.first<kFrameHeaderSize>(), h, why)) return corrupt(why);
        header_.expect(kFrameHeaderSize);
        if (h.bytes > left)
            return corrupt("a compressed frame of " + std::to_string(h.bytes) + " bytes goes past the end of the body (" +
                           std::to_string(left) + " bytes left)");
        frame_ = left_ = h.bytes;
        if (h.kind == FrameKind::raw) {
            state_ = State::raw;
        } else {
            payload_.expect(h.wire);
            state_ = State::payload;
        }
        return IoResult::moved(0);
    }
    case State::payload: {
        IoResult r = payload_.fill(channel);
        wire_ += r.bytes();
        if (!r.done()) return r;
        ZSTD_DCtx_reset(dctx_, ZSTD_reset_session_only);
        in_pos_ = 0;
        state_ = State::inflate;
        return IoResult::moved(0);
    }
    case State::inflate: {
        ZSTD_inBuffer in{payload_.data(), payload_.size(), in_pos_};
        ZSTD_outBuffer out{dst, std::min<std::size_t>(room, left_), 0};
        std::size_t rc = ZSTD_decompressStream(dctx_, &out, &in);
        in_pos_ = in.pos;
        if (ZSTD_isError(rc)) return corrupt(std::string("a zstd frame does not decompress: ") + ZSTD_getErrorName(rc));
        produced = out.pos;
        left_ -= static_cast<std::uint32_t>(produced);
        const std::string announced = "a zstd frame announced as " + std::to_string(frame_) + " bytes";
        if (left_ > 0) {
            if (rc == 0 || (produced == 0 && in.pos == in.size))
                return corrupt(announced + " ends after " + std::to_string(frame_ - left_));
            return IoResult::moved(produced);
        }
        if (rc != 0) {
            // All announced bytes are out: zstd must end here, with nothing more.
            std::uint8_t extra = 0;
            ZSTD_outBuffer more{&extra, 1, 0};
            rc = ZSTD_decompressStream(dctx_, &more, &in);
            if (ZSTD_isError(rc) || more.pos > 0 || rc != 0) return corrupt(announced + " holds more");
        }
        if (in.pos != in.size) return corrupt(announced + " is followed by other bytes inside its wire length");
        state_ = State::header;
        return IoResult::moved(produced);
    }
    case State::raw: {
        IoResult r = read_some(channel, dst, std::min<std::size_t>(room, left_));
        if (!r.done()) return r;
        produced = r.bytes();
        wire_ += produced;
        left_ -= static_cast<std::uint32_t>(produced);
        if (left_ == 0) state_ = State::header;
        return r;
    }
    }
    return corrupt("unreachable");
}

bool CompressionPolicy::compress_next(int socket)
{
    if (mode_ == CompressMode::none) return false;
    if (mode_ == CompressMode::zstd) return true;
    if (compress_rate_ <= 0) return compressing_ = true;  // measure the first frame
    bool app_limited = false;
    if (const double rate = delivery_rate(socket, &app_limited); rate > 0) {
        // A sample limited by the sender (compressing slower than the link
        // sends) shows only a lower bound of the link.
        if (!app_limited || rate > link_rate_) link_rate_ = rate;
    }
    if (++since_probe_ >= 16) {
        // Now and then the other way, to measure what it gives: a raw frame
        // shows the link, a compressed one zstd's rate and ratio.
        since_probe_ = 0;
        return !compressing_;
    }
    if (ratio_ < 1.05) return compressing_ = false;  // zstd does not shrink these bytes
    if (link_rate_ <= 0) return compressing_ = true;  // nothing known of the link yet: compressing costs little
    return compressing_ = std::min(compress_rate_, link_rate_ * ratio_) > 1.1 * link_rate_;
}

void CompressionPolicy::encoded(std::size_t bytes, std::size_t wire, double seconds, bool compressed) noexcept
{
    if (!compressed || bytes == 0 || wire == 0) return;
    const double rate = static_cast<double>(bytes) / std::max(seconds, 1e-9);
    const double ratio = static_cast<double>(bytes) / static_cast<double>(wire);
    // Moving averages: a frame's figures count a quarter.
    compress_rate_ = compress_rate_ <= 0 ? rate : 0.75 * compress_rate_ + 0.25 * rate;
    ratio_ = ratio_ <= 0 ? ratio : 0.75 * ratio_ + 0.25 * ratio;
}

namespace {

bool is_loopback(const sockaddr* address) noexcept
{
    if (address->sa_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(address);
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (address->sa_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
        return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
    }
    return false;
}

}  // namespace

bool peer_is_loopback(int socket) noexcept
{
    sockaddr_storage address{};
    socklen_t size = sizeof address;
    if (::getpeername(socket, reinterpret_cast<sockaddr*>(&address), &size) != 0) return false;
    return is_loopback(reinterpret_cast<const sockaddr*>(&address));
}

bool host_is_loopback(const std::string& host) noexcept
{
    std::string text = host;
    if (text.size() > 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST;  // an address first: no lookup
    addrinfo* found = nullptr;
    if (::getaddrinfo(text.c_str(), nullptr, &hints, &found) != 0) {
        hints.ai_flags = 0;  // a name ("localhost", an --advertise name)
        if (::getaddrinfo(text.c_str(), nullptr, &hints, &found) != 0) return false;
    }
    const bool loopback = found && is_loopback(found->ai_addr);
    ::freeaddrinfo(found);
    return loopback;
}

double delivery_rate(int socket, bool* app_limited) noexcept
{
    tcp_info info{};
    socklen_t size = sizeof info;
    if (::getsockopt(socket, IPPROTO_TCP, TCP_INFO, &info, &size) != 0) return 0;
    if (size < offsetof(tcp_info, tcpi_delivery_rate) + sizeof info.tcpi_delivery_rate) return 0;
    if (app_limited) *app_limited = info.tcpi_delivery_rate_app_limited != 0;
    return static_cast<double>(info.tcpi_delivery_rate);
}

}  // namespace blobstreaming::wire
