#pragma once
/// The commands of the blob CLI (docs/CLI.md), one function each, over a
/// client::Session.

#include <blobstreaming/client/Options.h>
#include <blobstreaming/client/Result.h>
#include <blobstreaming/client/Transfer.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::cli {

/// Everything the command line said, already range-checked by main().
struct Invocation {
    std::string naming;
    std::string callback_address;  ///< --callback-address ("" : the default)
    std::string tls_cert, tls_key, tls_ca;  ///< TLS on both planes: all three or none
    std::string store;
    std::optional<client::Tier> tier;  ///< push: --tier (a store of it, chosen by the locator)
    bool json = false;
    int socket_buffer = 0;
    std::chrono::milliseconds timeout{30000};
    bool local = true;
    bool quiet = false;
    bool replace = false;
    bool recursive = false;  ///< push -r: each directory's files
    bool resume = false;
    bool verify = true;
    bool prune = false;  ///< stores --prune
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    std::optional<std::uint64_t> size;          ///< push: the bytes a stream must deliver (--size)
    std::uint64_t max_size = 0;                 ///< push of unknown length: the most it may hold (--max-size)
    std::optional<std::string> name;            ///< push: --name, the Blob's name (a single FILE)
    std::optional<ChecksumAlgorithm> checksum;  ///< push, checksum: --checksum
    std::vector<std::string> stores;            ///< watch: every --store (empty: every registered store)
    std::vector<std::string> events;            ///< watch: --events, checked (empty: committed, removed)
    std::vector<std::string> gateways;          ///< watch: every --gateway (empty: every registered one)
    std::vector<std::string> to;                ///< copy: --to, the destination stores
    std::string from;                           ///< copy: --from ("" : the nearest holder)
    bool chain = true;                          ///< copy: false with --no-chain
    std::size_t window = 4;                     ///< copy: --window
    std::size_t streams = client::kAutoStreams;  ///< push, pull: --streams (auto: kAutoStreams)
    client::Compression compress = client::Compression::automatic;  ///< push, pull: --compress
    std::string index;                          ///< find, pull --study/--series: the study index URL (--index)
    std::string level;                          ///< find: --level ("" : study)
    std::string study, series;                  ///< pull: --study UID, --series UID (the instances of the index)
    /// push, pull: --notices (none without it)
    client::NoticeMode notices = client::NoticeMode::none;
    std::string command;
    std::vector<std::string> args;
};

/// The most Blobs one `blob copy` takes.
constexpr std::size_t kMaxCopyNames = 100000;

/// The most FILEs one `blob push` takes.
constexpr std::size_t kMaxPushFiles = 100000;

/// `message` of a failure with `code` in `command`, with the CLI's flag
/// where the message speaks of what the API calls it (already_exists:
/// `blob push --replace`).
std::string cli_message(const std::string& message, Errc code, const std::string& command);

/// Commands the CLI knows.
bool known_command(const std::string& command);
/// The positional arguments `command` takes: {minimum, maximum}.
std::pair<std::size_t, std::size_t> arity(const std::string& command);

/// Runs the command; returns the exit code (0, or Errc::partial when a
/// command across every store got no answer from some) or throws
/// blobstreaming::Error (its Errc is the exit code).
int run(const Invocation& call);

/// The Session options the command line gives.
client::SessionOptions session_options(const Invocation& call);

/// The kinds of `--events TEXT` ("committed,removed"), checked: UsageError
/// naming the unknown one and the known ones, or when `command` is not watch.
std::vector<std::string> watch_events(const std::string& command, const std::string& text);

/// `blob watch` (Watch.cpp): prints events until SIGINT or SIGTERM, then
/// exits 0; Errc::io_error when standard output fails.
int watch(const Invocation& call);

/// `blob find` (Dicom.cpp): the study index's matches of the KEY=VALUE
/// arguments at --level, as text or --json. Needs no store.
int find(const Invocation& call);

/// `blob pull --study UID DIR` / `--series UID DIR` (Dicom.cpp): every
/// instance the index lists, pulled as one series, verified, to
/// DIR/SOPInstanceUID.dcm.
int pull_instances(const Invocation& call);

}  // namespace blobstreaming::cli
