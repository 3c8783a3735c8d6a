#pragma once
/// The data plane's client (transporter/client/), as the library uses it:
/// the event loop, pooled data connections, their jobs, tickets, sources
/// and sinks.

#include <blobstreaming/transporter/client/ConnectionPool.h>
#include <blobstreaming/transporter/client/DataConnection.h>
#include <blobstreaming/transporter/client/EventLoop.h>
#include <blobstreaming/transporter/client/Streams.h>
#include <blobstreaming/transporter/client/Ticket.h>

#include <blobstreaming/client/Transfer.h>

namespace blobstreaming::client {

using dataplane::ConnectionPool;
using dataplane::DataConnection;
using dataplane::EventLoop;
using dataplane::JobOutcome;
using dataplane::LocalFile;
using dataplane::PushGrant;
using dataplane::Sink;
using dataplane::Source;
using dataplane::Ticket;
using dataplane::TransferJob;

/// The data plane's name for a Compression.
inline wire::CompressMode wire_mode(Compression c) noexcept
{
    return c == Compression::zstd ? wire::CompressMode::zstd
           : c == Compression::automatic ? wire::CompressMode::automatic
                                         : wire::CompressMode::none;
}

/// Whether a transfer of mode `c` to a store at `host` goes as compressed
/// frames, which only a ticket's Request can ask for: such a transfer takes
/// a ticket, never a named request (docs/PROTOCOL.md).
inline bool compresses_towards(Compression c, const std::string& host)
{
    return c == Compression::zstd || (c == Compression::automatic && !wire::host_is_loopback(host));
}

}  // namespace blobstreaming::client
