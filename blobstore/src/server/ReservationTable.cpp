/// The table of open reservations: add, claim, park, take, abort and purge.
/// Its bounds are in ReservationTableLimits.cpp, filling in parts in
/// ReservationTableParts.cpp.
#include "ReservationTable.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <iterator>
#include <vector>

namespace blobstreaming::server {

ReservationTable::ReservationTable(std::chrono::milliseconds grace, Clock clock, ReservationLimits limits)
    : grace_(grace), clock_(std::move(clock)), limits_(limits)
{}

ReservationTable::~ReservationTable() { abort_all(); }

std::chrono::steady_clock::time_point ReservationTable::now() const
{
    return clock_ ? clock_() : std::chrono::steady_clock::now();
}

void ReservationTable::throw_missing(std::uint64_t id, const std::string& why)
{
    throw Error(Errc::no_such_reservation, "reservation " + std::to_string(id) + " " + why);
}

std::uint64_t ReservationTable::add(std::unique_ptr<Reservation> reservation, const std::string& client)
{
    // Nobody fills it until a data connection claims it: let it give back
    // what it holds for filling (a FileStore reservation's descriptor).
    reservation->suspend();
    const std::string what = "reserve " + quote_name(reservation->name());
    std::vector<std::shared_ptr<Reservation>> evicted;
    std::uint64_t id = 0;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        check_limits_locked(client, what, evicted);
        id = next_id_++;
        Entry entry{std::move(reservation), now(), nullptr, false, client, nullptr};
        entries_.emplace(id, std::move(entry));
        ++per_client_[client];
    }
    abort_evicted(evicted, what);
    return id;
}

std::uint64_t ReservationTable::restore(std::unique_ptr<Reservation> reservation, std::chrono::seconds idle)
{
    reservation->suspend();
    const std::string client = reservation->resume_owner();
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t id = next_id_++;
    const auto at = now();
    const auto since = std::chrono::duration_cast<std::chrono::steady_clock::duration>(idle);
    const auto created = at.time_since_epoch() > since ? at - since : at;
    Entry entry{std::move(reservation), created, nullptr, true, client, nullptr};
    entries_.emplace(id, std::move(entry));
    ++per_client_[client];
    return id;
}

std::map<std::uint64_t, ReservationTable::Entry>::iterator ReservationTable::erase_locked(
    std::map<std::uint64_t, Entry>::iterator it)
{
    auto count = per_client_.find(it->second.client);
    if (count != per_client_.end() && --count->second == 0) per_client_.erase(count);
    return entries_.erase(it);
}

ReservationTable::Summary ReservationTable::find(std::uint64_t id) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) throw_missing(id, "is not open (never reserved, committed, aborted or expired)");
    if (it->second.parts)
        throw_missing(id, "is being filled in parts (push --streams): its ranges are asked for with recvPart");
    if (!it->second.reservation) throw_missing(id, "is already being filled by a data connection");
    const Reservation& r = *it->second.reservation;
    return {id, r.name(), r.size(), r.written(), it->second.client, r.checksum_algorithm()};
}

ReservationTable::Summary ReservationTable::resumable(const std::string& name, const std::string& client) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, e] : entries_) {
        if (!e.reservation || e.reservation->name() != name || e.client != client) continue;
        return {
            id, name, e.reservation->size(), e.reservation->written(), e.client, e.reservation->checksum_algorithm()};
    }
    throw Error(Errc::no_such_reservation,
                "no interrupted push of " + quote_name(name) +
                    " to resume (none was started, it was committed or aborted, its grace period ran out, "
                    "or a data connection is still filling it)");
}

std::string ReservationTable::client_of(std::uint64_t id) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) throw_missing(id, "is not open (never reserved, committed, aborted or expired)");
    return it->second.client;
}

void ReservationTable::attach(std::uint64_t id, std::shared_ptr<TransferControl> control)
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end() || !it->second.reservation)
        throw_missing(id, "is not open (never reserved, committed, aborted or expired)");
    it->second.control = std::move(control);
}

