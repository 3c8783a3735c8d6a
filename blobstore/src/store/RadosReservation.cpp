/// RadosReservation (RadosReservation.h): the push's bytes into data
/// objects through two buffers, the commit's compound write, the abort; a
/// kept one's journal (RadosJournal.h).
#include "RadosReservation.h"

#include "RadosJournal.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <new>

namespace blobstreaming::detail {
namespace {

using namespace rados_index;

/// Buffers a reservation fills in turn, each up to one chunk: RADOS writes
/// one while the next fills, so the thread that fills them (a daemon's
/// reactor) waits for the cluster only when both are in flight. Two
/// chunks of memory per reservation being filled, whatever the Blob size.
constexpr std::size_t kSlots = 2;

/// A replacing commit whose index entry another daemon changed between
/// reading and writing it reads it again, this often.
constexpr int kCommitAttempts = 16;

class RadosReservation final : public Reservation {
public:
    RadosReservation(std::shared_ptr<RadosStore::State> state, std::string name, std::uint64_t size, ReserveMode mode,
                     ChecksumAlgorithm checksum, std::string id, std::string record, std::uint32_t chunk)
        : Reservation(std::move(name), size, checksum), state_(std::move(state)), mode_(mode), id_(std::move(id)),
          record_(std::move(record)), chunk_(chunk)
    {
        slots_[current_].limit = 0;  // "full": the first window() takes slot 0
    }
    /// A kept reservation adopted after a restart (make_kept_rados_reservation()).
    RadosReservation(std::shared_ptr<RadosStore::State> state, const ResumeHeader& kept, std::string id,
                     std::string record, std::uint32_t chunk, std::uint64_t written, ChecksumState checksum)
        : RadosReservation(std::move(state), kept.name, kept.size, kept.mode, kept.checksum, std::move(id),
                           std::move(record), chunk)
    {
        restore(written, std::move(checksum), kept.owner);
        journal_ = std::make_shared<RadosJournal>(state_->io(), state_->store(), id_, kept, record_, written);
        adopted_ = true;
    }
    ~RadosReservation() override { abort(); }

private:
    struct Slot {
        std::unique_ptr<std::uint8_t[]> bytes;
        std::uint64_t start = 0;  ///< Blob offset of bytes[0]
        std::size_t fill = 0;     ///< bytes advanced over
        std::size_t limit = 0;    ///< bytes it takes: to the end of its chunk or of the Blob; fill once written
        std::uint32_t crc = 0;    ///< kept for a resume: CRC32C of its `fill` bytes (the journal's range)
        /// Its write while in flight; declared after `bytes`, so that it is
        /// waited for before they go.
        rados::Completion write;
    };

    std::size_t buffer_size() const { return static_cast<std::size_t>(std::min<std::uint64_t>(chunk_, size())); }

    Window do_window(std::uint64_t offset, std::size_t max, std::error_code& ec) override
    {
        if (!broken_) check_writes();
        if (broken_) {
            ec = broken_;
            return {};
        }
        if (slots_[current_].fill == slots_[current_].limit) {
            current_ = (current_ + 1) % kSlots;
            Slot& next = slots_[current_];
            if (finish_write(next)) {  // the one wait for the cluster: both buffers in flight
                ec = broken_;
                return {};
            }
            wait_hashed(next.start + next.fill);
            if (!next.bytes) next.bytes.reset(new (std::nothrow) std::uint8_t[buffer_size()]);
            if (!next.bytes) {
                ec = broken_ =
                    fail(Errc::out_of_space, "push " + quote_name(name()) + ": cannot allocate a buffer of " +
                                                 std::to_string(buffer_size()) + " bytes");
                return {};
            }
            next.start = offset;
            next.fill = 0;
            next.crc = 0;
            next.limit = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_ - offset % chunk_, size() - offset));
        }
        Slot& s = slots_[current_];
        return {s.bytes.get() + s.fill, std::min(max, s.limit - s.fill)};
    }

    /// The current buffer is full and the other one's write is still in
    /// flight: do_window() would wait for it.
    bool do_window_waits() const noexcept override
    {
        if (broken_ || slots_[current_].fill < slots_[current_].limit) return false;
        const Slot& next = slots_[(current_ + 1) % kSlots];
        return next.write.armed() && !next.write.ready();
    }

    void do_wait_window() noexcept override
    {
        if (do_window_waits()) finish_write(slots_[(current_ + 1) % kSlots]);
    }

