#include "ReservationTable.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

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

void ReservationTable::throw_missing(std::uint64_t id, const char* why)
{
    throw Error(Errc::no_such_reservation, "reservation " + std::to_string(id) + " " + why);
}

void ReservationTable::check_limits_locked(const std::string& client, const std::string& what) const
{
    if (limits_.per_client > 0) {
        auto it = per_client_.find(client);
        const std::size_t held = it == per_client_.end() ? 0 : it->second;
        if (held >= limits_.per_client)
            throw Error(Errc::limit_reached,
                        what + ": client " + quote_name(client) + " already holds " + std::to_string(held) +
                            " open reservations, the most one client may hold (max-reservations-per-client " +
                            std::to_string(limits_.per_client) +
                            "); commit or abort them, or wait until unused ones expire");
    }
    if (limits_.total > 0 && entries_.size() >= limits_.total)
        throw Error(Errc::limit_reached, what + ": the store already holds " + std::to_string(entries_.size()) +
                                             " open reservations, its limit (max-reservations " +
                                             std::to_string(limits_.total) + "); try again when some have ended");
}

void ReservationTable::set_limits(ReservationLimits limits)
{
    std::lock_guard<std::mutex> lock(mutex_);
    limits_ = limits;
}

void ReservationTable::check_limits(const std::string& client, const std::string& what) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    check_limits_locked(client, what);
}

std::uint64_t ReservationTable::add(std::unique_ptr<Reservation> reservation, const std::string& client)
{
    // Nobody fills it until a data connection claims it: let it give back
    // what it holds for filling (a FileStore reservation's descriptor).
    reservation->suspend();
    std::lock_guard<std::mutex> lock(mutex_);
    check_limits_locked(client, "reserve " + quote_name(reservation->name()));
    const std::uint64_t id = next_id_++;
    Entry entry{std::move(reservation), now(), nullptr, false, client};
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
    if (!it->second.reservation)
        throw Error(Errc::refused,
                    "reservation " + std::to_string(id) + " is already being filled by another connection");
    return std::move(it->second.reservation);
}

void ReservationTable::release(std::uint64_t id) noexcept
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it != entries_.end() && !it->second.reservation) erase_locked(it);
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
            it->second.reservation->suspend();  // idle until resumed
            return;
        }
        if (it != entries_.end() && !it->second.reservation) erase_locked(it);
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
                erase_locked(it);
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
        if (!it->second.reservation) {
            if (it->second.control) it->second.control->cancelled = true;
            return;
        }
        victim = std::move(it->second.reservation);
        erase_locked(it);
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
                it = erase_locked(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& r : victims) {
        spdlog::warn("reservation of {} ({} bytes) unused for {} s: aborted, space released", quote_name(r->name()),
                     r->size(), grace_.count() / 1000.0);
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
            if (e.reservation) victims.push_back(std::move(e.reservation));
            else if (e.control) e.control->cancelled = true;
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
    for (const auto& kv : entries_) n += kv.second.reservation ? 1 : 0;
    return n;
}

}  // namespace blobstreaming::server
