/// Adopting the reservations a RadosStore kept for a resume across a restart
/// (RadosReservation.h, adopt_kept()): each journal object is read, the bytes
/// of its ranges are reread from the data objects and checked, and the
/// prefix that matches is handed back, its index record this store's now.
#include "RadosReservation.h"

#include "RadosReader.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>

#include <unistd.h>

namespace blobstreaming::detail {

using namespace rados_index;

namespace {

/// Index records looked at for kept reservations at open.
constexpr std::size_t kMaxScan = 20000;
/// A journal holds a header and a range per data object written (and one
/// per break of the push): a larger object is not one.
constexpr std::uint64_t kMaxJournal = std::uint64_t{16} << 20;

std::string text_of_link(const std::string& path)
{
    char target[4096];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    return n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string();
}

/// The host and PID of a store instance "HOST:PID:RANDOM"; false when it is
/// not one.
bool host_and_pid(const std::string& instance, std::string& host, pid_t& pid)
{
    const auto last = instance.rfind(':');
    if (last == std::string::npos || last == 0) return false;
    const auto second = instance.rfind(':', last - 1);
    if (second == std::string::npos) return false;
    const char* end = instance.data() + last;
    const auto [at, ec] = std::from_chars(instance.data() + second + 1, end, pid);
    if (ec != std::errc() || at != end || pid <= 0) return false;
    host = instance.substr(0, second);
    return true;
}

/// Whether the store instance `owner` is gone: a store of this host (that
/// of instance `self`) whose process no longer runs, or whose PID now runs
/// another program or is this process's own (a container restarted). An
/// instance of another host is not known to be gone: its reservations are
/// left to that host's daemon, or to the cleanup after their grace.
bool instance_gone(const std::string& owner, const std::string& self)
{
    if (RadosStore::State::open_here(owner)) return false;
    std::string host, self_host;
    pid_t pid = 0, self_pid = 0;
    if (!host_and_pid(owner, host, pid) || !host_and_pid(self, self_host, self_pid) || host != self_host) return false;
    if (pid == self_pid) return true;  // an earlier process with this PID
    if (::kill(pid, 0) != 0) return errno == ESRCH;
    const std::string program = text_of_link("/proc/" + std::to_string(pid) + "/exe");
    const std::string mine = text_of_link("/proc/self/exe");
    return !program.empty() && !mine.empty() && program != mine;
}

/// The whole of object `oid` and its modification time; 0 or -errno.
int read_object(rados_ioctx_t io, const std::string& oid, std::string& out, std::time_t& mtime)
{
    std::uint64_t size = 0;
    int rc = rados_stat(io, oid.c_str(), &size, &mtime);
    if (rc < 0) return rc;
    if (size > kMaxJournal) return -EFBIG;
    out.resize(static_cast<std::size_t>(size));
    if (size == 0) return 0;
    rc = rados_read(io, oid.c_str(), out.data(), out.size(), 0);
    if (rc < 0) return rc;
    out.resize(static_cast<std::size_t>(rc));
    return 0;
}

/// Adopts one kept reservation; nullopt when it is not this store's to
/// adopt after all, or was dropped (logged).
class Adoption {
public:
    Adoption(const std::shared_ptr<RadosStore::State>& state, std::string id, std::string raw, ReservationRecord record)
        : state_(state), id_(std::move(id)), raw_(std::move(raw)), record_(std::move(record)),
          journal_(resume_object(id_))
    {}

