#pragma once
/// Admission control of the data port (docs/PROTOCOL.md, "Connections"): how
/// many data connections may be open, and how many of them may not have
/// presented a valid ticket yet ("unauthenticated"), in all and per peer
/// address. A connection costs a descriptor before it has proved anything;
/// without these caps idle connections from anyone exhaust the daemon's
/// descriptors and shut out the control plane too.

#include <cstddef>
#include <list>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace blobstreaming::server {

struct ConnectionCaps {
    std::size_t connections = 1024;             ///< open data connections, authenticated or not
    std::size_t unauthenticated = 1024;         ///< connections without a valid ticket yet
    std::size_t unauthenticated_per_peer = 64;  ///< the same, from one peer IP address
};

/// The bookkeeping of the caps for connections of type `Connection` (the
/// data server's ServerConnection; a test's stand-in), identified by pointer
/// and never dereferenced. Not thread-safe: the reactor thread owns it.
///
/// A new connection is assessed before it is added. Above the per-peer cap
/// it is refused (the peer is the one flooding). Above the unauthenticated
/// or the connection cap, the OLDEST unauthenticated connection is evicted
/// to make room when there is one: an attacker who fills the cap from many
/// addresses then only pushes out his own older connections, while a real
/// client, which presents its ticket within a round trip of connecting,
/// gets in. With nothing to evict the newcomer is refused.
template <class Connection>
class ConnectionLimits {
public:
    enum class Verdict {
        admit,
        admit_after_eviction,  ///< close oldest_unauthenticated() first, then admit
        refuse_peer_cap,       ///< the peer holds unauthenticated_per_peer already
        refuse_full,           ///< every connection slot is taken by an authenticated connection
    };

    explicit ConnectionLimits(ConnectionCaps caps) : caps_(caps) {}

    const ConnectionCaps& caps() const noexcept { return caps_; }

    /// What to do with a new connection from `peer` (an IP address).
    Verdict assess(const std::string& peer) const
    {
        if (unauthenticated_from(peer) >= caps_.unauthenticated_per_peer) return Verdict::refuse_peer_cap;
        if (open_.size() < caps_.connections && fifo_.size() < caps_.unauthenticated) return Verdict::admit;
        return fifo_.empty() ? Verdict::refuse_full : Verdict::admit_after_eviction;
    }

    /// The unauthenticated connection that has waited longest (null: none).
    Connection* oldest_unauthenticated() const { return fifo_.empty() ? nullptr : fifo_.front().first; }

    /// Counts `c` from `peer` as open and unauthenticated. Adding a
    /// connection twice is a no-op.
    void add(Connection* c, const std::string& peer)
    {
        if (!open_.insert(c).second) return;
        fifo_.emplace_back(c, peer);
        where_.emplace(c, std::prev(fifo_.end()));
        ++per_peer_[peer];
    }

    /// `c` presented a valid ticket: it no longer counts as unauthenticated.
    void authenticated(Connection* c) { forget_unauthenticated(c); }

    /// `c` is closed, whatever its state (unknown connections are ignored).
    void remove(Connection* c)
    {
        forget_unauthenticated(c);
        open_.erase(c);
    }

    std::size_t connections() const noexcept { return open_.size(); }
    std::size_t unauthenticated() const noexcept { return fifo_.size(); }
    std::size_t unauthenticated_from(const std::string& peer) const
    {
        const auto it = per_peer_.find(peer);
        return it == per_peer_.end() ? 0 : it->second;
    }

private:
    using Fifo = std::list<std::pair<Connection*, std::string>>;

    void forget_unauthenticated(Connection* c)
    {
        const auto it = where_.find(c);
        if (it == where_.end()) return;
        const auto peer = per_peer_.find(it->second->second);
        if (peer != per_peer_.end() && --peer->second == 0) per_peer_.erase(peer);
        fifo_.erase(it->second);
        where_.erase(it);
    }

    ConnectionCaps caps_;
    std::unordered_set<Connection*> open_;
    Fifo fifo_;  ///< unauthenticated connections, oldest first
    std::unordered_map<Connection*, typename Fifo::iterator> where_;
    std::unordered_map<std::string, std::size_t> per_peer_;  ///< unauthenticated connections per peer
};

}  // namespace blobstreaming::server
