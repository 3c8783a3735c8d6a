#pragma once
/// bsbench's command line: one set of options for every variant, in the
/// manner of iperf3 (-s / -c HOST, -p PORT, -J).

#include <cstdint>
#include <string>

namespace blobstreaming::bench {

enum class Role { server, client };
enum class Direction { push, pull };

/// "push" or "pull".
const char* direction_name(Direction direction) noexcept;

struct Config {
    Role role = Role::client;
    std::string host = "127.0.0.1";  ///< -c HOST (server: address to bind)
    std::uint16_t port = 0;          ///< 0: ephemeral (server), required (client)
    std::string variant = "raw-c";   ///< raw-c | raw-c-durable | ace | corba | blobstreaming | memcpy
    Direction direction = Direction::push;
    std::uint64_t size = 1U << 20;   ///< bytes per blob
    std::uint32_t count = 1;         ///< blobs per timed run (a series)
    std::uint32_t runs = 1;          ///< timed runs
    int socket_buffer = 0;           ///< SO_SNDBUF/SO_RCVBUF; 0: autotuning ("auto")
    std::uint32_t chunk = 1U << 20;  ///< bytes per read/write call or CORBA call
    bool json = false;               ///< -J: one JSON object per run, one per line
    bool one_off = false;            ///< -1: the server handles one client and exits
    bool warmup = true;              ///< one untimed transaction before the runs
    /// --paced: each timed run waits for one line on standard input (EOF:
    /// no more runs), so that a driver can interleave the runs of several
    /// variants (run 1 of each, then run 2 of each, ...) on processes that
    /// were opened and warmed up alike.
    bool paced = false;
    std::string store;               ///< blobstreaming: store name
    bool local_fast_path = false;    ///< blobstreaming: allow the same-host file path
    /// blobstreaming pull: the client library compares the whole-Blob
    /// SHA-256 while receiving (PullOptions::verify). bsbench's own digest
    /// check after the timed interval runs either way.
    bool verify = true;
    std::string link = "loopback";  ///< recorded in the JSON as `link`
    /// raw-c-durable server: where its directory of received files goes
    /// (--dir; default $TMPDIR, else /tmp).
    std::string durable_dir;
    /// Server, for checking the checks: flips one byte of every blob it
    /// receives or sends, so that every client run must fail its digest.
    bool corrupt = false;
};

/// Parses `argv`. Throws Error(Errc::invalid_argument) with a message naming
/// the option, the value and what is allowed. `--help`/`--version` print and
/// exit(0).
Config parse_command_line(int argc, char** argv);

}  // namespace blobstreaming::bench
