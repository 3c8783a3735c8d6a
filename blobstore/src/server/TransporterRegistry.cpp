#include "TransporterRegistry.h"

#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <sstream>
#include <vector>

namespace blobstreaming::server {
namespace {

TransporterActivity::ClockFn or_steady(TransporterActivity::ClockFn clock)
{
    if (clock) return clock;
    return [] { return std::chrono::steady_clock::now(); };
}

std::string seconds_text(std::chrono::milliseconds ms)
{
    std::ostringstream out;
    out << static_cast<double>(ms.count()) / 1000.0 << " s";
    return out.str();
}

}  // namespace

TransporterActivity::TransporterActivity(std::string client, ClockFn clock)
    : client_(std::move(client)), clock_(or_steady(std::move(clock))), last_use_(clock_())
{}

void TransporterActivity::touch() noexcept
{
    const auto now = clock_();
    std::lock_guard<std::mutex> lock(mutex_);
    last_use_ = now;
}

void TransporterActivity::track(const std::shared_ptr<TransferControl>& control)
{
    const auto now = clock_();
    std::lock_guard<std::mutex> lock(mutex_);
    last_use_ = now;
    // Forget transfers whose controls are gone, so that a transporter used
    // for many transfers keeps a short list.
    for (auto it = running_.begin(); it != running_.end();)
        it = it->second.expired() ? running_.erase(it) : std::next(it);
    running_[control.get()] = control;
}

void TransporterActivity::ended(const TransferControl* control) noexcept
{
    const auto now = clock_();
    std::lock_guard<std::mutex> lock(mutex_);
    running_.erase(control);
    last_use_ = now;
}

bool TransporterActivity::idle(std::chrono::milliseconds lifetime)
{
    const auto now = clock_();
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = running_.begin(); it != running_.end();)
        it = it->second.expired() ? running_.erase(it) : std::next(it);
    return running_.empty() && now - last_use_ >= lifetime;
}

TransporterActivity::Clock::time_point TransporterActivity::last_use()
{
    std::lock_guard<std::mutex> lock(mutex_);
    return last_use_;
}

TransporterRegistry::TransporterRegistry(TransporterLimits limits, TransporterActivity::ClockFn clock)
    : clock_(or_steady(std::move(clock))), limits_(limits)
{}

TransporterLimits TransporterRegistry::limits() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return limits_;
}

void TransporterRegistry::set_limits(TransporterLimits limits)
{
    std::lock_guard<std::mutex> lock(mutex_);
    limits_ = limits;
}

std::shared_ptr<TransporterActivity> TransporterRegistry::admit(const std::string& client)
{
    const std::string who = client.empty() ? std::string("(unidentified)") : client;
    auto activity = std::make_shared<TransporterActivity>(client, clock_);
    Entry evicted;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const std::string reclaimed =
            "; transporters left idle are reclaimed after " + seconds_text(limits_.idle) + " (--transporter-idle)";
        std::size_t& mine = per_client_[client];
        if (mine >= limits_.per_client) {
            ++refused_;
            if (mine == 0) per_client_.erase(client);
            throw Error(Errc::limit_reached, "openTransporter: client " + who + " has reached its limit of open " +
                                                 "transporters (" + std::to_string(limits_.per_client) +
                                                 ", --max-client-transporters): close() the ones it no longer uses" +
                                                 reclaimed);
        }
        if (entries_.size() >= limits_.total) {
            evicted = evict_for_locked(client, mine);
            if (!evicted.activity) {
                ++refused_;
                if (mine == 0) per_client_.erase(client);
                throw Error(Errc::limit_reached,
                            "openTransporter: the store has reached its limit of open transporters (" +
                                std::to_string(limits_.total) +
                                " in all, --max-transporters) and every client holding more than " + who +
                                " is using its transporters: try again later" + reclaimed);
            }
        }
        entries_.emplace(activity.get(), Entry{activity, {}});
        ++mine;
    }
    if (evicted.activity) {
        spdlog::debug("open transporters at the limit: reclaimed the least recently used idle one of client {} for "
                      "client {}",
                      evicted.activity->client(), who);
        run_reclaim(evicted);
    }
    return activity;
}

TransporterRegistry::Entry TransporterRegistry::evict_for_locked(const std::string& client, std::size_t mine)
{
    // The victim's client keeps at least as many as the newcomer will hold,
    // so that two clients at the cap converge on equal shares instead of
    // taking transporters back and forth.
    auto best = entries_.end();
    std::size_t best_count = 0;
    TransporterActivity::Clock::time_point best_use{};
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        const auto& owner = it->second.activity->client();
        if (owner == client) continue;
        const std::size_t count = per_client_[owner];
        if (count <= mine + 1 || count < best_count) continue;
        if (!it->second.activity->idle(limits_.pressure_idle)) continue;
        const auto use = it->second.activity->last_use();
        if (best == entries_.end() || count > best_count || use < best_use) {
            best = it;
            best_count = count;
            best_use = use;
        }
    }
    if (best == entries_.end()) return {};
    Entry out{best->second.activity, std::move(best->second.reclaim)};
    forget_locked(best);
    ++evicted_;
    return out;
}

void TransporterRegistry::run_reclaim(Entry& entry) noexcept
{
    try {
        if (entry.reclaim) entry.reclaim();
    } catch (const std::exception& e) {
        spdlog::warn("cannot reclaim an idle transporter of client {}: {}", entry.activity->client(), e.what());
    } catch (...) {
        spdlog::warn("cannot reclaim an idle transporter of client {}", entry.activity->client());
    }
}

void TransporterRegistry::on_reclaim(const std::shared_ptr<TransporterActivity>& activity, Reclaim reclaim)
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(activity.get());
    if (it != entries_.end()) it->second.reclaim = std::move(reclaim);
}

void TransporterRegistry::forget_locked(Entries::iterator it)
{
    auto count = per_client_.find(it->second.activity->client());
    if (count != per_client_.end() && --count->second == 0) per_client_.erase(count);
    entries_.erase(it);
}

void TransporterRegistry::release(const TransporterActivity* activity) noexcept
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(activity);
    if (it != entries_.end()) forget_locked(it);
}

TransporterRegistry::Sweep TransporterRegistry::sweep() noexcept
{
    Sweep out;
    std::vector<Entry> idle;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        try {
            idle.reserve(entries_.size());
        } catch (...) {
            return out;  // out of memory: the next sweep tries again
        }
        for (auto it = entries_.begin(); it != entries_.end();) {
            if (!it->second.activity->idle(limits_.idle)) {
                ++it;
                continue;
            }
            idle.push_back(Entry{it->second.activity, std::move(it->second.reclaim)});  // capacity reserved
            forget_locked(it++);
        }
        out.open = entries_.size();
        out.clients = per_client_.size();
        out.refused = refused_;
        out.evicted = evicted_;
        refused_ = 0;
        evicted_ = 0;
    }
    for (auto& entry : idle) run_reclaim(entry);
    out.reclaimed = idle.size();
    return out;
}

std::size_t TransporterRegistry::open() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
}

}  // namespace blobstreaming::server
