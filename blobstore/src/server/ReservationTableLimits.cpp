/// ReservationTable's bounds on open reservations (--max-reservations,
/// --max-reservations-per-client): the checks before a reservation is added
/// and the reservations a check evicts. The rest of the table is in
/// ReservationTable.cpp, filling in parts in ReservationTableParts.cpp.
#include "ReservationTable.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

namespace blobstreaming::server {

void ReservationTable::check_limits_locked(const std::string& client, const std::string& what,
                                           std::vector<std::shared_ptr<Reservation>>& evicted)
{
    auto it = per_client_.find(client);
    const std::size_t held = it == per_client_.end() ? 0 : it->second;
    if (limits_.per_client > 0 && held >= limits_.per_client)
        throw Error(Errc::limit_reached,
                    what + ": client " + quote_name(client) + " already holds " + std::to_string(held) +
                        " open reservations, the most one client may hold (max-reservations-per-client " +
                        std::to_string(limits_.per_client) +
                        "); commit or abort them, or wait until unused ones expire");
    if (limits_.total == 0 || entries_.size() < limits_.total) return;
    // Make room: the oldest reservation nobody is filling of the client
    // holding the most, when that client holds at least two more than this
    // one (two clients at the limit converge on equal shares).
    const auto t = now();
    auto victim = entries_.end();
    std::size_t victim_held = 0;
    for (auto e = entries_.begin(); e != entries_.end(); ++e) {
        const Entry& entry = e->second;
        if (entry.client == client) continue;
        const bool idle = entry.reservation || (entry.parts && entry.parts->active.empty());
        if (!idle || t < entry.created + limits_.pressure_idle) continue;
        const std::size_t theirs = per_client_[entry.client];
        if (theirs < held + 2) continue;
        if (victim == entries_.end() || theirs > victim_held ||
            (theirs == victim_held && entry.created < victim->second.created)) {
            victim = e;
            victim_held = theirs;
        }
    }
    if (victim == entries_.end())
        throw Error(Errc::limit_reached, what + ": the store already holds " + std::to_string(entries_.size()) +
                                             " open reservations, its limit (max-reservations " +
                                             std::to_string(limits_.total) + "); try again when some have ended");
    Entry& v = victim->second;
    spdlog::warn("{}: the store holds {} open reservations, its limit: the reservation of {} by client {} ({} open), "
                 "unused for {:.1f} s, is aborted to make room for client {}",
                 what, entries_.size(), quote_name(v.reservation ? v.reservation->name() : v.parts->reservation->name()),
                 quote_name(v.client), victim_held,
                 std::chrono::duration<double>(t - v.created).count(), quote_name(client));
    evicted.push_back(v.reservation ? std::shared_ptr<Reservation>(std::move(v.reservation))
                                    : std::move(v.parts->reservation));
    erase_locked(victim);
}

void ReservationTable::abort_evicted(std::vector<std::shared_ptr<Reservation>>& evicted, const std::string& what) noexcept
{
    for (auto& r : evicted) {
        try {
            if (r) r->abort();
        } catch (const std::exception& e) {
            spdlog::warn("{}: aborting the reservation taken to make room failed: {}", what, e.what());
        } catch (...) {
            spdlog::warn("{}: aborting the reservation taken to make room failed", what);
        }
    }
    evicted.clear();
}

void ReservationTable::set_limits(ReservationLimits limits)
{
    std::lock_guard<std::mutex> lock(mutex_);
    limits_ = limits;
}

void ReservationTable::check_limits(const std::string& client, const std::string& what)
{
    std::vector<std::shared_ptr<Reservation>> evicted;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        check_limits_locked(client, what, evicted);
    }
    abort_evicted(evicted, what);
}

}  // namespace blobstreaming::server
