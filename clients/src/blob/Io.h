#pragma once
/// What `blob push` reads and where `blob pull` writes, beyond what the
/// library opens by name (docs/CLI.md, "Inputs and outputs"). Nothing here
/// waits longer than --timeout for a peer process: a FIFO's writer or
/// reader, or the next byte of a stream.

#include <blobstreaming/client/Transfer.h>
#include <blobstreaming/common/UniqueFd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace blobstreaming::cli {

/// The source of `blob push FILE` ("-": standard input), opened now:
/// - a regular file: PushSource::file (sendfile); `size`, when given, must
///   be its size (Errc::invalid_argument);
/// - a stream (standard input, a FIFO, a character device): with `size`,
///   exactly `size` bytes are streamed as the socket drains (fewer:
///   Errc::incomplete naming how many arrived; more are not read); without,
///   a push of unknown length (PushSource::stream: the bytes up to EOF, as
///   they come) — or, with `spool` (a push that needs the size: several
///   streams, a resume), the stream is read to EOF into memory first (at
///   most kSpoolLimit bytes: Errc::limit_reached). Standard input from a
///   regular file is streamed with the bytes it holds after its position
///   instead.
/// `fallback`, when given and a push of unknown length is returned, is set
/// to what spools the stream instead (as `spool` would), for a store that
/// refuses a push of unknown length before anything was read; empty once
/// the stream was read from.
/// A FIFO is opened without waiting for a writer; its first byte, and each
/// later one, is awaited for at most `timeout` (Errc::timeout). A read error
/// fails the push (Errc::io_error naming the input and the reason). Throws
/// Error.
client::PushSource open_push_input(const std::string& file, const std::string& what, std::optional<std::uint64_t> size,
                                   std::chrono::milliseconds timeout, bool spool = false,
                                   std::function<std::optional<client::PushSource>()>* fallback = nullptr);

/// The most a push without --size holds in memory.
constexpr std::uint64_t kSpoolLimit = std::uint64_t{1} << 30;

/// The destination of `blob pull NAME FILE`. An existing FIFO (not resumed)
/// is opened here, waiting at most `timeout` for a reader (Errc::timeout),
/// and written as a descriptor; anything else is PullSink::file (the
/// library's rules: a temporary file renamed over a regular file, devices
/// written in place, "-" and /dev/stdout the inherited standard output).
class PullOutput {
public:
    /// Throws Error.
    PullOutput(const std::string& file, const std::string& what, bool resume, std::chrono::milliseconds timeout);
    client::PullSink sink() const;

private:
    std::string file_;
    UniqueFd fifo_;
};

/// Whether `file` names this process's standard output ("-", /dev/stdout).
bool is_standard_output(const std::string& file) noexcept;

/// "1.000" for messages.
std::string seconds_text(std::chrono::milliseconds timeout);

}  // namespace blobstreaming::cli
