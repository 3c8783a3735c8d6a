#pragma once
/// The placement rule: which store a push that names none writes to. The
/// daemon's BlobLocator servant applies it (BlobLocator::place), and the
/// client library applies the same rule itself when no locator answers or
/// it uses TLS (docs/CLIENT_API.md, "Placement").
///
///  1. the default store, when it answered, is of one of the tiers asked
///     and has room;
///  2. else the other stores of the tiers asked (none asked: any tier)
///     that answered and have room, nearest tier first, in one tier in the
///     order given (the Naming Service's: by name).
/// Room: capacity - used - reserved >= size; a store without a capacity
/// (bounded by its file system or pool only) always has room, and its
/// reserve says when the medium is full.

#include <blobstreaming/common/Error.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming {

/// A store's free bytes when it has no capacity of its own.
inline constexpr std::uint64_t kUnboundedRoom = std::numeric_limits<std::uint64_t>::max();

/// "memory", "workstation", "cluster", "central" for tiers 0 to 3 (the
/// order of StoreTier, nearest first); "tier N" beyond.
inline std::string placement_tier_name(int tier)
{
    static const char* const names[] = {"memory", "workstation", "cluster", "central"};
    return tier >= 0 && tier < 4 ? names[tier] : "tier " + std::to_string(tier);
}

/// The free bytes of a store with `capacity` (0: unbounded), `used` and
/// `reserved`.
inline std::uint64_t room_of(std::uint64_t capacity, std::uint64_t used, std::uint64_t reserved) noexcept
{
    if (capacity == 0) return kUnboundedRoom;
    const std::uint64_t taken = used > kUnboundedRoom - reserved ? kUnboundedRoom : used + reserved;
    return capacity > taken ? capacity - taken : 0;
}

/// A registered store as it answered for a placement.
struct PlacementCandidate {
    std::string store;
    bool answered = false;
    std::string problem;  ///< why it did not answer
    int tier = 0;         ///< StoreTier order, nearest first (when answered)
    std::uint64_t room = 0;
};

/// What choose_placement() decided: `index` into the candidates, or the
/// error (`code`, `message`) that says why none fits.
struct PlacementChoice {
    std::optional<std::size_t> index;
    bool by_default = false;
    Errc code = Errc::ok;
    std::string message;
};

/// The placement rule over `candidates` (registered stores, in the
/// Naming Service's order) for `size` bytes in `tiers` (empty: any), with
/// `default_store` ("" : none). Without a fit: Errc::out_of_space when a
/// store of the tiers answered without room, naming each with its free
/// bytes; Errc::unknown_store when no registered store is of the tiers;
/// Errc::unreachable when none of them answered. The message starts with
/// what was asked ("no store of tier cluster has room for N bytes ...").
inline PlacementChoice choose_placement(const std::vector<PlacementCandidate>& candidates, std::uint64_t size,
                                        const std::vector<int>& tiers, const std::string& default_store)
{
    const auto wanted = [&](int tier) {
        if (tiers.empty()) return true;
        for (int t : tiers)
            if (t == tier) return true;
        return false;
    };
    PlacementChoice out;
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const PlacementCandidate& c = candidates[i];
        if (!c.answered || !wanted(c.tier) || c.room < size) continue;
        if (c.store == default_store) {
            out.index = i;
            out.by_default = true;
            return out;
        }
        if (!best || c.tier < candidates[*best].tier) best = i;
    }
    if (best) {
        out.index = best;
        return out;
    }
    std::string tier_text;
    if (tiers.empty()) {
        tier_text = "any tier";
    } else {
        tier_text = tiers.size() == 1 ? "tier " : "tiers ";
        for (std::size_t i = 0; i < tiers.size(); ++i)
            tier_text += (i == 0 ? "" : i + 1 == tiers.size() ? " or " : ", ") + placement_tier_name(tiers[i]);
    }
    std::string asked, other, silent;
    const auto add = [](std::string& list, const std::string& item) { list += (list.empty() ? "" : ", ") + item; };
    for (const PlacementCandidate& c : candidates) {
        const std::string mark = c.store == default_store ? ", the default" : "";
        if (!c.answered) {
            add(silent, c.store + (mark.empty() ? "" : " (the default)"));
        } else if (wanted(c.tier)) {
            add(asked, c.store + " (" + placement_tier_name(c.tier) + mark + "): " +
                           (c.room == kUnboundedRoom ? std::string("unbounded") : std::to_string(c.room)) +
                           " bytes free");
        } else {
            add(other, c.store + " (" + placement_tier_name(c.tier) + mark + ")");
        }
    }
    bool default_registered = default_store.empty();
    for (const PlacementCandidate& c : candidates) default_registered = default_registered || c.store == default_store;
    const std::string did_not_answer = (silent.empty() ? "" : "; did not answer: " + silent) +
                                       (default_registered ? "" : "; the default store \"" + default_store +
                                                                      "\" is not registered");
    if (!asked.empty()) {
        out.code = Errc::out_of_space;
        out.message = "no store of " + tier_text + " has room for " + std::to_string(size) + " bytes (asked: " +
                      asked + (other.empty() ? "" : "; of other tiers: " + other) + did_not_answer + ")";
    } else if (!silent.empty()) {
        out.code = Errc::unreachable;
        out.message = "no store of " + tier_text + " answered to place " + std::to_string(size) + " bytes (" +
                      (other.empty() ? "" : "of other tiers: " + other + "; ") + "did not answer: " + silent + ")";
    } else {
        out.code = Errc::unknown_store;
        out.message = candidates.empty() ? "no store is registered to place " + std::to_string(size) + " bytes in"
                                         : "no registered store is of " + tier_text + " (registered: " + other +
                                               did_not_answer + ")";
    }
    return out;
}

}  // namespace blobstreaming