    std::optional<Store::Kept> run()
    {
        std::string bytes;
        std::time_t mtime = 0;
        if (const int rc = read_object(state_->io(), journal_, bytes, mtime); rc < 0) {
            drop(rc == -ENOENT ? "its journal " + journal_ + " is missing"
                 : rc == -EFBIG
                     ? "its journal " + journal_ + " is larger than " + std::to_string(kMaxJournal) + " bytes"
                     : "cannot read its journal " + journal_ + ": " + rados::errno_text(rc));
            return std::nullopt;
        }
        std::string why;
        auto j = parse_resume_journal(bytes, why);
        if (!j) {
            drop("its journal " + journal_ + " cannot be read: " + why);
            return std::nullopt;
        }
        const ResumeHeader& h = j->header;
        if (h.name != record_.name || h.size != record_.size || h.owner != record_.client) {
            drop("its journal " + journal_ + " is of another push (" + quote_name(h.name) + ", " +
                 std::to_string(h.size) + " bytes, by " + h.owner + ")");
            return std::nullopt;
        }
        // Every journaled range is reread and checked; the Blob's checksum
        // state is computed over the bytes of those that match, so that the
        // commit's end-to-end check covers the bytes as they are in RADOS.
        ChecksumState checksum(h.checksum);
        std::size_t good = 0;
        const std::string mismatch = reread(*j, checksum, good);
        const std::uint64_t received = good == 0 ? 0 : j->ranges[good - 1].end;
        if (received == 0) {
            drop(!mismatch.empty() ? mismatch : !j->stopped.empty() ? j->stopped : "its journal holds no range");
            return std::nullopt;
        }
        {
            std::lock_guard lock(state_->mutex);
            if (state_->reserving.count(h.name)) {
                drop("another kept reservation of blob " + quote_name(h.name) + " was adopted first");
                return std::nullopt;
            }
        }
        if (!mismatch.empty() || !j->stopped.empty()) {
            // Later ranges follow the last good one: the journal keeps only
            // those that matched (one write replaces the object whole).
            std::string rewritten = encode_resume_header(h);
            for (std::size_t i = 0; i < good; ++i) rewritten += encode_resume_range(j->ranges[i]);
            const int rc = rados_write_full(state_->io(), journal_.c_str(), rewritten.data(), rewritten.size());
            if (rc < 0) {
                drop("cannot rewrite its journal " + journal_ + ": " + rados::errno_text(rc));
                return std::nullopt;
            }
            spdlog::warn("{}: push of {}: {}; it resumes at byte {}", state_->store(), quote_name(h.name),
                         mismatch.empty() ? j->stopped : mismatch, received);
        }
        // This store vouches for it from now on; compared, so that of two
        // stores adopting at once one does.
        ReservationRecord mine = record_;
        mine.owner = state_->instance;
        mine.grace_ms = state_->options.grace.count();
        const std::string value = encode(mine);
        rados::WriteOp op;
        op.expect(reservation_key(id_), raw_);
        op.set(reservation_key(id_), value);
        op.set(touch_key(id_), std::to_string(now_ms()));
        if (const int rc = op.operate(state_->io(), kIndexObject); rc < 0) {
            if (rc != -ECANCELED)
                spdlog::warn("{}: cannot adopt the push of {} kept for a resume (reservation {}): {}", state_->store(),
                             quote_name(h.name), id_, rados::errno_text(rc));
            return std::nullopt;
        }
        {
            std::lock_guard lock(state_->mutex);
            state_->reserving.emplace(h.name);
            state_->open.emplace(id_, RadosStore::State::Open{h.name, h.size});
            state_->reserved += h.size;
        }
        const std::time_t now = std::time(nullptr);
        const std::chrono::seconds idle(now > mtime ? now - mtime : 0);
        spdlog::info("{}: push of {} by {} kept for a resume: {} of {} bytes checked, {} s since its last byte",
                     state_->store(), quote_name(h.name), h.owner, received, h.size, idle.count());
        return Store::Kept{
            make_kept_rados_reservation(state_, h, id_, value, record_.chunk, received, std::move(checksum)), idle};
    }

private:
    /// Rereads the journaled ranges in order through a reader of the data
    /// objects; `good` of them match. Why the next one does not ("" when
    /// all do).
    std::string reread(const ResumeJournal& j, ChecksumState& checksum, std::size_t& good)
    {
        if (j.ranges.empty()) return {};
        BlobRecord version;
        version.info.name = record_.name;
        version.info.size = record_.size;
        version.data = id_;
        version.chunk = record_.chunk;
        auto reader = make_rados_reader(state_, version, 0, j.received());
        std::unique_ptr<std::uint8_t[]> buffer(new std::uint8_t[record_.chunk]);
        for (const ResumeRange& r : j.ranges) {
            const std::string range = "bytes [" + std::to_string(r.start) + ", " + std::to_string(r.end) + ")";
            if (r.start / record_.chunk != (r.end - 1) / record_.chunk) return range + " span two data objects";
            const auto n = static_cast<std::size_t>(r.end - r.start);
            for (std::size_t done = 0; done < n;) {
                std::error_code ec;
                const std::size_t got = reader->read(r.start + done, buffer.get() + done, n - done, ec);
                if (ec || got == 0) return "cannot reread " + range + ": " + reader->error_message();
                done += got;
            }
            if (crc32c(buffer.get(), n) != r.crc) return range + " no longer match their CRC32C in the journal";
            checksum.update(buffer.get(), n);
            ++good;
        }
        return {};
    }

    /// To the trash with its data objects and journal (compared: only the
    /// record read).
    void drop(const std::string& why)
    {
        spdlog::warn("{}: removed the push of {} kept for a resume (reservation {}): {}", state_->store(),
                     quote_name(record_.name), id_, why);
        rados::WriteOp op;
        op.require(reservation_key(id_), raw_);
        op.remove(reservation_key(id_));
        op.remove(touch_key(id_));
        op.set(trash_key(id_), encode(TrashRecord{record_.name, chunk_count(record_.size, record_.chunk), now_ms()}));
        const int rc = op.operate(state_->io(), kIndexObject);
        if (rc < 0 && rc != -ECANCELED)
            spdlog::warn("{}: cannot move reservation {} to the trash: {} (the cleanup takes it after its grace)",
                         state_->store(), id_, rados::errno_text(rc));
    }

    const std::shared_ptr<RadosStore::State>& state_;
    std::string id_;
    std::string raw_;
    ReservationRecord record_;
    std::string journal_;
};

}  // namespace

std::vector<Store::Kept> adopt_kept(const std::shared_ptr<RadosStore::State>& state)
{
    std::vector<Store::Kept> kept;
    for (auto& [id, raw] : state->scan(kReservationPrefix, kMaxScan, "open: read the index")) {
        std::string why;
        auto record = decode_reservation(raw, why);
        if (!record || record->client.empty() || record->chunk == 0 || !instance_gone(record->owner, state->instance))
            continue;
        auto adopted = Adoption(state, id, raw, std::move(*record)).run();
        if (adopted) kept.push_back(std::move(*adopted));
    }
    return kept;
}

}  // namespace blobstreaming::detail
