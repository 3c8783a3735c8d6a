// Stores that take named requests (NamedRoutes.h).
#include "NamedRoutes.h"

#include <blobstreaming/transporter/Log.h>

namespace blobstreaming::client {

std::optional<NamedRoutes::Route> NamedRoutes::find(const std::string& store, Compression compress) const
{
    if (!enabled_) return std::nullopt;
    std::optional<Route> route;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const auto it = routes_.find(store);
        if (it == routes_.end()) return std::nullopt;
        route = it->second;
    }
    if (compresses_towards(compress, route->host)) return std::nullopt;
    return route;
}

void NamedRoutes::learn(const std::string& store, const Ticket& ticket, const JobOutcome& outcome)
{
    if (!enabled_ || !outcome.advertised) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!outcome.advertised->named_requests) {
        if (routes_.erase(store) > 0)
            library_log()->debug("store \"{}\": its data connections no longer take named requests", store);
        return;
    }
    Route route;
    route.host = ticket.host;
    route.port = ticket.port;
    route.default_checksum = outcome.advertised->default_checksum.value_or(kDefaultChecksum);
    routes_[store] = std::move(route);
}

void NamedRoutes::name_job(TransferJob& job, const Route& route, protocol::FrameType type, const std::string& name,
                           std::uint64_t offset, std::uint64_t length, bool overwrite,
                           std::optional<ChecksumAlgorithm> checksum)
{
    job.type = type;
    job.ticket.host = route.host;
    job.ticket.port = route.port;
    job.ticket.offset = offset;
    job.ticket.length = length;
    protocol::NamedRequest request;
    request.type = type;
    request.name = name;
    request.offset = offset;
    request.length = length;
    if (type == protocol::FrameType::push) {
        request.overwrite = overwrite;
        request.checksum = checksum.value_or(route.default_checksum);
        job.ticket.checksum = request.checksum;
    }
    job.named = std::move(request);
}

}  // namespace blobstreaming::client
