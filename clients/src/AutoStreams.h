#pragma once
/// How many data connections a push or pull of one Blob uses when its
/// options say kAutoStreams (the blob CLI's default), decided once the
/// store's data endpoint is known from a ticket; and the warning for
/// several streams asked for where they cannot help.
///
/// On a loopback endpoint the bytes are copied by this host's CPUs twice
/// (into the kernel and out of it), whatever the number of connections:
/// more streams only share the same cores, and measured slower than one
/// (1 GiB, 2 vCPUs: 2.2–4.6 s with 4 streams, 1.2 s with one). On another
/// link, one TCP connection's window per round trip may be the limit, and a
/// Blob of at least kAutoStreamsFrom goes over kAutoStreamCount streams.

#include <blobstreaming/client/Transfer.h>
#include <blobstreaming/transporter/client/Ticket.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace blobstreaming::client {

/// A Blob (or range) at least this long goes over several streams (auto,
/// not loopback).
inline constexpr std::uint64_t kAutoStreamsFrom = std::uint64_t{64} << 20;
/// The streams auto picks there.
inline constexpr std::size_t kAutoStreamCount = 4;

/// The streams auto picks for `length` bytes to the endpoint of `ticket`;
/// says which and why at INFO (`what`: "push \"NAME\""), except for fewer
/// than 2 x kMinStreamRange bytes, which take one stream whatever is asked.
/// One stream for `compress` zstd (compressed frames go over one stream).
std::size_t auto_streams(const std::string& what, const dataplane::Ticket& ticket, std::uint64_t length,
                         Compression compress);

/// Several streams asked for (`streams` > 1) to a loopback endpoint: a
/// warning that they are slower than one there. They still run as asked.
void warn_streams_on_loopback(const std::string& what, const dataplane::Ticket& ticket, std::size_t streams);

}  // namespace blobstreaming::client