    /// An abort writes the index; a suspend waits for the writes in flight.
    bool do_ending_waits() const noexcept override { return true; }

    std::error_code do_advance(const std::uint8_t* data, std::size_t n, std::uint64_t) override
    {
        Slot& s = slots_[current_];
        if (!resume_owner().empty()) s.crc = crc32c(data, n, s.crc);
        s.fill += n;
        if (s.fill == s.limit) submit(s);
        return broken_;
    }

    /// Starts writing what `s` holds to its chunk's object; a kept
    /// reservation journals the range once the write completes.
    void submit(Slot& s) noexcept
    {
        s.limit = s.fill;
        const std::string oid = data_object(id_, s.start / chunk_);
        std::unique_ptr<RadosJournal::Written> journaled;
        if (RadosJournal* journal = journal_for_resume())
            journaled = journal->expect({s.start, s.start + s.fill, s.crc});
        rados_completion_t c = s.write.arm(journaled ? &RadosJournal::written : nullptr, journaled.get());
        const int rc = c ? rados_aio_write(state_->io(), oid.c_str(), c, reinterpret_cast<const char*>(s.bytes.get()),
                                           s.fill, s.start % chunk_)
                         : -ENOMEM;
        if (rc < 0) {
            s.write.reset();
            if (journal_) journal_->cancel(std::move(journaled));
            write_failed(s, rc);
            return;
        }
        (void)journaled.release();  // the callback's now
    }

    /// The journal of a reservation kept for a resume (keep_for_resume()),
    /// made with its first write; nullptr when not kept.
    RadosJournal* journal_for_resume() noexcept
    {
        if (!journal_ && !resume_owner().empty()) {
            try {
                journal_ = std::make_shared<RadosJournal>(
                    state_->io(), state_->store(), id_,
                    ResumeHeader{name(), size(), checksum_algorithm(), mode_, resume_owner()}, record_, 0);
            } catch (const std::exception& e) {
                spdlog::warn("{}: push {} is not journaled for a resume across a restart: {}", state_->store(),
                             quote_name(name()), e.what());
            }
        }
        return journal_.get();
    }

    /// Waits for the write of `s`; true when it failed (broken_ set).
    bool finish_write(Slot& s) noexcept
    {
        if (!s.write.armed()) return false;
        const int rc = s.write.wait();
        if (rc < 0) write_failed(s, rc);
        return rc < 0;
    }

    /// Collects the writes that have completed, without waiting.
    void check_writes() noexcept
    {
        for (Slot& s : slots_)
            if (s.write.armed() && s.write.ready() && finish_write(s)) return;
    }

    void write_failed(const Slot& s, int rc) noexcept
    {
        if (broken_) return;  // the first failure says it
        const Errc code = RadosStore::State::errc_of(rc);
        const std::string what = "bytes [" + std::to_string(s.start) + ", " + std::to_string(s.start + s.fill) +
                                 ") to " + data_object(id_, s.start / chunk_) + ": " + rados::errno_text(rc);
        broken_ = fail(code, code == Errc::out_of_space
                                 ? "no room for blob " + quote_name(name()) + " in " + state_->store() +
                                       ": the pool is full or over its quota; writing " + what
                                 : "push " + quote_name(name()) + ": " + state_->store() + ": writing " + what);
    }

    /// Waits for every write, and for the journal's appends that follow
    /// them; drops the buffers.
    void settle() noexcept
    {
        for (Slot& s : slots_) {
            finish_write(s);
            s.bytes.reset();
        }
        if (journal_) {
            journal_->drain();
            record_ = journal_->record();
        }
    }

    void do_suspend() noexcept override
    {
        Slot& s = slots_[current_];
        if (!broken_ && s.fill < s.limit && s.fill > 0) submit(s);  // the next window() starts a new buffer
        settle();
    }

    bool commit_syncs() const noexcept override { return true; }

