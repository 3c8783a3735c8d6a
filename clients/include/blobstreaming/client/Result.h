#pragma once
/// The outcome of one Session operation, and the callback types.

#include <blobstreaming/client/Notice.h>
#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/Error.h>

#include <cstdint>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

namespace blobstreaming::client {

/// The types of namespace blobstreaming that the client API hands out,
/// reachable through `using namespace blobstreaming::client` as well.
using blobstreaming::BlobInfo;
using blobstreaming::Checksum;
using blobstreaming::ChecksumAlgorithm;
using blobstreaming::Errc;
using blobstreaming::Error;

/// Sync: the call returns after the completion callback has run.
/// Async: the call returns at once; the callback runs later on the reactor
/// thread.
enum class Mode { Sync, Async };

/// Storage tier, nearest first (same order as the control plane's).
enum class Tier { memory, workstation, cluster, central };
/// "memory", "workstation", "cluster", "central".
const char* tier_name(Tier tier) noexcept;

/// A committed Blob and the store that holds it.
struct StoredBlob {
    std::string store;
    BlobInfo info;
};

/// Where a Blob is.
struct Location {
    std::string store;
    Tier tier = Tier::central;
    /// false: a read-through store (blobstored --read-through) that does not
    /// hold the Blob yet; a pull there fetches it from a farther tier first.
    bool holds = true;
};

/// A registered store as it answered (or did not) just now.
struct StoreStatus {
    std::string name;
    bool reachable = false;
    std::string error;  ///< why it is not reachable
    std::string kind;   ///< "file" or "memory"
    Tier tier = Tier::central;
    std::uint64_t capacity = 0;  ///< 0: bounded only by its file system
    std::uint64_t used = 0;
    std::uint64_t reserved = 0;
    std::uint64_t blobs = 0;
    std::string data_endpoint;  ///< HOST:PORT of its data port
    std::string host;           ///< its host's boot id: equal for stores of one host
    bool local_files = false;   ///< it offers its Blobs' files to processes of its host
};

/// A registered store that did not answer an operation across every store
/// (list, locate, and the choice of the nearest holder): connection refused,
/// no answer within the timeout (Errc::unreachable, Errc::timeout).
struct UnreachableStore {
    std::string name;
    std::string error;  ///< what happened, e.g. `list: store "ws2" unreachable at HOST:PORT (TRANSIENT)`
};

/// A registered store's Naming Service entry as prune_stores() found it.
struct PrunedStore {
    std::string name;
    std::string control;  ///< HOST:PORT of the daemon the entry named
    std::string reason;   ///< why it is gone: "connection refused (TRANSIENT)", ...
};

/// What an operation produced. `error` is empty on success; otherwise its
/// value is a blobstreaming::Errc and `message` says what failed, on which
/// object and why. Fields an operation does not produce stay empty.
struct Result {
    std::error_code error;
    std::string message;

    std::string store;                ///< the store that served the operation
    BlobInfo info;                    ///< push, pull, stat: the whole Blob as stored
    std::uint64_t offset = 0;         ///< pull: first byte of the range; push/pull: where a resumed transfer continued
    std::uint64_t length = 0;         ///< push, pull: bytes of the range
    std::uint64_t bytes = 0;          ///< bytes moved (on failure: how far it got)
    double seconds = 0;               ///< wall time of the transfer
    bool local = false;               ///< pull served by the same-host fast path
    std::size_t streams = 1;          ///< pull: the data connections the bytes went over
    bool compressed = false;          ///< push, pull: the body went as frames (Compression), zstd where that paid
    std::uint64_t wire_bytes = 0;     ///< push, pull over a data connection: bytes on the wire (compressed: the frames)
    std::vector<StoredBlob> blobs;    ///< list
    std::vector<Location> locations;  ///< locate, nearest tier first
    std::vector<StoreStatus> stores;  ///< stores; prune_stores: the entries kept
    /// list and locate across every store: the stores that did not answer
    /// (the operation succeeds with the others' answers: a partial result).
    std::vector<UnreachableStore> unreachable;
    std::vector<PrunedStore> pruned;      ///< prune_stores: the entries removed
    std::vector<TransferNotice> notices;  ///< poll_notices, oldest first per store

    bool ok() const noexcept { return !error; }
    /// Errc::ok on success.
    Errc errc() const noexcept { return error ? static_cast<Errc>(error.value()) : Errc::ok; }
    /// Throws Error(errc(), message) when the operation failed.
    void throw_if_error() const;
};

/// Runs exactly once per operation, on the reactor thread (the Session's
/// thread, or the thread inside run_once()). Must not throw: an exception
/// escaping it is logged and dropped. It may start new operations.
using Completion = std::function<void(const Result&)>;

/// Transfer progress on the reactor thread: bytes so far and the total.
/// Called when bytes move (not per byte; at most a few hundred times per
/// second for a busy transfer). An exception it throws fails that transfer:
/// a blobstreaming::Error with its own code and message, anything else with
/// Errc::io_error "<op>: the progress callback threw: <what()>".
using Progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

}  // namespace blobstreaming::client
