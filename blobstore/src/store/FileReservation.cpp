/// FileReservation (FileReservation.h): the push buffer written out to a
/// reservation file with early writeback, its commit and abort.
#include "FileReservation.h"

#include "FileHeader.h"
#include "FileSystem.h"
#include "ResumeJournal.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/UniqueFd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace blobstreaming::detail {

namespace {

constexpr std::uint64_t kHeaderSize = FileStore::kHeaderSize;
/// The buffer a reservation receives into and writes out from with pwrite:
/// small enough to stay in cache and to keep the daemon's resident memory
/// flat whatever the Blob size. Measured against receiving into a sliding
/// 16 MiB MAP_SHARED window of the file (a page fault per 4 KiB; docs/
/// STORES.md): as fast or faster, with less peak RSS. Never a
/// mapping also means a full disk (file systems without fallocate) is an
/// error from pwrite, never a SIGBUS or EFAULT.
constexpr std::size_t kBufferSize = 1u << 20;
/// While SHA-256 is hashed on the helper thread, the buffer is this many
/// such slots, filled in turn front to back: the helper hashes one while the
/// next receives, and a slot is handed out again only once the helper let
/// go of it, so that its bytes never change while being hashed. Inline
/// (CRC32C): one slot, every window at its start.
constexpr std::size_t kSlots = 2;

class FileReservation final : public Reservation {
public:
    /// `sparse`: the file system could not allocate the file's blocks at
    /// reserve time; `promised` bytes of State::promised are this one's.
    FileReservation(std::shared_ptr<FileStore::State> state, std::string name, std::uint64_t size, ReserveMode mode,
                    ChecksumAlgorithm checksum, fs::path path, bool sparse)
        : Reservation(std::move(name), size, checksum), state_(std::move(state)), mode_(mode), path_(std::move(path)),
          sparse_(sparse), promised_(sparse ? kHeaderSize + size : 0)
    {}
    /// A kept reservation reopened (make_kept_file_reservation()).
    FileReservation(std::shared_ptr<FileStore::State> state, const ResumeHeader& kept, fs::path path,
                    std::uint64_t written, ChecksumState checksum)
        : FileReservation(std::move(state), kept.name, kept.size, kept.mode, kept.checksum, std::move(path), false)
    {
        restore(written, std::move(checksum), kept.owner);
        journaled_ = written;
        journal_made_ = true;
    }
    ~FileReservation() override { abort(); }

private:
    /// Opens the reservation file (again, after suspend()).
    bool open_file(std::error_code& ec)
    {
        if (fd_) return true;
        fd_.reset(::open(path_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
        if (fd_) return true;
        const int err = errno;
        ec = fail(std::error_code(err, std::generic_category()), "push " + quote_name(name()) +
                                                                     ": cannot open the reservation file " +
                                                                     path_.string() + ": " + std::strerror(err));
        return false;
    }

    /// pwrite at any offset; in parts the one buffer slot is used (CRC32C
    /// hashes inline, no helper holds it).
    bool writes_anywhere() const noexcept override { return true; }

    Window do_window(std::uint64_t /*offset*/, std::size_t max, std::error_code& ec) override
    {
        if (!open_file(ec)) return {};
        const auto slot = static_cast<std::size_t>(std::min<std::uint64_t>(kBufferSize, size()));
        const std::size_t slots = hashes_in_background() ? kSlots : 1;
        if (buffer_size_ != slot * slots) {
            // Allocated, or grown as the helper starts: nothing in it is
            // queued for hashing yet.
            // Not zeroed: every byte handed out is received before it is
            // written out (0.5 MiB of memset per small push otherwise).
            buffer_.reset(new std::uint8_t[slot * slots]);
            buffer_size_ = slot * slots;
            current_ = 0;
            fill_ = 0;
            std::fill(std::begin(slot_end_), std::end(slot_end_), 0);
        }
        if (slots == 1) return {buffer_.get(), std::min(max, slot)};
        if (fill_ == slot) {
            current_ = (current_ + 1) % kSlots;
            fill_ = 0;
            wait_hashed(slot_end_[current_]);
        }
        return {buffer_.get() + current_ * slot + fill_, std::min(max, slot - fill_)};
    }

    /// The bytes are in the buffer: write them (a full disk is an error
    /// here), and with sync start their writeback.
    std::error_code do_advance(const std::uint8_t* data, std::size_t n, std::uint64_t offset) override
    {
        std::size_t done = 0;
        while (done < n) {
            const ssize_t w =
                ::pwrite(fd_.get(), data + done, n - done, static_cast<off_t>(kHeaderSize + offset + done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                const int err = w < 0 ? errno : ENOSPC;
                if (is_no_space(err))
                    return fail(Errc::out_of_space,
                                "no room for blob " + quote_name(name()) + " in file store " + state_->root.string() +
                                    ": its file system filled up after " + std::to_string(offset + done) + " of " +
                                    std::to_string(size()) + " bytes (need " + std::to_string(size() - offset - done) +
                                    " more, " + free_text(state_->tmp) +
                                    (sparse_ ? "; it cannot reserve space in advance): " : "): ") + std::strerror(err));
                return fail(std::error_code(err, std::generic_category()),
                            "push " + quote_name(name()) + ": write to " + path_.string() + " failed at byte " +
                                std::to_string(offset + done) + ": " + std::strerror(err));
            }
            done += static_cast<std::size_t>(w);
        }
        settle(n);
        if (journaling()) {
            // A range ends at every multiple of kResumeCheckpoint.
            std::uint64_t at = offset;
            while (at < offset + n && !journal_off_) {
                const std::uint64_t boundary = (journaled_ / kResumeCheckpoint + 1) * kResumeCheckpoint;
                const std::uint64_t until = std::min(offset + n, boundary);
                range_crc_ = crc32c(data + (at - offset), static_cast<std::size_t>(until - at), range_crc_);
                at = until;
                if (at == boundary) journal_range(at, false);
            }
        } else {
            journal_off_ = true;  // bytes the journal did not follow: never journal after them
        }
        // Writeback follows bytes written in order; in parts the commit's
        // fdatasync does it all.
        if (state_->sync && !parted()) writeback_.written(fd_.get(), kHeaderSize + offset + n);
        if (hashes_in_background()) {  // slots in turn (do_window)
            fill_ += n;
            slot_end_[current_] = offset + n;
        }
        return {};
    }

    /// Open-ended: the file grows a step at a time (fallocate of the step;
    /// on a file system without it, the free space is checked and the step
    /// promised, as at reserve time), each step counted in the index first.
    bool can_grow() const noexcept override { return true; }

    std::uint64_t do_grow(std::uint64_t at_most, std::error_code& ec) override
    {
        std::uint64_t got = 0;
        {
            std::lock_guard lock(state_->mutex);
            got = state_->index.grow_reservation(at_most - size());
            if (got == 0) {
                ec = fail(Errc::out_of_space, state_->index.full_message(name(), written()));
                return 0;
            }
        }
        const std::uint64_t grown = size() + got;
        auto give_back = [&] {
            std::lock_guard lock(state_->mutex);
            state_->index.shrink_reservation(got);
        };
        if (!open_file(ec)) {
            give_back();
            return 0;
        }
        int err = 0;
        if (::fallocate(fd_.get(), 0, static_cast<off_t>(kHeaderSize + size()), static_cast<off_t>(got)) != 0) {
            err = errno;
            if (err == EOPNOTSUPP || err == ENOSYS) {
                std::lock_guard lock(state_->mutex);
                const auto free = free_bytes_of(state_->tmp);
                const std::uint64_t others = state_->promised;
                if (free && (*free < others || *free - others < got)) {
                    err = ENOSPC;
                } else {
                    err = ::ftruncate(fd_.get(), static_cast<off_t>(kHeaderSize + grown)) == 0 ? 0 : errno;
                    if (err == 0) {
                        promised_ += got;
                        state_->promised += got;
                    }
                }
            }
        }
        if (err != 0) {
            give_back();
            if (is_no_space(err)) {
                ec =
                    fail(Errc::out_of_space, "no room for blob " + quote_name(name()) + ": the file system of " +
                                                 state_->root.string() + " is full after " + std::to_string(written()) +
                                                 " bytes of a push of unknown length (" + free_text(state_->tmp) + ")");
                return 0;
            }
            ec = fail(std::error_code(err, std::generic_category()),
                      "push " + quote_name(name()) + ": cannot grow " + path_.string() + " to " +
                          std::to_string(grown) + " bytes: " + std::strerror(err));
            return 0;
        }
        return grown;
    }

    /// The file ends at the bytes received; the index and the promise give
    /// back the rest.
    void do_shrink(std::uint64_t size) noexcept override
    {
        std::error_code ec;
        if (open_file(ec)) (void)::ftruncate(fd_.get(), static_cast<off_t>(kHeaderSize + size));
        settle(std::min(promised_, this->size() - size));
        std::lock_guard lock(state_->mutex);
        state_->index.shrink_reservation(this->size() - size);
    }

    /// The helper has let go of the buffer (Reservation::suspend()): a kept
    /// reservation journals what arrived since its last range, durably (a
    /// parked push waits for its client, perhaps across a restart).
    void do_suspend() noexcept override
    {
        if (journaling() && fd_ && written() > journaled_) journal_range(written(), state_->sync);
        release_files();
    }

    void release_files() noexcept
    {
        fd_.reset();
        journal_fd_.reset();
        free_buffer();
    }

    std::string journal_path() const { return path_.string() + ".resume"; }

    /// Whether the ranges received are journaled (keep_for_resume()): bytes
    /// in order, of a known size, and no journal write failed.
    bool journaling() const noexcept { return !resume_owner().empty() && !parted() && !open_ended() && !journal_off_; }

    /// Records [journaled_, end) with its CRC32C; with `sync`, the bytes and
    /// the record reach the disk first. A failure is logged and ends the
    /// journal (the push goes on; it is then not kept across a restart):
    /// never an error of the push.
    void journal_range(std::uint64_t end, bool sync) noexcept
    {
        const std::string journal = journal_path();
        std::string records;
        int err = 0;
        if (!journal_fd_) {
            // The first range creates the journal with its header; a kept
            // reservation reopened appends to its own.
            journal_fd_.reset(::open(journal.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
            if (!journal_fd_ && errno == ENOENT) {
                journal_fd_.reset(::open(journal.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
                records = encode_resume_header({name(), size(), checksum_algorithm(), mode_, resume_owner()});
            }
            if (journal_fd_) journal_made_ = true;
            if (!journal_fd_) err = errno;
        }
        records += encode_resume_range({journaled_, end, range_crc_});
        if (err == 0 && sync && ::fdatasync(fd_.get()) != 0) err = errno;
        if (err == 0) {
            const ssize_t w = ::write(journal_fd_.get(), records.data(), records.size());
            if (w != static_cast<ssize_t>(records.size())) err = w < 0 ? errno : ENOSPC;
        }
        if (err == 0 && sync && ::fdatasync(journal_fd_.get()) != 0) err = errno;
        if (err != 0) {
            spdlog::warn("push {}: cannot journal bytes [{}, {}) in {}: {}; this push will not be kept across a "
                         "restart of the daemon",
                         quote_name(name()), journaled_, end, journal, std::strerror(err));
            journal_off_ = true;
            journal_fd_.reset();
            remove_journal();
            return;
        }
        journaled_ = end;
        range_crc_ = 0;
    }

    /// The journal goes with the reservation: an unlink only when this
    /// reservation ever made or reopened one (most pushes are never kept).
    void remove_journal() noexcept
    {
        if (journal_made_) ::unlink(journal_path().c_str());
    }

    void free_buffer() noexcept
    {
        buffer_.reset();
        buffer_size_ = 0;
    }

    /// `n` promised bytes are on disk now (or will never be written).
    void settle(std::uint64_t n) noexcept
    {
        n = std::min(n, promised_);
        if (n == 0) return;
        promised_ -= n;
        std::lock_guard lock(state_->mutex);
        state_->promised -= std::min(n, state_->promised);
    }

    [[noreturn]] void throw_write_error(const std::string& what, int err)
    {
        if (is_no_space(err))
            throw Error(Errc::out_of_space, "commit " + quote_name(name()) + ": no room in file store " +
                                                state_->root.string() + " (" + free_text(state_->tmp) + "): " + what +
                                                " " + path_.string() + ": " + std::strerror(err));
        throw_io_error("commit " + quote_name(name()) + ": " + what + " " + path_.string(), err);
    }

    BlobInfo do_commit(const Checksum& checksum) override
    {
        free_buffer();
        state_->check_directories("commit " + quote_name(name()));
        std::error_code ec;
        if (!open_file(ec)) throw Error(Errc::io_error, "commit " + quote_name(name()) + ": " + error_message());
        BlobInfo info{name(), size(), checksum, std::chrono::system_clock::now()};
        std::uint8_t header[kHeaderSize];
        encode_header(info, header);
        const ssize_t w = ::pwrite(fd_.get(), header, sizeof header, 0);
        if (w != static_cast<ssize_t>(sizeof header)) throw_write_error("write header to", w < 0 ? errno : ENOSPC);
        settle(promised_);
        if (state_->sync && ::fdatasync(fd_.get()) != 0) throw_write_error("fsync", errno);
        fd_.reset();

        const fs::path final_path = state_->path_of(name());
        const fs::path dir = final_path.parent_path();
        bool new_fanout = false;  // its entry in blobs/ not yet known durable
        {
            std::lock_guard lock(state_->mutex);
            if (mode_ == ReserveMode::create && state_->index.find(name()))
                throw Error(Errc::already_exists,
                            "commit " + quote_name(name()) + ": a blob of that name was committed meanwhile");
            // The store made every fan-out directory at open: one is made
            // here only when the rename finds none (removed since).
            int renamed = ::rename(path_.c_str(), final_path.c_str());
            if (renamed != 0 && errno == ENOENT) {
                if (fs::create_directory(dir, ec) && state_->sync)
                    state_->fanouts_unsynced.insert(dir.filename().string());
                if (ec)
                    throw Error(Errc::io_error, "commit " + quote_name(name()) + ": cannot create " + dir.string() +
                                                    ": " + ec.message());
                renamed = ::rename(path_.c_str(), final_path.c_str());
            }
            if (renamed != 0)
                throw_io_error("commit " + quote_name(name()) + ": rename " + path_.string() + " into " +
                                   final_path.string(),
                               errno);
            new_fanout = state_->fanouts_unsynced.count(dir.filename().string()) != 0;
            state_->index.close_reservation(name(), size());
            closed_ = true;
            detail::FileExtra extra;
            std::memcpy(extra.header_digest.data(), header + kHeaderSize - extra.header_digest.size(),
                        extra.header_digest.size());
            state_->index.publish({info, extra});
            state_->open_files.erase(name());  // a replaced version's file goes (and its space)
        }
        journal_fd_.reset();
        remove_journal();
        if (state_->sync) {
            try {
                state_->directory_sync.sync(dir);
                if (new_fanout) {
                    // The directory's own entry, else a crash may lose it
                    // with every Blob renamed into it.
                    state_->directory_sync.sync(state_->blobs);
                    std::lock_guard lock(state_->mutex);
                    state_->fanouts_unsynced.erase(dir.filename().string());
                }
            } catch (const Error& e) {
                // The rename may not survive a crash: withdraw the Blob, so
                // that a failed commit never leaves it visible.
                std::lock_guard lock(state_->mutex);
                const auto* entry = state_->index.find(name());
                if (entry && entry->info.committed == info.committed && entry->info.checksum == info.checksum) {
                    state_->index.erase(name());
                    ::unlink(final_path.c_str());
                }
                throw Error(Errc::io_error,
                            "commit " + quote_name(name()) + ": " + e.what() + "; the blob was withdrawn" +
                                (mode_ == ReserveMode::replace ? " (the version it replaced is gone)" : ""));
            }
        }
        return info;
    }

    bool commit_syncs() const noexcept override { return state_->sync; }

    /// The bytes were written out by do_advance() (pwrite), so the file has
    /// them: read them back with pread, whatever the filler does meanwhile.
    std::error_code do_read_back(std::uint64_t offset, std::uint8_t* out, std::size_t n) const override
    {
        const int fd = fd_.get();
        if (fd < 0) return std::make_error_code(std::errc::operation_not_supported);  // suspended
        std::size_t done = 0;
        while (done < n) {
            const ssize_t r = ::pread(fd, out + done, n - done, static_cast<off_t>(kHeaderSize + offset + done));
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return std::error_code(errno, std::generic_category());
            if (r == 0) return std::make_error_code(std::errc::io_error);  // shorter than what was written
            done += static_cast<std::size_t>(r);
        }
        return {};
    }

    void do_abort() noexcept override
    {
        release_files();
        settle(promised_);
        if (closed_) return;
        remove_journal();
        ::unlink(path_.c_str());
        std::lock_guard lock(state_->mutex);
        state_->index.close_reservation(name(), size());
        closed_ = true;
    }

    std::shared_ptr<FileStore::State> state_;
    ReserveMode mode_;
    fs::path path_;
    bool sparse_;
    std::uint64_t promised_;                  ///< of State::promised, not yet written
    UniqueFd fd_;                             ///< open only while being filled or committed
    std::unique_ptr<std::uint8_t[]> buffer_;  ///< one slot, or kSlots (see there)
    std::size_t buffer_size_ = 0;
    std::size_t current_ = 0;           ///< slots in turn: the slot being filled
    std::size_t fill_ = 0;              ///< bytes advanced over in it
    std::uint64_t slot_end_[kSlots]{};  ///< each slot's last bytes end before this Blob offset
    Writeback writeback_{kHeaderSize};
    bool closed_ = false;
    // keep_for_resume(): the journal (ResumeJournal.h), `<file>.resume`
    UniqueFd journal_fd_;          ///< open only while being filled
    std::uint64_t journaled_ = 0;  ///< the journal's ranges end here
    std::uint32_t range_crc_ = 0;  ///< CRC32C of [journaled_, the bytes written)
    bool journal_off_ = false;     ///< a journal write failed, or bytes came it did not follow
    bool journal_made_ = false;    ///< this reservation created or reopened its journal file
};

}  // namespace

std::unique_ptr<Reservation> make_kept_file_reservation(std::shared_ptr<FileStore::State> state,
                                                        const ResumeHeader& kept, fs::path path, std::uint64_t written,
                                                        ChecksumState checksum)
{
    return std::make_unique<FileReservation>(std::move(state), kept, std::move(path), written, std::move(checksum));
}

std::unique_ptr<Reservation> make_file_reservation(std::shared_ptr<FileStore::State> state, std::string name,
                                                   std::uint64_t size, ReserveMode mode, ChecksumAlgorithm checksum,
                                                   fs::path path, bool sparse)
{
    return std::make_unique<FileReservation>(std::move(state), std::move(name), size, mode, checksum, std::move(path),
                                             sparse);
}

}  // namespace blobstreaming::detail
