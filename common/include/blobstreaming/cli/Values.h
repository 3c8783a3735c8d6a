#pragma once
/// The value syntax every Blob Streaming program shares on its command line
/// (docs/CLI.md, "Values"): sizes, durations, checksum algorithms. Each parser names the
/// option, the value and what is allowed when it refuses one.

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace blobstreaming::cli {

/// A bad command line (the programs exit 1 on it). `what()` is the complete
/// message without the program name, e.g. `--size: "12Q" is not a size (...)`.
class UsageError : public Error {
public:
    explicit UsageError(const std::string& message) : Error(Errc::invalid_argument, message) {}
};

/// A size: plain bytes, or a whole number with K, M, G or T (binary: 1K =
/// 1024), optionally followed by "iB" (64MiB); upper or lower case.
/// `option` is the option's name with its dashes ("--capacity"). Throws
/// UsageError when `text` is not a size or does not fit 64 bits.
std::uint64_t parse_size(const std::string& option, const std::string& text);

/// The same, and the size must lie in [min, max]; the message gives the
/// range in the size syntax ("allowed: 4K to 1G").
std::uint64_t parse_size(const std::string& option, const std::string& text, std::uint64_t min, std::uint64_t max);

/// A whole number of things (digits only) in [min, max]. UsageError naming
/// `option` (with its dashes) when it is not one or out of range.
std::size_t parse_count(const std::string& option, const std::string& text, std::size_t min, std::size_t max);

/// `bytes` in the size syntax with the largest unit that divides it: 1G,
/// 1536K, 1000.
std::string format_size(std::uint64_t bytes);

/// The unit of a duration written without one.
enum class DefaultUnit { seconds, milliseconds };

/// A duration: a decimal number with an optional unit, ms, s, m or h
/// ("500ms", "2", "1.5m"); without a unit `unit` applies (seconds unless an
/// option has always taken milliseconds). Rounded to whole milliseconds.
/// Throws UsageError when `text` is not a duration or lies outside [min,
/// max] (the message gives the range in seconds).
std::chrono::milliseconds parse_duration(const std::string& option, const std::string& text,
                                         std::chrono::milliseconds min, std::chrono::milliseconds max,
                                         DefaultUnit unit = DefaultUnit::seconds);

/// A checksum algorithm by name ("crc32c", "sha256"). Throws UsageError
/// naming the option, the value and the allowed names otherwise.
ChecksumAlgorithm parse_checksum_algorithm(const std::string& option, const std::string& text);

}  // namespace blobstreaming::cli
