#pragma once
/// The benchmark's own wire format for the socket variants (raw-c, ace), and
/// the transaction logic written once over a Stream, so that the variants
/// differ only in how bytes are read and written.
///
/// Little-endian frames:
///   Hello   (client, once)  magic "BSB1" · direction u32 (1 push, 2 pull) · size u64 · count u32 · reserved u32
///   Ready   (server)        magic "BSB1"
///   Control (client)        op u32 (1 push, 2 pull, 3 digests) · index u32 · offset u64 · length u64
/// push:    Control · `length` bytes · Ack (server: u64 bytes received, after the last byte)
/// pull:    Control · `length` bytes from the server
/// digests: Control · count x 32-byte SHA-256 of the blobs the server holds
///          (after a push run the server then zeroes them)
///
/// Stream: `void send_all(const void*, std::size_t)`, `void recv_all(void*, std::size_t)`
/// (both throw Error(transfer_failed) on failure or EOF), and
/// `bool recv_first(void*, std::size_t)` (false on a clean EOF before the first byte).
///
/// A server may be given a PushSink (raw-c-durable): every pushed blob is
/// then handed to it after its last byte arrived and before the Ack, and the
/// digests after a push run are those of what the sink holds.

#include "Workload.h"

#include <blobstreaming/common/Error.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::bench::wire {

/// recv_all() and recv_first() of the Stream contract over the variant's
/// `bool recv_loop(void* data, std::size_t size, bool eof_ok)`, which fills
/// `data` (throwing Error(transfer_failed) on an error or an EOF after the
/// first byte) and returns false only for a clean EOF before it when
/// `eof_ok`.
template <class Derived>
class ReceiveCalls {
public:
    void recv_all(void* data, std::size_t size) { static_cast<Derived*>(this)->recv_loop(data, size, false); }
    bool recv_first(void* data, std::size_t size) { return static_cast<Derived*>(this)->recv_loop(data, size, true); }
};

constexpr std::size_t kHelloSize = 24;
constexpr std::size_t kControlSize = 24;
constexpr std::uint32_t kPush = 1, kPull = 2, kDigests = 3;
constexpr char kMagic[4] = {'B', 'S', 'B', '1'};

