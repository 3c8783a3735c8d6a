#pragma once
/// The client library's byte sources (push) and sinks (pull) behind
/// PushSource and PullSink, on the data plane's Source and Sink
/// (transporter/client/Streams.h). The sources are in Sources.cpp, the
/// sinks in Sinks.cpp.

#include "DataPlane.h"

#include <blobstreaming/client/Transfer.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/HashPipeline.h>
#include <blobstreaming/transporter/Tls.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <utility>

namespace blobstreaming::client {

/// The buffers streams copy through (a producer's, a sink's bounce buffer)
/// hold at most this many bytes.
constexpr std::size_t kStreamChunk = 1 << 20;

/// "a FIFO", "a character device", ... (of a stat(2) st_mode) for messages.
inline const char* file_kind(mode_t mode) noexcept
{
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

/// Opens the source (a file: opened and mapped now). Throws Error.
std::unique_ptr<Source> open_source(const PushSource& source, const std::string& what);

/// `resume_at` (file sinks only): the file's first bytes are already the
/// range's first bytes; the pull writes after them, and a failure keeps
/// what the file holds for the next resume instead of removing it.
std::unique_ptr<Sink> make_sink(const PullSink& sink, const std::string& what,
                                std::optional<std::uint64_t> resume_at = std::nullopt);

/// Resuming a pull into `path`: the bytes it already holds and their
/// checksum in `algorithm` (size 0 and an empty state when it does not
/// exist). Throws Error:
/// Errc::invalid_argument when it is not a regular file (a FIFO, a device:
/// nothing to continue), Errc::io_error when it cannot be read.
std::pair<std::uint64_t, ChecksumState> hash_existing_file(const std::string& path, ChecksumAlgorithm algorithm,
                                                           const std::string& what);

}  // namespace blobstreaming::client
