#pragma once
/// The data path's shared limits and helpers of ServerConnection and its
/// transfers (Transfer.h and its kinds): private to the data connections,
/// not an interface.

#include <cstddef>
#include <cstdint>
#include <string>

namespace blobstreaming::server::data_path {

/// Largest single recv()/send()/sendfile() request.
inline constexpr std::size_t kChunk = std::size_t{4} << 20;
/// The buffer of a streamed pull (a RadosStore Blob): read from the store,
/// then sent.
inline constexpr std::size_t kStreamBuffer = std::size_t{1} << 20;
/// Bytes one dispatch may move before yielding to the other connections.
inline constexpr std::uint64_t kDispatchBudget = std::uint64_t{32} << 20;
/// A pull of at most this many bytes from a file already mapped (a
/// FileStore's file kept open) is sent from the mapping: on loopback a
/// send() from memory finishes sooner than sendfile, which feeds the socket
/// through a pipe 16 pages at a time (1.15 x at 1 MiB, 1.2-1.6 x at 2-8 MiB
/// and at 32 MiB: docs/BENCHMARKS.md). Larger ranges go by sendfile, so
/// that a large Blob's whole pull maps none of its pages into the daemon
/// (its RSS). A file truncated behind the store fails the send (EFAULT),
/// as a read through sendfile ends early: the daemon itself never touches
/// the bytes.
inline constexpr std::uint64_t kFromMappingAtMost = std::uint64_t{8} << 20;
/// Bytes read and discarded after a refusal before giving up on a clean close.
inline constexpr std::uint64_t kMaxDrain = std::uint64_t{64} << 20;

/// "`done` of `total` bytes", for the messages of an abandoned transfer.
inline std::string bytes_of(std::uint64_t done, std::uint64_t total)
{
    return std::to_string(done) + " of " + std::to_string(total) + " bytes";
}

}  // namespace blobstreaming::server::data_path