std::unique_ptr<Reservation> ReservationTable::claim(std::uint64_t id)
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end())
        throw Error(Errc::refused, "reservation " + std::to_string(id) +
                                       " of this ticket was committed, aborted or expired meanwhile");
    if (it->second.parts)
        throw Error(Errc::refused, "reservation " + std::to_string(id) +
                                       " is being filled in parts by other connections: it is not filled in order");
    if (!it->second.reservation)
        throw Error(Errc::refused,
                    "reservation " + std::to_string(id) + " is already being filled by another connection");
    return std::move(it->second.reservation);
}

void ReservationTable::release(std::uint64_t id) noexcept
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it != entries_.end() && !it->second.reservation && !it->second.parts) erase_locked(it);
}

void ReservationTable::park(std::uint64_t id, std::unique_ptr<Reservation> reservation) noexcept
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = entries_.find(id);
        const bool aborted = it == entries_.end() || (it->second.control && it->second.control->cancelled);
        if (!aborted && reservation && reservation->is_open() && !it->second.reservation && !it->second.parts) {
            it->second.reservation = std::move(reservation);
            it->second.created = now();
            it->second.control.reset();
            it->second.parked = true;
            it->second.reservation->suspend();  // idle until resumed
            return;
        }
        if (it != entries_.end() && !it->second.reservation && !it->second.parts) erase_locked(it);
    }
    if (reservation) reservation->abort();
}

std::uint64_t ReservationTable::received_locked(const Entry& e) noexcept
{
    if (e.parts) return e.parts->held_bytes();  // out of order: written() counts the in-order prefix only
    return e.reservation ? e.reservation->written() : 0;
}

namespace {

/// "02:10:05 UTC", the wall-clock time `after` from now.
std::string utc_in(std::chrono::steady_clock::duration after)
{
    const auto at = std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::seconds>(after);
    const std::time_t t = std::chrono::system_clock::to_time_t(at);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%H:%M:%S UTC", &tm);
    return text;
}

}  // namespace

bool ReservationTable::abort_parked(const std::string& name, const std::string& client)
{
    std::vector<std::pair<std::shared_ptr<Reservation>, std::uint64_t>> victims;  // with the bytes received
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const auto t = now();
        // Kept: nobody is filling it, and it waits for its own client.
        const auto kept = [&](const Entry& e) {
            const Reservation* r = e.parts ? e.parts->reservation.get() : e.reservation.get();
            if (!r || r->name() != name) return false;
            if (e.parts) return e.parts->active.empty() && !e.parts->aborting;  // a push in parts between parts
            return e.parked;                                                     // an interrupted push
        };
        for (const auto& [id, e] : entries_) {
            if (!kept(e) || e.client == client || t >= e.created + grace_) continue;
            // Another client's push that may still go on: never aborted for
            // a newcomer. The caller learns the name and when to try again.
            const auto left = e.created + grace_ - t;
            const auto seconds = std::chrono::ceil<std::chrono::seconds>(left).count();
            throw Error(Errc::already_exists,
                        "reserve " + quote_name(name) + ": another client's push of " + quote_name(name) +
                            " is in progress (its reservation is kept for that client to finish or resume it); "
                            "try again after " +
                            utc_in(left) + " (in " + std::to_string(seconds) + " s), when it is released if "
                            "that push has not gone on");
        }
        for (auto it = entries_.begin(); it != entries_.end();) {
            Entry& e = it->second;
            if (!kept(e)) {
                ++it;
                continue;
            }
            const std::uint64_t received = received_locked(e);
            victims.emplace_back(e.parts ? std::move(e.parts->reservation) : std::move(e.reservation), received);
            it = erase_locked(it);
        }
    }
    for (auto& [victim, received] : victims) {
        spdlog::info("interrupted push of {} ({} of {} bytes) superseded by a new push: aborted", quote_name(name),
                     received, victim->size());
        victim->abort();
    }
    return !victims.empty();
}