inline void put_u32(std::uint8_t* p, std::uint32_t v)
{
    for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
inline void put_u64(std::uint8_t* p, std::uint64_t v)
{
    for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
inline std::uint32_t get_u32(const std::uint8_t* p)
{
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}
inline std::uint64_t get_u64(const std::uint8_t* p)
{
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

struct Control {
    std::uint32_t op = 0;
    std::uint32_t index = 0;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
};

inline std::array<std::uint8_t, kControlSize> encode(const Control& c)
{
    std::array<std::uint8_t, kControlSize> b{};
    put_u32(b.data(), c.op);
    put_u32(b.data() + 4, c.index);
    put_u64(b.data() + 8, c.offset);
    put_u64(b.data() + 16, c.length);
    return b;
}

inline Control decode_control(const std::uint8_t* b)
{
    return {get_u32(b), get_u32(b + 4), get_u64(b + 8), get_u64(b + 16)};
}

/// Where a server puts pushed blobs besides its memory (e.g. durable files).
class PushSink {
public:
    virtual ~PushSink() = default;
    /// Called once per push, after its last byte arrived and before the
    /// Ack: when it returns, the blob is stored as the sink promises.
    /// Throws Error; the connection then ends without an Ack.
    virtual void store(std::uint32_t index, const std::uint8_t* data, std::uint64_t size) = 0;
    /// Untimed, after a push run: SHA-256 of blobs 0..count-1 as the sink
    /// holds them (of no bytes for one never stored); then forgets them, so
    /// that the next run must store its own.
    virtual std::vector<Digest> digests_then_clear(std::uint32_t count) = 0;
    /// The variant's name in messages.
    virtual const char* name() const noexcept = 0;
};

/// Client side of one connection.
template <class Stream>
class ClientSession {
public:
    explicit ClientSession(Stream& stream) : stream_(stream) {}

    /// Sends Hello and waits for Ready (the server has prepared its blobs).
    void hello(bool pull, std::uint64_t size, std::uint32_t count)
    {
        std::array<std::uint8_t, kHelloSize> b{};
        std::memcpy(b.data(), kMagic, 4);
        put_u32(b.data() + 4, pull ? kPull : kPush);
        put_u64(b.data() + 8, size);
        put_u32(b.data() + 16, count);
        stream_.send_all(b.data(), b.size());
        std::uint8_t ready[4];
        stream_.recv_all(ready, sizeof ready);
        if (std::memcmp(ready, kMagic, 4) != 0)
            throw Error(Errc::protocol_error, "hello: the server answered something other than Ready");
        count_ = count;
    }

    void push(std::uint32_t index, const std::uint8_t* data, std::uint64_t size)
    {
        const auto c = encode({kPush, index, 0, size});
        stream_.send_all(c.data(), c.size());
        stream_.send_all(data, size);
        std::uint8_t ack[8];
        stream_.recv_all(ack, sizeof ack);
        if (get_u64(ack) != size)
            throw Error(Errc::transfer_failed, "push blob " + std::to_string(index) + ": the server acknowledged " +
                                                   std::to_string(get_u64(ack)) + " of " + std::to_string(size) +
                                                   " bytes");
    }

    void pull(std::uint32_t index, std::uint64_t offset, std::uint64_t length, std::uint8_t* out)
    {
        const auto c = encode({kPull, index, offset, length});
        stream_.send_all(c.data(), c.size());
        stream_.recv_all(out, length);
    }

    std::vector<Digest> digests()
    {
        const auto c = encode({kDigests, 0, 0, 0});
        stream_.send_all(c.data(), c.size());
        std::vector<Digest> out(count_);
        for (auto& d : out) stream_.recv_all(d.data(), d.size());
        return out;
    }

private:
    Stream& stream_;
    std::uint32_t count_ = 0;
};

/// Server side of one connection: returns when the client closes it; throws
/// Error when it misbehaves or the connection breaks. `corrupt`: flip a byte
/// of every blob received or sent (Config::corrupt). `sink` (may be null):
/// also stores every pushed blob there before the Ack; such a server serves
/// push only.
template <class Stream>
void serve_connection(Stream& stream, bool corrupt, PushSink* sink = nullptr)
{
    std::array<std::uint8_t, kHelloSize> hello{};
    if (!stream.recv_first(hello.data(), hello.size())) return;
    if (std::memcmp(hello.data(), kMagic, 4) != 0) throw Error(Errc::protocol_error, "hello: bad magic");
    const bool pull = get_u32(hello.data() + 4) == kPull;
    const std::uint64_t size = get_u64(hello.data() + 8);
    const std::uint32_t count = get_u32(hello.data() + 16);
    if (size == 0 || count == 0 || size > (8ULL << 30) / count)
        throw Error(Errc::invalid_argument, "hello: size x count out of range");
    if (pull && sink != nullptr)
        throw Error(Errc::invalid_argument,
                    std::string("hello: a pull; the ") + sink->name() + " server serves push only");
    BlobSet blobs(count, size, pull);
    stream.send_all(kMagic, 4);

    std::array<std::uint8_t, kControlSize> cb{};
    while (stream.recv_first(cb.data(), cb.size())) {
        const Control c = decode_control(cb.data());
        if (c.op == kDigests) {
            const auto digests = sink != nullptr ? sink->digests_then_clear(count) : blobs.digests();
            for (const auto& d : digests) stream.send_all(d.data(), d.size());
            if (!pull) blobs.clear();  // the next run must deliver its own bytes
            continue;
        }
        if (c.index >= count || c.offset > size || c.length > size - c.offset)
            throw Error(Errc::invalid_range, "control: blob " + std::to_string(c.index) + " range " +
                                                 std::to_string(c.offset) + "+" + std::to_string(c.length) +
                                                 " outside " + std::to_string(count) + " x " + std::to_string(size));
        if (c.op == kPush) {
            stream.recv_all(blobs.data(c.index) + c.offset, c.length);
            if (corrupt && c.length > 0) blobs.data(c.index)[c.offset] ^= 0x01;
            if (sink != nullptr) {
                if (c.offset != 0 || c.length != size)
                    throw Error(Errc::invalid_range, std::string("control: ") + sink->name() +
                                                         " stores whole blobs only, not a range " +
                                                         std::to_string(c.offset) + "+" + std::to_string(c.length));
                sink->store(c.index, blobs.data(c.index), size);
            }
            std::uint8_t ack[8];
            put_u64(ack, c.length);
            stream.send_all(ack, sizeof ack);
        } else if (c.op == kPull) {
            if (corrupt && c.length > 0) blobs.data(c.index)[c.offset] ^= 0x01;
            stream.send_all(blobs.data(c.index) + c.offset, c.length);
            if (corrupt && c.length > 0) blobs.data(c.index)[c.offset] ^= 0x01;
        } else {
            throw Error(Errc::protocol_error, "control: unknown operation " + std::to_string(c.op));
        }
    }
}

}  // namespace blobstreaming::bench::wire
