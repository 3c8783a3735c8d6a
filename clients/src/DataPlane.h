#pragma once
/// The data plane's client (transporter/client/), as the library uses it:
/// the event loop, pooled data connections, their jobs, tickets, sources
/// and sinks.

#include <blobstreaming/transporter/client/ConnectionPool.h>
#include <blobstreaming/transporter/client/DataConnection.h>
#include <blobstreaming/transporter/client/EventLoop.h>
#include <blobstreaming/transporter/client/Streams.h>
#include <blobstreaming/transporter/client/Ticket.h>

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

}  // namespace blobstreaming::client
