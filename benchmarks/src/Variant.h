#pragma once
/// The table of variants: each is a client transport (one object per client
/// process) and a server loop, plugged in like iperf3's protocol table.

#include "Config.h"
#include "Workload.h"

#include <blobstreaming/common/Sha256.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace blobstreaming::bench {

/// What a transport knows about itself once open, recorded in the JSON.
struct TransportInfo {
    int send_buffer = 0;            ///< SO_SNDBUF the kernel granted (0: unknown / not applicable)
    int receive_buffer = 0;         ///< SO_RCVBUF the kernel granted
    std::string target = "memory";  ///< where the server keeps blobs: memory | file
};

/// One client of one variant. Every call throws Error on failure (the data
/// was not moved, or not acknowledged); calls are sequential, one thread
/// (a series may use more inside, as the library it measures does).
class ClientTransport {
public:
    virtual ~ClientTransport() = default;
    /// Connects and tells the server what the runs will move (untimed): for
    /// pull the server then holds `count` blobs of `size` bytes.
    virtual void open(const Config& config) = 0;
    /// One push transaction: control message (name, size), the bytes, and the
    /// server's end-to-end acknowledgement.
    virtual void push(std::uint32_t index, const std::uint8_t* data, std::uint64_t size) = 0;
    /// One pull transaction: control message (name, offset, length), then
    /// exactly `length` bytes into `out`.
    virtual void pull(std::uint32_t index, std::uint64_t offset, std::uint64_t length, std::uint8_t* out) = 0;
    /// One timed run: blobs 0..count-1 pushed from `blobs`, as an application
    /// moves a study. Default: push() once per blob, in order. On a failure
    /// throws Error with `done` = the blobs moved.
    virtual void push_series(const BlobSet& blobs, std::uint32_t& done);
    /// One timed run: blobs 0..count-1 pulled whole into `blobs`. Default:
    /// pull() once per blob, in order. Failures as push_series().
    virtual void pull_series(BlobSet& blobs, std::uint32_t& done);
    /// Untimed, after a push run: SHA-256 of blobs 0..count-1 as the server
    /// holds them.
    virtual std::vector<Digest> stored_digests() = 0;
    /// Untimed, after each run (e.g. removes pushed blobs from a store).
    virtual void end_run() {}
    virtual TransportInfo info() const = 0;
};

struct Variant {
    const char* name;
    std::unique_ptr<ClientTransport> (*make_client)();
    /// Serves clients until killed (or one client with --one-off); prints
    /// one line "bsbench server ready variant=V address=HOST:PORT" on stdout
    /// when listening. nullptr: the variant's server is another program.
    void (*serve)(const Config& config);
};

/// nullptr when unknown.
const Variant* find_variant(const std::string& name);

std::unique_ptr<ClientTransport> make_raw_c_client();
void serve_raw_c(const Config& config);
/// raw-c's server, storing every pushed blob as a durable file under
/// Config::durable_dir before its Ack; push only. Its client is raw-c's.
void serve_raw_c_durable(const Config& config);
std::unique_ptr<ClientTransport> make_ace_client();
void serve_ace(const Config& config);
std::unique_ptr<ClientTransport> make_corba_client();
void serve_corba(const Config& config);
std::unique_ptr<ClientTransport> make_blobstreaming_client();
/// No server: memcpy() between two buffers of the client (Memcpy.cpp).
std::unique_ptr<ClientTransport> make_memcpy_client();

/// Prints the server's ready line (stdout, flushed).
void announce_ready(const char* variant, const std::string& host, unsigned port);

}  // namespace blobstreaming::bench
