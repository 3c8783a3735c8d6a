#pragma once
/// What the file store asks of the file system beyond open/read/write: free
/// space (and the errors that mean there is none) and directory fsync.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace blobstreaming::detail {

/// ENOSPC, EDQUOT or EFBIG: the file system (or quota) has no room.
bool is_no_space(int err);

/// Bytes a non-root writer may still allocate on the file system of `dir`.
std::optional<std::uint64_t> free_bytes_of(const std::filesystem::path& dir);

/// "N bytes free" (or "free space unknown") for the file system of `dir`.
std::string free_text(const std::filesystem::path& dir);

/// fsync of a directory, so that a rename or unlink in it survives a crash;
/// throws Error(io_error) naming it.
void fsync_dir(const std::filesystem::path& dir);

}  // namespace blobstreaming::detail
