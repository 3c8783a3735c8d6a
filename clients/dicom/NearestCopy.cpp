#include "NearestCopy.h"

#include <blobstreaming/client/Series.h>
#include <blobstreaming/common/Error.h>

#include <algorithm>
#include <cstddef>
#include <tuple>
#include <utility>

namespace blobstreaming::dicom {

void order_nearest(std::vector<IndexedBlob>& copies, const std::map<std::string, client::StoreStatus>& stores)
{
    const auto rank = [&](const IndexedBlob& c) {
        const auto it = stores.find(c.store);
        if (it == stores.end()) return std::make_tuple(2, 0, c.store);
        if (!it->second.reachable) return std::make_tuple(1, 0, c.store);
        return std::make_tuple(0, static_cast<int>(it->second.tier), c.store);
    };
    std::stable_sort(copies.begin(), copies.end(),
                     [&](const IndexedBlob& a, const IndexedBlob& b) { return rank(a) < rank(b); });
}

std::map<std::string, client::StoreStatus> store_statuses(client::Session& session)
{
    std::map<std::string, client::StoreStatus> out;
    for (client::StoreStatus& s : session.stores()) out.emplace(s.name, std::move(s));
    return out;
}

std::vector<IndexedBlob> nearest_first(std::vector<IndexedBlob> copies, IndexedBlob entry,
                                       const std::map<std::string, client::StoreStatus>& stores)
{
    if (copies.empty()) copies.push_back(std::move(entry));
    order_nearest(copies, stores);
    return copies;
}

namespace {

/// Another copy may succeed where this one failed: not when the bytes
/// could not be written here, nor when the Session is closing.
bool another_copy_may_serve(Errc errc) noexcept { return errc != Errc::io_error && errc != Errc::cancelled; }

}  // namespace

std::vector<PulledInstance> pull_from_copies(client::Session& session, const std::vector<InstanceToPull>& instances,
                                             const client::PullOptions& options)
{
    std::vector<PulledInstance> out(instances.size());
    std::vector<std::size_t> pending;
    for (std::size_t i = 0; i < instances.size(); ++i) {
        if (instances[i].copies.empty()) {
            out[i].result.error = make_error_code(Errc::no_such_blob);
            out[i].result.message = "the index lists no copy of instance " + instances[i].sop;
            continue;
        }
        pending.push_back(i);
    }
    for (std::size_t round = 0; !pending.empty(); ++round) {
        std::map<std::string, std::vector<std::size_t>> by_store;
        for (std::size_t i : pending) by_store[instances[i].copies[round].store].push_back(i);
        for (const auto& [store, members] : by_store) {
            std::vector<client::PullSlice> slices;
            for (std::size_t i : members) {
                const IndexedBlob& copy = instances[i].copies[round];
                out[i].blob = copy.blob;
                out[i].tried.push_back(store);
                client::PullSink sink = instances[i].buffer
                                            ? client::PullSink::buffer(instances[i].buffer, instances[i].capacity)
                                            : client::PullSink::file(instances[i].path);
                if (instances[i].place) sink = client::PullSink::in_place(instances[i].place, std::move(sink));
                slices.push_back({copy.blob, std::move(sink)});
            }
            client::PullOptions these = options;
            these.store = store;
            client::SeriesResult series;
            session.pull_series(std::move(slices), these, client::Mode::Sync,
                                [&series](const client::SeriesResult& r) { series = r; });
            for (std::size_t k = 0; k < members.size() && k < series.slices.size(); ++k)
                out[members[k]].result = series.slices[k];
        }
        std::vector<std::size_t> again;
        for (std::size_t i : pending) {
            const client::Result& r = out[i].result;
            if (!r.ok() && round + 1 < instances[i].copies.size() && another_copy_may_serve(r.errc()))
                again.push_back(i);
        }
        pending = std::move(again);
    }
    return out;
}

}  // namespace blobstreaming::dicom
