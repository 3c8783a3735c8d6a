#pragma once
/// The client transport of a socket variant (raw-c, ace) written once over
/// its Stream (WireSession.h): a variant only connects; the runs go through
/// wire::ClientSession. Also the server side's per-connection wrapper.

#include "Variant.h"
#include "WireSession.h"

#include <cstdio>
#include <memory>
#include <vector>

namespace blobstreaming::bench::wire {

/// A ClientTransport over one connected Stream. The variant's open()
/// connects, fills info_ (the buffers the kernel granted) and then calls
/// start(), which keeps the stream and says Hello.
template <class Stream>
class StreamClient : public ClientTransport {
public:
    void push(std::uint32_t index, const std::uint8_t* data, std::uint64_t size) override
    {
        session_->push(index, data, size);
    }
    void pull(std::uint32_t index, std::uint64_t offset, std::uint64_t length, std::uint8_t* out) override
    {
        session_->pull(index, offset, length, out);
    }
    std::vector<Digest> stored_digests() override { return session_->digests(); }
    TransportInfo info() const override { return info_; }

protected:
    void start(std::unique_ptr<Stream> stream, const Config& config)
    {
        stream_ = std::move(stream);
        session_ = std::make_unique<ClientSession<Stream>>(*stream_);
        session_->hello(config.direction == Direction::pull, config.size, config.count);
    }

    TransportInfo info_;

private:
    std::unique_ptr<Stream> stream_;
    std::unique_ptr<ClientSession<Stream>> session_;
};

/// Serves one accepted connection of `variant`: a client that misbehaves or
/// drops is reported on stderr and the server goes on.
template <class Stream>
void serve_reporting(Stream& stream, bool corrupt, const char* variant, PushSink* sink = nullptr)
{
    try {
        serve_connection(stream, corrupt, sink);
    } catch (const Error& e) {
        std::fprintf(stderr, "bsbench: %s server: client dropped: %s\n", variant, e.what());
    }
}

}  // namespace blobstreaming::bench::wire
