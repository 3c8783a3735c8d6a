#include "TicketRegistry.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <algorithm>

namespace blobstreaming::server {
namespace {

const char* direction_name(protocol::FrameType type) { return type == protocol::FrameType::push ? "push" : "pull"; }

std::string range_text(std::uint64_t offset, std::uint64_t length)
{
    const std::string end =
        length > ~std::uint64_t{0} - offset ? std::string("beyond 2^64") : std::to_string(offset + length);
    return "[" + std::to_string(offset) + ", " + end + ")";
}

}  // namespace

TicketRegistry::TicketRegistry(std::chrono::milliseconds lifetime, Clock clock)
    : lifetime_(lifetime), clock_(std::move(clock))
{}

std::chrono::steady_clock::time_point TicketRegistry::now() const
{
    return clock_ ? clock_() : std::chrono::steady_clock::now();
}

std::chrono::milliseconds TicketRegistry::retention() const noexcept
{
    return std::max(2 * lifetime_, std::chrono::milliseconds(60000));
}

protocol::TicketId TicketRegistry::issue(TicketBinding binding)
{
    if (!binding.control) binding.control = std::make_shared<TransferControl>();
    const auto t = now();
    std::lock_guard<std::mutex> lock(mutex_);
    purge_locked(t);
    protocol::TicketId id = protocol::random_ticket();
    while (entries_.count(id) != 0) id = protocol::random_ticket();  // 2^-128: never loops in practice
    Entry entry;
    entry.binding = std::move(binding);
    entry.issued = t;
    entry.forget_at = t + lifetime_ + retention();
    expiring_.emplace(t + lifetime_, id);
    forget_.emplace(entry.forget_at, id);
    entries_.emplace(id, std::move(entry));
    return id;
}

void TicketRegistry::close_locked(const protocol::TicketId& id, Entry& entry, State state, TimePoint t)
{
    expiring_.erase({entry.issued + lifetime_, id});
    forget_.erase({entry.forget_at, id});
    entry.state = state;
    entry.closed = t;
    entry.forget_at = t + retention();
    forget_.emplace(entry.forget_at, id);
}

void TicketRegistry::require_usable(const std::string& tag, const Entry& entry, TimePoint t) const
{
    switch (entry.state) {
    case State::used: throw Error(Errc::refused, "ticket " + tag + " was already used");
    case State::withdrawn: throw Error(Errc::refused, "ticket " + tag + " was withdrawn");
    case State::issued: break;
    }
    const auto expiry = entry.issued + lifetime_;
    if (t >= expiry) {
        const auto late = std::chrono::duration_cast<std::chrono::milliseconds>(t - expiry).count();
        throw Error(Errc::refused, "ticket " + tag + " expired " + std::to_string(late) + " ms ago");
    }
}

TicketBinding TicketRegistry::inspect(const protocol::TicketId& ticket) const
{
    const std::string tag = protocol::ticket_tag(ticket);
    const auto t = now();
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = entries_.find(ticket);
    if (it == entries_.end()) throw Error(Errc::refused, "unknown ticket " + tag);
    require_usable(tag, it->second, t);
    return it->second.binding;
}

TicketBinding TicketRegistry::consume(const protocol::Request& request) { return consume(request, false); }

TicketBinding TicketRegistry::consume_named(const protocol::Request& request) { return consume(request, true); }

TicketBinding TicketRegistry::consume(const protocol::Request& request, bool forget)
{
    const std::string tag = protocol::ticket_tag(request.ticket);
    const auto t = now();
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(request.ticket);
    if (it == entries_.end()) throw Error(Errc::refused, "unknown ticket " + tag);
    Entry& entry = it->second;
    require_usable(tag, entry, t);
    close_locked(request.ticket, entry, State::used, t);
    const TicketBinding& b = entry.binding;
    if (b.streamed != request.streamed)
        throw Error(Errc::refused, "ticket " + tag + " is bound to a push of " + quote_name(b.blob) +
                                       (b.streamed ? " of unknown length, whose Request must be streamed"
                                                   : " of a known length, whose Request must not be streamed"));
    if (b.direction != request.type || b.offset != request.offset || b.length != request.length) {
        throw Error(Errc::refused, "ticket " + tag + " is bound to a " + direction_name(b.direction) + " of " +
                                       quote_name(b.blob) + " " + range_text(b.offset, b.length) + ", not a " +
                                       direction_name(request.type) + " of " +
                                       range_text(request.offset, request.length));
    }
    TicketBinding out = std::move(entry.binding);
    if (forget) {
        forget_.erase({entry.forget_at, request.ticket});
        entries_.erase(it);
        return out;
    }
    entry.binding = TicketBinding{};
    entry.binding.direction = out.direction;
    return out;
}

bool TicketRegistry::withdraw(const protocol::TicketId& ticket)
{
    const auto t = now();
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(ticket);
    if (it == entries_.end() || it->second.state != State::issued || t >= it->second.issued + lifetime_) return false;
    close_locked(ticket, it->second, State::withdrawn, t);
    it->second.binding.control.reset();
    return true;
}

std::size_t TicketRegistry::purge()
{
    const auto t = now();
    std::lock_guard<std::mutex> lock(mutex_);
    return purge_locked(t);
}

std::size_t TicketRegistry::purge_locked(std::chrono::steady_clock::time_point t)
{
    // Unused and expired: the transfer's control goes (the entry stays).
    while (!expiring_.empty() && expiring_.begin()->first <= t) {
        auto it = entries_.find(expiring_.begin()->second);
        if (it != entries_.end()) it->second.binding.control.reset();
        expiring_.erase(expiring_.begin());
    }
    std::size_t dropped = 0;
    while (!forget_.empty() && forget_.begin()->first <= t) {
        dropped += entries_.erase(forget_.begin()->second);
        forget_.erase(forget_.begin());
    }
    return dropped;
}

std::size_t TicketRegistry::pending() const
{
    const auto t = now();
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<std::size_t>(std::count_if(entries_.begin(), entries_.end(), [&](const auto& kv) {
        return kv.second.state == State::issued && t < kv.second.issued + lifetime_;
    }));
}

std::size_t TicketRegistry::remembered() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
}

}  // namespace blobstreaming::server
