/// RadosStore's cleanup rounds (RadosStore::collect()) and the thread that
/// runs them: vouch for this store's open reservations, move those of
/// others nobody vouched for within the grace to the trash, delete what is
/// due there, refresh the usage. Every change to the index compares the
/// records it read, so that rounds of several daemons on one pool, and a
/// commit racing a round, never undo each other (docs/STORES.md,
/// "The RADOS tier").
#include "RadosStoreState.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

namespace blobstreaming {

using namespace detail::rados_index;
namespace rados = detail::rados;

namespace {

using Entries = std::vector<std::pair<std::string, std::string>>;

constexpr unsigned kPage = 1000;
/// Records one round looks at, per kind: the work of a round is bounded.
constexpr std::size_t kMaxScan = 20000;
/// Trash entries one round deletes the objects of.
constexpr std::size_t kMaxPurge = 32;
/// Deletions in flight at once.
constexpr std::size_t kRemoveWindow = 32;
/// Open reservations vouched for by one index write.
constexpr std::size_t kVouchBatch = 256;

std::optional<std::int64_t> parse_ms(const std::string& text)
{
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return v;
}

std::string seconds(std::int64_t ms) { return fmt::format("{:g} s", static_cast<double>(ms) / 1000.0); }

}  // namespace

std::chrono::milliseconds RadosStore::State::keeper_period() const noexcept
{
    using namespace std::chrono_literals;
    return std::clamp<std::chrono::milliseconds>(options.grace / 4, 10ms, 30s);
}

void RadosStore::State::start_keeper()
{
    keeper_ = std::thread([this] { keeper_loop(); });
}

void RadosStore::State::stop_keeper() noexcept
{
    {
        std::lock_guard lock(keeper_mutex_);
        keeper_stopping_ = true;
    }
    keeper_wake_.notify_all();
    if (keeper_.joinable()) keeper_.join();
}

void RadosStore::State::keeper_loop() noexcept
{
    std::unique_lock lock(keeper_mutex_);
    while (!keeper_wake_.wait_for(lock, keeper_period(), [this] { return keeper_stopping_; })) {
        lock.unlock();
        try {
            collect();
        } catch (const std::exception& e) {
            spdlog::warn("{}: cleanup round failed (next in {}): {}", store(), seconds(keeper_period().count()),
                         e.what());
        }
        lock.lock();
    }
}

RadosStore::Cleanup RadosStore::State::collect()
{
    Cleanup out;
    vouch();
    out.abandoned = abandon_stale();
    purge_trash(out);
    refresh_usage();
    return out;
}

void RadosStore::State::vouch()
{
    std::vector<std::string> ids;
    {
        std::lock_guard lock(mutex);
        for (const auto& entry : open) ids.push_back(entry.first);
    }
    // A reservation that closes meanwhile leaves a stray u: key, which a
    // later round removes (abandon_stale()).
    const std::string now = std::to_string(now_ms());
    for (std::size_t at = 0; at < ids.size(); at += kVouchBatch) {
        rados::WriteOp op;
        for (std::size_t i = at; i < std::min(ids.size(), at + kVouchBatch); ++i) op.set(touch_key(ids[i]), now);
        const int rc = op.operate(io(), kIndexObject);
        if (rc < 0) fail("cleanup: vouch for " + std::to_string(ids.size()) + " open reservation(s)", rc);
    }
}

std::size_t RadosStore::State::abandon_stale()
{
    const Entries reservations = scan(kReservationPrefix, kMaxScan, "cleanup: read the index");
    const Entries touches = scan(kTouchPrefix, kMaxScan, "cleanup: read the index");
    std::map<std::string, std::string> touched(touches.begin(), touches.end());
    std::set<std::string> mine;
    {
        std::lock_guard lock(mutex);
        for (const auto& entry : open) mine.insert(entry.first);
    }
    const std::int64_t now = now_ms();
    const std::int64_t grace = options.grace.count();
    std::size_t abandoned = 0;
    for (const auto& [id, raw] : reservations) {
        if (mine.count(id)) continue;
        std::string why;
        const auto record = decode_reservation(raw, why);
        const auto t = touched.find(id);
        const std::string seen = t == touched.end() ? std::string() : t->second;
        const auto last = t == touched.end() ? std::optional<std::int64_t>() : parse_ms(seen);
        const std::int64_t since = last ? *last : record ? record->created_ms : 0;
        if (now - since <= std::max(grace, record ? record->grace_ms : 0)) continue;
        rados::WriteOp op;
        op.expect(reservation_key(id), raw);
        op.expect(touch_key(id), seen);
        op.remove(reservation_key(id));
        op.remove(touch_key(id));
        // A record nobody can read: its size is unknown, so are its objects.
        const std::uint64_t chunks = record ? chunk_count(record->size, record->chunk) : 0;
        op.set(trash_key(id), encode(TrashRecord{record ? record->name : "unknown", chunks, now}));
        const int rc = op.operate(io(), kIndexObject);
        if (rc == -ECANCELED) continue;  // vouched for, committed or aborted meanwhile
        if (rc < 0) fail("cleanup: move an abandoned reservation to the trash", rc);
        ++abandoned;
        if (record)
            spdlog::info("{}: the reservation of {} ({} bytes, by {}) was abandoned: nobody vouched for it for {}; "
                         "its data objects go",
                         store(), quote_name(record->name), record->size, record->owner, seconds(now - since));
        else spdlog::warn("{}: removed the unreadable reservation record {} ({}): \"{}\"", store(), id, why, raw);
    }
    // Stray u: keys (vouched for just as the reservation closed).
    std::set<std::string> recorded;
    for (const auto& entry : reservations) recorded.insert(entry.first);
    for (const auto& [id, raw] : touches) {
        const auto last = parse_ms(raw);
        if (recorded.count(id) || mine.count(id) || (last && now - *last <= grace)) continue;
        rados::WriteOp op;
        op.expect(reservation_key(id), "");
        op.expect(touch_key(id), raw);
        op.remove(touch_key(id));
        const int rc = op.operate(io(), kIndexObject);
        if (rc < 0 && rc != -ECANCELED) fail("cleanup: remove a stray record", rc);
    }
    return abandoned;
}

void RadosStore::State::purge_trash(Cleanup& out)
{
    const std::int64_t now = now_ms();
    const Entries trash = scan(kTrashPrefix, kMaxScan, "cleanup: read the index");
    for (const auto& [id, raw] : trash) {
        if (out.purged == kMaxPurge) break;
        std::string why;
        const auto record = decode_trash(raw, why);
        if (record && record->deadline_ms > now) continue;
        const std::uint64_t chunks = record ? record->chunks : 0;
        bool failed = false;
        std::size_t deleted = 0;
        for (std::uint64_t at = 0; at < chunks && !failed; at += kRemoveWindow) {
            std::vector<rados::Completion> removals(
                static_cast<std::size_t>(std::min<std::uint64_t>(kRemoveWindow, chunks - at)));
            for (std::size_t i = 0; i < removals.size(); ++i) {
                rados_completion_t c = removals[i].arm();
                const int rc = c ? rados_aio_remove(io(), data_object(id, at + i).c_str(), c) : -ENOMEM;
                if (rc < 0) {
                    removals[i].reset();
                    failed = true;
                    spdlog::warn("{}: cannot delete {}: {}", store(), data_object(id, at + i), rados::errno_text(rc));
                }
            }
            for (std::size_t i = 0; i < removals.size(); ++i) {
                if (!removals[i].armed()) continue;
                const int rc = removals[i].wait();
                if (rc == 0) ++deleted;
                if (rc < 0 && rc != -ENOENT) {
                    failed = true;
                    spdlog::warn("{}: cannot delete {}: {}", store(), data_object(id, at + i), rados::errno_text(rc));
                }
            }
        }
        // A reservation kept for a resume has a journal object too.
        if (!failed) {
            rados::Completion removal;
            rados_completion_t c = removal.arm();
            int rc = c ? rados_aio_remove(io(), resume_object(id).c_str(), c) : -ENOMEM;
            if (rc == 0) rc = removal.wait();
            else removal.reset();
            if (rc < 0 && rc != -ENOENT) {
                failed = true;
                spdlog::warn("{}: cannot delete {}: {}", store(), resume_object(id), rados::errno_text(rc));
            }
        }
        out.objects += deleted;
        if (failed) continue;  // the entry stays: the next round tries again
        rados::WriteOp op;
        op.expect(trash_key(id), raw);
        op.remove(trash_key(id));
        const int rc = op.operate(io(), kIndexObject);
        if (rc < 0 && rc != -ECANCELED) fail("cleanup: remove a trash entry", rc);
        ++out.purged;
        spdlog::debug("{}: deleted {} data object(s) of {} ({})", store(), deleted,
                      record ? quote_name(record->name) : "an unreadable trash entry", id);
    }
}

void RadosStore::State::refresh_usage()
{
    std::uint64_t total = 0, count = 0;
    std::string after;
    for (bool more = true; more;) {
        Entries page;
        const int rc = rados::omap_scan(io(), kIndexObject, kBlobPrefix, after, kPage, page, more);
        if (rc < 0) fail("usage: read the index", rc);
        if (page.empty()) break;
        after = page.back().first;
        for (const auto& [key, value] : page) {
            std::string why;
            const auto record = decode_blob(std::string_view(key).substr(std::strlen(kBlobPrefix)), value, why);
            if (!record) continue;
            total += record->info.size;
            ++count;
        }
    }
    // Room in the pool: its quota, else what `ceph df` says it can take.
    using nlohmann::json;
    std::optional<std::uint64_t> room;
    std::uint64_t quota_bytes = 0;
    std::string answer, status;
    const std::string quota_command =
        json{{"prefix", "osd pool get-quota"}, {"pool", pool.name()}, {"format", "json"}}.dump();
    if (pool.mon_command(quota_command, answer, status) == 0) {
        const json j = json::parse(answer, nullptr, false);
        if (j.is_object()) {
            quota_bytes = j.value("quota_max_bytes", std::uint64_t{0});
            const auto current = j.value("current_num_bytes", std::uint64_t{0});
            if (quota_bytes > 0) room = quota_bytes - std::min(quota_bytes, current);
        }
    }
    if (quota_bytes == 0 && pool.mon_command(json{{"prefix", "df"}, {"format", "json"}}.dump(), answer, status) == 0) {
        const json j = json::parse(answer, nullptr, false);
        if (j.is_object() && j.contains("pools") && j["pools"].is_array())
            for (const auto& p : j["pools"])
                if (p.is_object() && p.value("name", std::string()) == pool.name() && p.contains("stats"))
                    room = p["stats"].value("max_avail", std::uint64_t{0});
    }
    std::lock_guard lock(mutex);
    used = total;
    blob_count = count;
    pool_room = room;
    quota = quota_bytes;
}

}  // namespace blobstreaming
