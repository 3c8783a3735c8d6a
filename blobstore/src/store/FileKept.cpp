/// Reopening the reservations a FileStore kept for a resume across a restart
/// (FileReservation.h, reopen_kept()): each journal is read, the bytes of its
/// ranges are reread and checked, and the prefix that matches is handed back.
#include "FileReservation.h"

#include "FileSystem.h"
#include "ResumeJournal.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/UniqueFd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace blobstreaming::detail {

namespace {

/// A range longer than this is not one a reservation journals (a
/// checkpoint, or what arrived since the last one when the push broke
/// off): the journal is damaged from there.
constexpr std::uint64_t kMaxRange = 4 * kResumeCheckpoint;

bool read_exactly(int fd, std::uint8_t* out, std::size_t n, std::uint64_t at)
{
    std::size_t done = 0;
    while (done < n) {
        const ssize_t r = ::pread(fd, out + done, n - done, static_cast<off_t>(at + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        done += static_cast<std::size_t>(r);
    }
    return true;
}

/// Writes `bytes` as the journal at `path`: a temporary file, fsync'ed,
/// renamed over it, so that a crash leaves the old journal or the new.
bool replace_journal(const std::string& path, const std::string& bytes, bool sync)
{
    const std::string temporary = path + ".new";
    UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd) return false;
    const ssize_t w = ::write(fd.get(), bytes.data(), bytes.size());
    const bool ok = w == static_cast<ssize_t>(bytes.size()) && (!sync || ::fdatasync(fd.get()) == 0) &&
                    ::rename(temporary.c_str(), path.c_str()) == 0;
    if (!ok) ::unlink(temporary.c_str());
    return ok;
}

}  // namespace

std::vector<Store::Kept> reopen_kept(const std::shared_ptr<FileStore::State>& state)
{
    std::vector<Store::Kept> kept;
    bool removed = false;
    std::unique_ptr<std::uint8_t[]> buffer;
    for (const fs::path& part : state->journaled) {
        const std::string journal = part.string() + ".resume";
        auto drop = [&](const std::string& why) {
            spdlog::warn("file store {}: removed reservation {} kept for a resume: {}", state->root.string(),
                         part.string(), why);
            ::unlink(journal.c_str());
            ::unlink(part.c_str());
            ++state->recovered;
            removed = true;
        };
        std::string bytes;
        if (UniqueFd j(::open(journal.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)); j) {
            char chunk[8192];
            ssize_t r = 0;
            // A journal holds a header and a record per range: bounded by
            // the Blob's size over kResumeCheckpoint.
            while ((r = ::read(j.get(), chunk, sizeof chunk)) > 0) bytes.append(chunk, static_cast<std::size_t>(r));
        }
        std::string why;
        auto j = parse_resume_journal(bytes, why);
        if (!j) {
            drop("its journal " + journal + " cannot be read: " + why);
            continue;
        }
        const ResumeHeader& h = j->header;
        struct stat st {};
        UniqueFd fd(::open(part.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd || ::fstat(fd.get(), &st) != 0) {
            drop(std::string("cannot open it: ") + std::strerror(errno));
            continue;
        }
        if (static_cast<std::uint64_t>(st.st_size) != FileStore::kHeaderSize + h.size) {
            drop("it is " + std::to_string(st.st_size) + " bytes, its journal says a blob of " +
                 std::to_string(h.size) + " bytes (" + std::to_string(FileStore::kHeaderSize + h.size) +
                 " with the header)");
            continue;
        }
        // Every journaled range is reread and checked; the Blob's checksum
        // state is computed over the bytes of those that match, so that the
        // commit's end-to-end check covers the bytes as they are on disk.
        ChecksumState checksum(h.checksum);
        std::uint64_t received = 0;
        std::size_t good = 0;
        std::string mismatch;
        if (!buffer) buffer.reset(new std::uint8_t[kMaxRange]);
        for (const ResumeRange& r : j->ranges) {
            const std::uint64_t length = r.end - r.start;
            if (length > kMaxRange) {
                mismatch = "its range at byte " + std::to_string(r.start) + " is too long";
                break;
            }
            const auto n = static_cast<std::size_t>(length);
            if (!read_exactly(fd.get(), buffer.get(), n, FileStore::kHeaderSize + r.start)) {
                mismatch = "cannot read bytes [" + std::to_string(r.start) + ", " + std::to_string(r.end) + ")";
                break;
            }
            if (crc32c(buffer.get(), n) != r.crc) {
                mismatch = "bytes [" + std::to_string(r.start) + ", " + std::to_string(r.end) +
                           ") no longer match their CRC32C in the journal";
                break;
            }
            checksum.update(buffer.get(), n);
            received = r.end;
            ++good;
        }
        if (received == 0) {
            drop(mismatch.empty() ? (j->stopped.empty() ? std::string("its journal holds no range") : j->stopped)
                                  : mismatch);
            continue;
        }
        {
            std::lock_guard lock(state->mutex);
            if (state->index.reserving(h.name)) {
                drop("another kept reservation of blob " + quote_name(h.name) + " was reopened first");
                continue;
            }
            state->index.open_reservation(h.name, h.size);
        }
        if (!mismatch.empty() || !j->stopped.empty()) {
            // Later ranges follow the last good one: the journal keeps only
            // those that matched.
            std::string rewritten = encode_resume_header(h);
            for (std::size_t i = 0; i < good; ++i) rewritten += encode_resume_range(j->ranges[i]);
            if (!replace_journal(journal, rewritten, state->sync)) {
                std::lock_guard lock(state->mutex);
                state->index.close_reservation(h.name, h.size);
                drop("cannot rewrite its journal " + journal + ": " + std::strerror(errno));
                continue;
            }
            spdlog::warn("file store {}: push of {}: {}; it resumes at byte {}", state->root.string(),
                         quote_name(h.name), mismatch.empty() ? j->stopped : mismatch, received);
        }
        struct stat js {};
        std::chrono::seconds idle{0};
        if (::stat(journal.c_str(), &js) == 0) {
            const auto now = std::chrono::system_clock::now().time_since_epoch();
            const auto then = std::chrono::seconds(js.st_mtim.tv_sec);
            if (now > then) idle = std::chrono::duration_cast<std::chrono::seconds>(now - then);
        }
        spdlog::info("file store {}: push of {} by {} kept for a resume: {} of {} bytes checked, {} s since its "
                     "last byte",
                     state->root.string(), quote_name(h.name), h.owner, received, h.size, idle.count());
        kept.push_back({make_kept_file_reservation(state, h, part, received, std::move(checksum)), idle});
    }
    state->journaled.clear();
    if (removed && state->sync) fsync_dir(state->tmp);
    return kept;
}

}  // namespace blobstreaming::detail
