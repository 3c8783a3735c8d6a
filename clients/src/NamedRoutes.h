#pragma once
/// Which stores take named requests on this Session's pooled data
/// connections (docs/PROTOCOL.md, "Named requests"), as their Responses
/// advertised: a push or pull to such a store skips the control call when
/// an advertised connection is idle. Learned from every transfer's
/// Response, forgotten when one says no more (a store of an earlier
/// release after a restart). Thread-safe: callers and control threads read
/// it, the loop thread learns.

#include "DataPlane.h"

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/transporter/Protocol.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace blobstreaming::client {

class NamedRoutes {
public:
    struct Route {
        std::string host;
        std::uint16_t port = 0;
        /// The store's checksum for a push that names none.
        ChecksumAlgorithm default_checksum = kDefaultChecksum;
    };
    /// `enabled` false (SessionOptions::named_requests): never a route.
    explicit NamedRoutes(bool enabled) : enabled_(enabled) {}

    /// The route to `store`, when its connections advertised named requests
    /// and a transfer of `compress` to it goes uncompressed (compressed
    /// frames are asked for in a ticket's Request only).
    std::optional<Route> find(const std::string& store, Compression compress) const;
    /// A transfer to `store` over `ticket`'s endpoint ended with `outcome`:
    /// its Response's advertisement (none: nothing learned).
    void learn(const std::string& store, const Ticket& ticket, const JobOutcome& outcome);

    /// Makes `job` a named one for `route`: `type`, the Blob `name`, the
    /// ticket's endpoint and range (a push: `length` its size, `checksum`
    /// the one it computes, nullopt: the store's default); the caller sets
    /// what, source or sink and done.
    static void name_job(TransferJob& job, const Route& route, protocol::FrameType type, const std::string& name,
                         std::uint64_t offset, std::uint64_t length, bool overwrite,
                         std::optional<ChecksumAlgorithm> checksum);
    /// "host:port" of `route`.
    static std::string endpoint(const Route& route) { return route.host + ":" + std::to_string(route.port); }

private:
    const bool enabled_;
    mutable std::mutex mutex_;
    std::map<std::string, Route> routes_;
};

}  // namespace blobstreaming::client
