/// ReservationTable's reservations filled in parts (push --streams): the
/// ledger of the ranges received with their CRC32Cs, where a part's ticket
/// starts, and a part connection's begin and end. The rest of the table is in
/// ReservationTable.cpp.
#include "ReservationTable.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>

namespace blobstreaming::server {

std::uint64_t ReservationTable::Parts::held_bytes() const noexcept
{
    std::uint64_t n = 0;
    for (const auto& [offset, extent] : held) n += extent.length;
    return n;
}

std::uint64_t ReservationTable::Parts::first_taken(std::uint64_t offset, std::uint64_t end) const noexcept
{
    std::uint64_t first = end;
    const auto scan = [&](const auto& ranges, auto length_of) {
        auto it = ranges.upper_bound(offset);
        if (it != ranges.begin()) {
            auto before = std::prev(it);
            if (before->first + length_of(before->second) > offset) first = std::min(first, offset);
        }
        if (it != ranges.end() && it->first < end) first = std::min(first, it->first);
    };
    scan(held, [](const Extent& e) { return e.length; });
    scan(active, [](const auto& a) { return a.first; });
    return first;
}

std::uint64_t ReservationTable::part_start_locked(const Entry& e, std::uint64_t id, std::uint64_t offset,
                                                  std::uint64_t length) const
{
    const Reservation* r = e.parts ? e.parts->reservation.get() : e.reservation.get();
    if (!r) throw_missing(id, "is being filled in order by a data connection, not in parts");
    if (e.parts && e.parts->aborting) throw_missing(id, "is being aborted");
    if (!e.parts && !r->takes_parts()) {
        const std::string why = r->checksum_algorithm() != ChecksumAlgorithm::crc32c
                                    ? "its checksum is " + std::string(to_string(r->checksum_algorithm())) +
                                          ", which does not combine from parts (CRC32C does)"
                                : r->written() > 0 ? "it already holds bytes received in order"
                                                   : "its store writes in order only";
        throw Error(Errc::refused, "reservation " + std::to_string(id) + " (" + quote_name(r->name()) +
                                       ") cannot be filled in parts: " + why);
    }
    if (length == 0 || offset >= r->size() || length > r->size() - offset)
        throw Error(Errc::invalid_range, "part [" + std::to_string(offset) + ", +" + std::to_string(length) +
                                             ") of reservation " + std::to_string(id) + " (" + quote_name(r->name()) +
                                             ", " + std::to_string(r->size()) +
                                             " bytes): a part is a non-empty range inside the Blob");
    const std::uint64_t end = offset + length;
    std::uint64_t start = offset;
    if (e.parts) {
        // Past the bytes already held from `offset` on.
        for (auto it = e.parts->held.find(start); it != e.parts->held.end() && start < end;
             it = e.parts->held.find(start))
            start = std::min(end, start + it->second.length);
        const std::uint64_t taken = e.parts->first_taken(start, end);
        if (taken < end)
            throw Error(Errc::invalid_range,
                        "part [" + std::to_string(offset) + ", " + std::to_string(end) + ") of reservation " +
                            std::to_string(id) + " (" + quote_name(r->name()) + "): byte " + std::to_string(taken) +
                            " is already held or being received by another connection; parts must not overlap");
    }
    return start;
}

ReservationTable::PartStart ReservationTable::part_start(std::uint64_t id, std::uint64_t offset,
                                                         std::uint64_t length) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) throw_missing(id, "is not open (never reserved, committed, aborted or expired)");
    const Entry& e = it->second;
    PartStart out;
    out.offset = part_start_locked(e, id, offset, length);
    out.name = (e.parts ? *e.parts->reservation : *e.reservation).name();
    return out;
}

std::shared_ptr<Reservation> ReservationTable::begin_part(std::uint64_t id, std::uint64_t offset, std::uint64_t length,
                                                          std::shared_ptr<TransferControl> control)
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end())
        throw Error(Errc::refused, "reservation " + std::to_string(id) +
                                       " of this ticket was committed, aborted or expired meanwhile");
    Entry& e = it->second;
    // Errors keep part_start()'s codes: invalid_range (the range is taken,
    // or moved on) tells the client to ask for the part again.
    const std::uint64_t start = part_start_locked(e, id, offset, length);
    if (start != offset)
        // The ticket was issued before an earlier connection of this part
        // reached the store and landed bytes: the part goes on from `start`.
        throw Error(Errc::invalid_range, "part [" + std::to_string(offset) + ", +" + std::to_string(length) +
                                             ") of reservation " + std::to_string(id) + ": bytes from " +
                                             std::to_string(offset) +
                                             " were received meanwhile; ask for the part again");
    if (!e.parts) {
        e.parts = std::make_unique<Parts>();
        e.parts->reservation = std::move(e.reservation);
    }
    e.parts->active.emplace(offset, std::make_pair(length, std::move(control)));
    e.parked = false;
    return e.parts->reservation;
}

void ReservationTable::end_part(std::uint64_t id, std::uint64_t offset, std::uint64_t landed, std::uint32_t crc,
                                bool keep) noexcept
{
    std::shared_ptr<Reservation> victim;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = entries_.find(id);
        if (it == entries_.end() || !it->second.parts) return;
        Parts& parts = *it->second.parts;
        parts.active.erase(offset);
        if (keep && landed > 0 && !parts.aborting) {
            parts.held[offset] = {landed, crc};
        } else if (!keep && !parts.aborting) {
            parts.aborting = true;
            for (auto& [at, a] : parts.active)
                if (a.second) a.second->cancelled = true;
        }
        it->second.created = now();  // the grace period runs from the last part
        if (parts.aborting && parts.active.empty()) {
            victim = std::move(parts.reservation);
            erase_locked(it);
        } else if (parts.active.empty()) {
            parts.reservation->suspend();  // idle until the next part or the commit
        }
    }
    if (victim) victim->abort();
}

}  // namespace blobstreaming::server
