/// Opening a FileStore (FileStoreState.h): directories and lock, recovery of
/// leftover reservations, the scan that indexes the committed Blobs, and the
/// checks that the directories are still the store's.
#include "FileStoreState.h"

#include "FileHeader.h"
#include "FileSystem.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace blobstreaming {

std::string detail::fanout(std::string_view name)
{
    std::uint32_t h = 2166136261u;  // FNV-1a
    for (char c : name) h = (h ^ static_cast<std::uint8_t>(c)) * 16777619u;
    static constexpr char kHex[] = "0123456789abcdef";
    return {kHex[(h >> 4) & 0xf], kHex[h & 0xf]};
}

void FileStore::State::check_directories(const std::string& what) const
{
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0)
        throw_io_error(what + ": file store " + root.string() + ": cannot access its directory " + root.string(),
                       errno);
    if (st.st_dev != root_dev || st.st_ino != root_ino)
        throw Error(Errc::io_error, what + ": file store " + root.string() + ": the directory " + root.string() +
                                        " was replaced since the store opened it (restart the daemon to use it)");
    for (const fs::path& dir : {blobs, tmp}) {
        if (::stat(dir.c_str(), &st) != 0)
            throw_io_error(what + ": file store " + root.string() + ": cannot access " + dir.string(), errno);
        if (!S_ISDIR(st.st_mode))
            throw Error(Errc::io_error,
                        what + ": file store " + root.string() + ": " + dir.string() + " is not a directory");
    }
}

bool FileStore::State::drop_missing(std::string_view name, const BlobInfo& seen, const fs::path& path)
{
    const auto* entry = index.find(name);
    if (!entry || entry->info.committed != seen.committed || !(entry->info.checksum == seen.checksum)) return false;
    index.erase(name);
    open_files.erase(name);
    spdlog::warn("file store {}: {} was removed outside the store: blob {} dropped from the index", root.string(),
                 path.string(), quote_name(name));
    return true;
}

void FileStore::State::forget_missing(const std::string& what, std::string_view name, const BlobInfo& seen,
                                      const fs::path& path)
{
    if (drop_missing(name, seen, path))
        throw Error(Errc::no_such_blob, what + ": blob " + quote_name(name) + " not found: its file " + path.string() +
                                            " was removed outside the store");
    throw Error(Errc::no_such_blob, "blob " + quote_name(name) + " not found (removed meanwhile)");
}

std::optional<BlobInfo> FileStore::State::confirm(std::string_view name, const std::string& what, bool quiet)
{
    const auto* entry = index.find(name);
    if (!entry) {
        check_directories(what);
        if (quiet) return std::nullopt;
        return index.get(name).info;  // throws no_such_blob, saying if a reservation is open
    }
    const BlobInfo info = entry->info;
    struct stat st {};
    if (::fstatat(blobs_fd.get(), relative_path_of(name).c_str(), &st, 0) == 0) return info;
    const int err = errno;
    check_directories(what);
    const fs::path path = path_of(name);
    if (err == ENOENT) {
        if (!quiet) forget_missing(what, name, info, path);
        drop_missing(name, info, path);
        return std::nullopt;
    }
    throw_io_error(what + ": cannot access " + path.string(), err);
}

void FileStore::State::open()
{
    std::error_code ec;
    for (const auto& d : {root, blobs, tmp}) {
        fs::create_directories(d, ec);
        if (ec) throw Error(Errc::io_error, "file store: cannot create " + d.string() + ": " + ec.message());
    }
    const fs::path lock_path = root / ".lock";
    lock_fd.reset(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!lock_fd) throw_io_error("file store: cannot open " + lock_path.string(), errno);
    if (::flock(lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            throw Error(Errc::store_busy, "file store " + root.string() +
                                              " is in use by another process or store object (" + lock_path.string() +
                                              " is locked)");
        throw_io_error("file store: cannot lock " + lock_path.string(), errno);
    }
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0) throw_io_error("file store: cannot access " + root.string(), errno);
    root_dev = st.st_dev;
    root_ino = st.st_ino;
    blobs_fd.reset(::open(blobs.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!blobs_fd) throw_io_error("file store: cannot open " + blobs.string(), errno);
    make_fanouts();
    recover();
    scan();
}

void FileStore::State::make_fanouts()
{
    static constexpr char kHex[] = "0123456789abcdef";
    bool made = false;
    for (int i = 0; i < 256; ++i) {
        const char sub[] = {kHex[i >> 4], kHex[i & 0xf], '\0'};
        if (::mkdirat(blobs_fd.get(), sub, 0777) != 0) continue;  // there already, or for its first commit to make
        made = true;
        if (sync) fanouts_unsynced.insert(sub);
    }
    if (!made || !sync) return;
    if (::fsync(blobs_fd.get()) != 0) {
        spdlog::warn("file store {}: fsync {} after making its fan-out directories: {}; each commit into one of them "
                     "syncs it again",
                     root.string(), blobs.string(), std::strerror(errno));
        return;
    }
    fanouts_unsynced.clear();
}

void FileStore::State::recover()
{
    tmp_prefix = std::to_string(::getpid()) + "-" +
                 std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
    std::error_code ec;
    // A reservation file with a journal beside it was kept for a resume
    // (reopen_kept() checks it); every other file goes.
    std::vector<fs::path> leftovers;
    for (const auto& entry : fs::directory_iterator(tmp, ec)) {
        const fs::path& p = entry.path();
        const std::string file = p.filename().string();
        if (p.extension() == ".part" && fs::exists(p.string() + ".resume")) {
            journaled.push_back(p);
            continue;
        }
        if (p.extension() == ".resume" && fs::exists(p.parent_path() / p.stem())) continue;
        leftovers.push_back(p);
    }
    if (ec) throw Error(Errc::io_error, "file store: cannot list " + tmp.string() + ": " + ec.message());
    for (const fs::path& leftover : leftovers) {
        fs::remove(leftover, ec);
        if (ec)
            throw Error(Errc::io_error,
                        "file store: cannot remove leftover reservation " + leftover.string() + ": " + ec.message());
        ++recovered;
    }
    if (recovered > 0) {
        spdlog::warn("file store {}: removed {} reservation(s) left by an interrupted process", root.string(),
                     recovered);
        if (sync) detail::fsync_dir(tmp);
    }
}

void FileStore::State::scan()
{
    std::error_code ec;
    for (const auto& sub : fs::directory_iterator(blobs, ec)) {
        if (!sub.is_directory()) continue;
        for (const auto& file : fs::directory_iterator(sub.path(), ec)) {
            const std::string fname = file.path().filename().string();
            std::string why;
            std::optional<BlobInfo> info;
            detail::HeaderDigest digest{};
            if (blob_name_problem(fname)) {
                why = "not a blob name";
            } else if (UniqueFd fd(::open(file.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)); !fd) {
                why = std::strerror(errno);
            } else if ((info = detail::read_header(fd.get(), why, nullptr, &digest)) && info->name != fname) {
                why = "header names blob \"" + info->name + "\"";
                info.reset();
            } else if (info && detail::fanout(fname) != sub.path().filename().string()) {
                why = "file is in the wrong fan-out directory";
                info.reset();
            }
            if (!info) {
                spdlog::warn("file store {}: ignoring {}: {}", root.string(), file.path().string(), why);
                continue;
            }
            index.publish({std::move(*info), {digest}});
        }
    }
    if (ec) throw Error(Errc::io_error, "file store: cannot list " + blobs.string() + ": " + ec.message());
}

}  // namespace blobstreaming
