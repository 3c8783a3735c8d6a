#pragma once
/// The same-host fast path: a range of a committed Blob read from the
/// store's own file through a mapping, instead of a socket.

#include "ControlPlane.h"
#include "Streams.h"

#include <blobstreaming/blobstore/BlobInfo.h>

#include <cstdint>
#include <string>

namespace blobstreaming::client {

/// Copies [offset, offset + length) of the Blob in `file` into `sink`
/// (length 0: to the end), verifying the digest when the whole Blob was read
/// and `verify` is set. Returns the bytes delivered. Throws Error
/// (Errc::io_error when the file cannot be used, Errc::invalid_range).
std::uint64_t read_local(const LocalFile& file, std::uint64_t offset, std::uint64_t length, Sink& sink,
                         bool verify, const std::string& what, const Progress& progress);

/// Whether `path` can be opened for reading by this process.
bool local_file_readable(const std::string& path) noexcept;

}  // namespace blobstreaming::client