    BlobInfo do_commit(const Checksum& checksum) override
    {
        settle();  // the last buffer went out when it filled
        const std::string what = "commit " + quote_name(name());
        if (broken_) throw Error(static_cast<Errc>(broken_.value()), what + ": " + error_message());
        BlobRecord record{{name(), size(), checksum, std::chrono::system_clock::now()}, id_, chunk_};
        const std::string value = encode(record);
        for (int attempt = 1;; ++attempt) {
            std::string seen;  // the version replaced ("": none)
            std::optional<BlobRecord> old;
            if (mode_ == ReserveMode::replace) old = state_->find(name(), &seen);
            rados::WriteOp op;
            const std::size_t ours = op.expect(reservation_key(id_), record_);
            op.expect(blob_key(name()), seen);
            op.set(blob_key(name()), value);
            op.remove(reservation_key(id_));
            op.remove(touch_key(id_));
            if (old)
                op.set(trash_key(old->data), encode(TrashRecord{name(), chunk_count(old->info.size, old->chunk),
                                                                now_ms() + state_->options.grace.count()}));
            const int rc = op.operate(state_->io(), kIndexObject);
            if (rc == 0) {
                closed_ = true;
                if (journal_ && journal_->started()) rados::remove_async(state_->io(), resume_object(id_));
                state_->close_reservation(id_);
                state_->count_commit(size(), old ? std::optional(old->info.size) : std::nullopt);
                return record.info;
            }
            if (rc == -ECANCELED && op.failed(ours))
                throw Error(Errc::io_error, what + ": " + state_->store() +
                                                ": its reservation was cleaned up as abandoned (nobody vouched for "
                                                "it within the grace of " +
                                                std::to_string(state_->options.grace.count() / 1000.0) +
                                                " s: a stalled daemon, or clocks apart); nothing was stored");
            if (rc == -ECANCELED && mode_ == ReserveMode::create)
                throw Error(Errc::already_exists, what + ": a blob of that name was committed meanwhile");
            if (rc == -ECANCELED && attempt < kCommitAttempts) continue;
            if (rc == -ECANCELED)
                throw Error(Errc::io_error, what + ": " + state_->store() + ": the Blob changed in each of " +
                                                std::to_string(kCommitAttempts) + " attempts to replace it");
            state_->fail(what + ": the index update failed (should the cluster have applied it nonetheless, "
                                "the Blob is stored: stat it)",
                         rc);
        }
    }

    void do_abort() noexcept override
    {
        settle();
        if (closed_) return;
        closed_ = true;
        // To the trash, only while the record is still there: after a commit
        // whose outcome is unknown (a timeout) the Blob may be committed.
        try {
            rados::WriteOp op;
            op.require(reservation_key(id_), record_);
            op.remove(reservation_key(id_));
            op.remove(touch_key(id_));
            // Adopted after a restart: the objects its earlier process wrote
            // may go beyond the bytes kept.
            const std::uint64_t extent = adopted_ ? size() : written();
            op.set(trash_key(id_), encode(TrashRecord{name(), chunk_count(extent, chunk_), now_ms()}));
            const int rc = op.submit(state_->io(), kIndexObject);
            if (rc < 0)
                spdlog::warn("{}: abort of the reservation of {}: {} (its objects go once it is found abandoned)",
                             state_->store(), quote_name(name()), rados::errno_text(rc));
        } catch (const std::exception& e) {
            spdlog::warn("{}: abort of the reservation of {}: {}", state_->store(), quote_name(name()), e.what());
        }
        state_->close_reservation(id_);
    }

    std::shared_ptr<RadosStore::State> state_;
    ReserveMode mode_;
    std::string id_;
    std::string record_;  ///< as in the index (what commit and abort compare)
    std::uint32_t chunk_;
    Slot slots_[kSlots];
    std::size_t current_ = kSlots - 1;
    std::error_code broken_;  ///< a write failed: the push cannot complete
    bool closed_ = false;
    /// Kept for a resume: its journal, from its first write (or adoption).
    std::shared_ptr<RadosJournal> journal_;
    bool adopted_ = false;  ///< reopened after a restart of its store
};

}  // namespace

std::unique_ptr<Reservation> make_rados_reservation(std::shared_ptr<RadosStore::State> state, std::string name,
                                                    std::uint64_t size, ReserveMode mode, ChecksumAlgorithm checksum,
                                                    std::string id, std::string record)
{
    const std::uint32_t chunk = state->options.chunk_size;
    return std::make_unique<RadosReservation>(std::move(state), std::move(name), size, mode, checksum, std::move(id),
                                              std::move(record), chunk);
}

std::unique_ptr<Reservation> make_kept_rados_reservation(std::shared_ptr<RadosStore::State> state,
                                                         const ResumeHeader& kept, std::string id, std::string record,
                                                         std::uint32_t chunk, std::uint64_t written,
                                                         ChecksumState checksum)
{
    return std::make_unique<RadosReservation>(std::move(state), kept, std::move(id), std::move(record), chunk, written,
                                              std::move(checksum));
}

}  // namespace blobstreaming::detail
