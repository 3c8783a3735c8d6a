#include "ReservationTable.h"

#include <blobstreaming/blobstore/BlobName.h>
#include <blobstreaming/blobstore/Error.h>

#include <spdlog/spdlog.h>

#include <vector>

namespace blobstreaming::server {

ReservationTable::ReservationTable(std::chrono::milliseconds grace, Clock clock)
    : grace_(grace), clock_(std::move(clock))
{
}

ReservationTable::~ReservationTable() { abort_all(); }

std::chrono::steady_clock::time_point ReservationTable::now() const
{
    return clock_ ? clock_() : std::chrono::steady_clock::now();
}

void ReservationTable::throw_missing(std::uint64_t id, const char* why)
{
    throw Error(Errc::no_such_reservation, "reservation " + std::to_string(id) + " " + why);
}

std::uint64_t ReservationTable::add(std::unique_ptr<Reservation> reservation, std::string client)
{
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t id = next_id_++;
    entries_.emplace(id, Entry{std::move(reservation), now(), nullptr, false, std::move(client)});
    return id;
}

ReservationTable::Summary ReservationTable::find(std::uint64_t id) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) throw_missing(id, "is not open (never reserved, committed, aborted or expired)");
    if (!it->second.reservation) throw_missing(id, "is already being filled by a data connection");
    const Reservation& r = *it->second.reservation;
    return {id, r.name(), r.size(), r.written(), it->second.client};
}

ReservationTable::Summary ReservationTable::resumable(const std::string& name, const std::string& client) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, e] : entries_) {
        if (!e.reservation || e.reservation->name() != name || e.client != client) continue;
        return {id, name, e.reservation->size(), e.reservation->written(), e.client};
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
    if (!it->second.reservation)
        throw Error(Errc::refused,
                    "reservation " + std::to_string(id) + " is already being filled by another connection");
    return std::move(it->second.reservation);
}

void ReservationTable::release(std::uint64_t id) noexcept
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it != entries_.end() && !it->second.reservation) entries_.erase(it);
}

void ReservationTable::park(std::uint64_t id, std::unique_ptr<Reservation> reservation) noexcept
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = entries_.find(id);
        const bool aborted = it == entries_.end() || (it->second.control && it->second.control->cancelled);
        if (!aborted && reservation && reservation->is_open() && !it->second.reservation) {
            it->second.reservation = std::move(reservation);
            it->second.created = now();
            it->second.control.reset();
            it->second.parked = true;
            return;
        }
        if (it != entries_.end() && !it->second.reservation) entries_.erase(it);
    }
    if (reservation) reservation->abort();
}

bool ReservationTable::abort_parked(const std::string& name)
{
    std::unique_ptr<Reservation> victim;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = entries_.begin(); it != entries_.end(); ++it) {
            if (it->second.parked && it->second.reservation && it->second.reservation->name() == name) {
                victim = std::move(it->second.reservation);
                entries_.erase(it);
                break;
            }
        }
    }
    if (!victim) return false;
    spdlog::info("interrupted push of {} ({} of {} bytes) superseded by a new push: aborted", quote_name(name),
                 victim->written(), victim->size());
    victim->abort();
    return true;
}

std::unique_ptr<Reservation> ReservationTable::take(std::uint64_t id)
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) throw_missing(id, "is not open (never reserved, committed, aborted or expired)");
    if (!it->second.reservation) throw_missing(id, "is being filled by a data connection");
    auto out = std::move(it->second.reservation);
    entries_.erase(it);
    return out;
}

void ReservationTable::abort(std::uint64_t id)
{
    std::unique_ptr<Reservation> victim;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = entries_.find(id);
        if (it == entries_.end())
            throw_missing(id, "is not open (never reserved, committed, aborted or expired)");
        if (!it->second.reservation) {
            if (it->second.control) it->second.control->cancelled = true;
            return;
        }
        victim = std::move(it->second.reservation);
        entries_.erase(it);
    }
    victim->abort();
}

std::size_t ReservationTable::purge()
{
    std::vector<std::unique_ptr<Reservation>> victims;
    {
        const auto t = now();
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = entries_.begin(); it != entries_.end();) {
            if (it->second.reservation && t >= it->second.created + grace_) {
                victims.push_back(std::move(it->second.reservation));
                it = entries_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& r : victims) {
        spdlog::warn("reservation of {} ({} bytes) unused for {} s: aborted, space released",
                     quote_name(r->name()), r->size(), grace_.count() / 1000.0);
        r->abort();
    }
    return victims.size();
}

void ReservationTable::abort_all() noexcept
{
    std::vector<std::unique_ptr<Reservation>> victims;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [id, e] : entries_) {
            if (e.reservation)
                victims.push_back(std::move(e.reservation));
            else if (e.control)
                e.control->cancelled = true;
        }
        entries_.clear();
    }
    for (auto& r : victims) r->abort();
}

std::size_t ReservationTable::waiting() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t n = 0;
    for (const auto& kv : entries_) n += kv.second.reservation ? 1 : 0;
    return n;
}

}  // namespace blobstreaming::server