ReservationTable::Taken ReservationTable::take(std::uint64_t id)
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) throw_missing(id, "is not open (never reserved, committed, aborted or expired)");
    Taken out;
    if (auto& parts = it->second.parts) {
        if (parts->aborting) throw_missing(id, "is being aborted");
        if (!parts->active.empty())
            throw_missing(id, "is being filled by " + std::to_string(parts->active.size()) +
                                  " data connection(s): commit once every part has been acknowledged");
        const Reservation& r = *parts->reservation;
        std::uint64_t at = 0;
        std::uint32_t crc = 0;
        for (const auto& [offset, extent] : parts->held) {
            if (offset != at) break;
            crc = at == 0 ? extent.crc : crc32c_combine(crc, extent.crc, extent.length);
            at += extent.length;
        }
        if (at != r.size()) {
            const auto next = parts->held.lower_bound(at);
            const std::uint64_t gap_end = next == parts->held.end() ? r.size() : next->first;
            throw Error(Errc::incomplete, "commit reservation " + std::to_string(id) + " (" + quote_name(r.name()) +
                                              "): bytes [" + std::to_string(at) + ", " + std::to_string(gap_end) +
                                              ") of " + std::to_string(r.size()) + " have not been received");
        }
        out.assembled = Checksum::crc32c(crc);
        out.shared = std::move(parts->reservation);
    } else {
        if (!it->second.reservation) throw_missing(id, "is being filled by a data connection");
        out.reservation = std::move(it->second.reservation);
    }
    erase_locked(it);
    return out;
}

void ReservationTable::abort(std::uint64_t id)
{
    std::unique_ptr<Reservation> victim;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = entries_.find(id);
        if (it == entries_.end()) throw_missing(id, "is not open (never reserved, committed, aborted or expired)");
        if (auto& parts = it->second.parts) {
            if (!parts->active.empty()) {  // the last part connection to end aborts it (end_part())
                parts->aborting = true;
                for (auto& [at, a] : parts->active)
                    if (a.second) a.second->cancelled = true;
                return;
            }
            std::shared_ptr<Reservation> shared = std::move(parts->reservation);
            erase_locked(it);
            shared->abort();
            return;
        }
        if (!it->second.reservation) {
            if (it->second.control) it->second.control->cancelled = true;
            return;
        }
        victim = std::move(it->second.reservation);
        erase_locked(it);
    }
    victim->abort();
}

std::size_t ReservationTable::purge(const std::function<void(std::shared_ptr<Reservation>)>& end)
{
    std::vector<std::shared_ptr<Reservation>> victims;
    {
        const auto t = now();
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = entries_.begin(); it != entries_.end();) {
            const auto& parts = it->second.parts;
            if (parts && parts->active.empty() && t >= it->second.created + grace_) {
                victims.push_back(std::move(parts->reservation));
                it = erase_locked(it);
            } else if (it->second.reservation && t >= it->second.created + grace_) {
                victims.push_back(std::move(it->second.reservation));
                it = erase_locked(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& r : victims) {
        spdlog::warn("reservation of {} ({} bytes) unused for {} s: aborted, space released", quote_name(r->name()),
                     r->size(), grace_.count() / 1000.0);
        if (end && r->ending_waits()) end(std::move(r));
        else r->abort();
    }
    return victims.size();
}

void ReservationTable::abort_all() noexcept
{
    std::vector<std::shared_ptr<Reservation>> victims;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [id, e] : entries_) {
            if (e.parts) {
                // Part connections still using it hold it; the last one's
                // end drops it (the destructor aborts an open reservation).
                for (auto& [at, a] : e.parts->active)
                    if (a.second) a.second->cancelled = true;
                if (e.parts->active.empty()) victims.push_back(std::move(e.parts->reservation));
            } else if (e.reservation) {
                victims.push_back(std::move(e.reservation));
            } else if (e.control) {
                e.control->cancelled = true;
            }
        }
        entries_.clear();
        per_client_.clear();
    }
    for (auto& r : victims) r->abort();
}

std::size_t ReservationTable::open() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
}

std::size_t ReservationTable::open_by(const std::string& client) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = per_client_.find(client);
    return it == per_client_.end() ? 0 : it->second;
}

std::size_t ReservationTable::waiting() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t n = 0;
    for (const auto& kv : entries_)
        n += (kv.second.reservation || (kv.second.parts && kv.second.parts->active.empty())) ? 1 : 0;
    return n;
}

}  // namespace blobstreaming::server
