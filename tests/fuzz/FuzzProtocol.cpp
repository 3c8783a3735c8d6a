/// Fuzz target: the data-plane frames (transporter Protocol). The input is
/// read as what a peer sends on a data connection: Requests at every offset
/// a store would frame them at (a push's bytes and trailer skipped), and
/// Response headers with their message as a client reads them. Every frame
/// that decodes must encode back to the same fields, and every refusal must
/// say why.

#include <blobstreaming/transporter/Protocol.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using namespace blobstreaming;
using namespace blobstreaming::protocol;

void require(bool condition)
{
    if (!condition) std::abort();
}

/// Copies the next N bytes from `at` into `out` and moves past them; false
/// when fewer than N are left.
template <std::size_t N>
bool take(const std::uint8_t* data, std::size_t size, std::size_t& at, std::uint8_t (&out)[N])
{
    if (size - at < N) return false;
    std::memcpy(out, data + at, N);
    at += N;
    return true;
}

/// A frame that does not decode is a protocol error that says why.
void require_refusal(const std::error_code& ec, const std::string& why)
{
    require(ec == make_error_code(Errc::protocol_error) && !why.empty());
}

/// A store's view: Request · (push: `length` bytes · trailer) · Request ...
void frame_requests(const std::uint8_t* data, std::size_t size)
{
    std::size_t at = 0;
    std::uint8_t frame[kRequestSize];
    while (take(data, size, at, frame)) {
        Request request;
        std::string why;
        if (is_named(frame)) {
            // A named request: its name follows; what decodes encodes back.
            NamedRequest named;
            std::size_t name_size = 0;
            if (const std::error_code ec = decode_named(frame, named, name_size, why)) {
                require_refusal(ec, why);
                return;
            }
            if (size - at < name_size) return;
            named.name.assign(reinterpret_cast<const char*>(data + at), name_size);
            at += name_size;
            const std::string again = encode(named);
            require(again.size() == kRequestSize + name_size && std::memcmp(again.data(), frame, kRequestSize) == 0);
            if (named.type == FrameType::push) return;  // its body: framed as any push's, not again here
            continue;
        }
        if (const std::error_code ec = decode(frame, request, why)) {
            require_refusal(ec, why);
            return;  // refused: the store closes the connection
        }
        require(request.type == FrameType::push || request.type == FrameType::pull);
        std::uint8_t again[kRequestSize];
        encode(request, again);
        require(std::memcmp(frame, again, kRequestSize) == 0);
        if (request.type == FrameType::push) {
            const std::uint64_t left = size - at;
            if (request.length > left || left - request.length < kTrailerSize) return;
            at += static_cast<std::size_t>(request.length);
            std::uint8_t trailer_frame[kTrailerSize];
            take(data, size, at, trailer_frame);
            Trailer trailer;
            if (const std::error_code ec = decode(trailer_frame, trailer, why)) {
                require_refusal(ec, why);
                return;
            }
            // A trailer that decodes encodes back to the same bytes.
            std::uint8_t again_trailer[kTrailerSize];
            encode(trailer, again_trailer);
            require(std::memcmp(trailer_frame, again_trailer, kTrailerSize) == 0);
        }
    }
}

/// A client's view: Response header · message · (pull: `length` bytes).
void frame_responses(const std::uint8_t* data, std::size_t size)
{
    std::size_t at = 0;
    std::uint8_t header[kResponseHeaderSize];
    while (take(data, size, at, header)) {
        Response response;
        std::size_t message_size = 0;
        std::string why;
        if (const std::error_code ec = decode(header, response, message_size, why)) {
            require_refusal(ec, why);
            return;
        }
        require(message_size <= kMaxMessageSize);
        if (size - at < message_size) return;
        response.message.assign(reinterpret_cast<const char*>(data + at), message_size);
        at += message_size;

        const std::string wire = encode(response);
        require(wire.size() == kResponseHeaderSize + message_size);
        std::uint8_t again[kResponseHeaderSize];
        std::memcpy(again, wire.data(), kResponseHeaderSize);
        Response decoded;
        std::size_t decoded_size = 0;
        require(!decode(again, decoded, decoded_size, why));
        require(decoded_size == message_size && decoded.status == response.status &&
                decoded.length == response.length && decoded.blob_size == response.blob_size &&
                decoded.checksum == response.checksum);
        require(wire.compare(kResponseHeaderSize, std::string::npos, response.message) == 0);

        if (response.status == Errc::ok && response.length > 0) {
            if (response.length > size - at) return;
            at += static_cast<std::size_t>(response.length);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    frame_requests(data, size);
    frame_responses(data, size);
    if (size >= 16) {
        TicketId id{};
        std::memcpy(id.data(), data, id.size());
        require(ticket_tag(id).size() == 8);
    }
    // An oversized message is truncated on the wire, never sent whole.
    Response big;
    big.message.assign(reinterpret_cast<const char*>(data), size);
    require(encode(big).size() == kResponseHeaderSize + std::min(size, kMaxMessageSize));
    return 0;
}
