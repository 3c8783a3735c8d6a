#pragma once
/// "Nearest holder by tier", the one rule every locate follows: the client
/// library (`blob locate`, a pull without --store, `blob copy`'s source),
/// the daemon's BlobLocator servant, and read-through's choice of a farther
/// tier.

#include <algorithm>
#include <utility>
#include <vector>

namespace blobstreaming {

/// Where to get a Blob, nearest tier first, from what the stores answered:
/// each `Place` has `tier` (ordered nearest first, as StoreTier is) and
/// `holds`. The places that hold it, and a read-through store that does
/// not hold it yet (`holds` false: it fills itself from a farther tier on
/// the first pull) only when it is nearer than the farthest holder; none of
/// those when nobody holds it. In one tier, holders first, each kind in the
/// order it was answered.
template <class Place>
std::vector<Place> nearest(std::vector<Place> answered)
{
    std::vector<Place> out;
    const auto farthest = std::max_element(answered.begin(), answered.end(), [](const Place& a, const Place& b) {
        // Holders only: a filler never counts as the farthest holder.
        if (a.holds != b.holds) return !a.holds;
        return a.tier < b.tier;
    });
    if (farthest == answered.end() || !farthest->holds) return out;
    const auto limit = farthest->tier;
    for (Place& p : answered)
        if (p.holds || p.tier < limit) out.push_back(std::move(p));
    std::stable_sort(out.begin(), out.end(), [](const Place& a, const Place& b) {
        if (a.tier != b.tier) return a.tier < b.tier;
        return a.holds && !b.holds;
    });
    return out;
}

}  // namespace blobstreaming
