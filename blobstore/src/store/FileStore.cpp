#include <blobstreaming/blobstore/FileStore.h>

#include "StoreIndex.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/LittleEndian.h>
#include <blobstreaming/common/MappedRegion.h>
#include <blobstreaming/common/UniqueFd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace blobstreaming {

namespace {

constexpr std::uint64_t kHeaderSize = FileStore::kHeaderSize;
constexpr char kMagic[8] = {'B', 'L', 'O', 'B', 'S', 'T', 'R', '1'};
constexpr std::uint32_t kVersion = 1;
/// Offset of the header's own SHA-256 (over the bytes before it).
constexpr std::size_t kHeaderDigestAt = kHeaderSize - 32;
/// Size of the writable mapping a reservation slides over the file: bounds
/// the daemon's resident memory whatever the Blob size.
constexpr std::uint64_t kWindowSize = 16u << 20;
/// Buffer of a reservation on a file system without fallocate, written out
/// with pwrite: its pages could not be backed if the disk filled up, so
/// bytes are never received into a mapping of such a file.
constexpr std::size_t kBounceSize = 1u << 20;

bool is_no_space(int err) { return err == ENOSPC || err == EDQUOT || err == EFBIG; }

/// Bytes a non-root writer may still allocate on the file system of `dir`.
std::optional<std::uint64_t> free_bytes_of(const fs::path& dir)
{
    struct statvfs st {};
    if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
    return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}

std::string free_text(const fs::path& dir)
{
    const auto free = free_bytes_of(dir);
    return free ? std::to_string(*free) + " bytes free" : std::string("free space unknown");
}

// ---- header encoding (little-endian, fixed layout) ------------------------
//   0  magic[8]       8  version u32   12  header size u32
//  16  blob size u64 24  commit ns u64 32  digest[32]
//  64  name length u16, 66 name bytes; 4064 SHA-256 of bytes [0, 4064)

std::int64_t to_ns(std::chrono::system_clock::time_point t)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

void encode_header(const BlobInfo& info, std::uint8_t* h)
{
    std::memset(h, 0, kHeaderSize);
    std::memcpy(h, kMagic, sizeof kMagic);
    le::put<std::uint32_t>(h + 8, kVersion);
    le::put<std::uint32_t>(h + 12, static_cast<std::uint32_t>(kHeaderSize));
    le::put<std::uint64_t>(h + 16, info.size);
    le::put<std::uint64_t>(h + 24, static_cast<std::uint64_t>(to_ns(info.committed)));
    std::memcpy(h + 32, info.digest.data(), 32);
    le::put<std::uint16_t>(h + 64, static_cast<std::uint16_t>(info.name.size()));
    std::memcpy(h + 66, info.name.data(), info.name.size());
    const Digest self = Sha256::of(h, kHeaderDigestAt);
    std::memcpy(h + kHeaderDigestAt, self.data(), 32);
}

/// Decodes a header; nullopt with `why` set when it is not a valid one.
std::optional<BlobInfo> decode_header(const std::uint8_t* h, std::string& why)
{
    if (std::memcmp(h, kMagic, sizeof kMagic) != 0) return why = "no blob header", std::nullopt;
    if (le::get<std::uint32_t>(h + 8) != kVersion) return why = "unknown header version", std::nullopt;
    const Digest self = Sha256::of(h, kHeaderDigestAt);
    if (std::memcmp(self.data(), h + kHeaderDigestAt, 32) != 0)
        return why = "header checksum mismatch", std::nullopt;
    const std::size_t name_len = le::get<std::uint16_t>(h + 64);
    if (name_len == 0 || name_len > kMaxBlobNameLength) return why = "bad name length", std::nullopt;
    BlobInfo info;
    info.name.assign(reinterpret_cast<const char*>(h + 66), name_len);
    info.size = le::get<std::uint64_t>(h + 16);
    info.committed = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(static_cast<std::int64_t>(le::get<std::uint64_t>(h + 24)))));
    std::memcpy(info.digest.data(), h + 32, 32);
    return info;
}

/// Reads and validates the header of an open blob file against its size.
std::optional<BlobInfo> read_header(int fd, std::string& why)
{
    std::uint8_t h[kHeaderSize];
    const ssize_t n = ::pread(fd, h, sizeof h, 0);
    if (n != static_cast<ssize_t>(sizeof h)) return why = "file shorter than a header", std::nullopt;
    auto info = decode_header(h, why);
    if (!info) return info;
    struct stat st {};
    if (::fstat(fd, &st) != 0) return why = std::strerror(errno), std::nullopt;
    if (static_cast<std::uint64_t>(st.st_size) != kHeaderSize + info->size)
        return why = "file size does not match the header (truncated or extended)", std::nullopt;
    return info;
}

std::string fanout(std::string_view name)
{
    std::uint32_t h = 2166136261u;  // FNV-1a
    for (char c : name) h = (h ^ static_cast<std::uint8_t>(c)) * 16777619u;
    static constexpr char kHex[] = "0123456789abcdef";
    return {kHex[(h >> 4) & 0xf], kHex[h & 0xf]};
}

void fsync_dir(const fs::path& dir)
{
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) throw_io_error("open directory " + dir.string(), errno);
    if (::fsync(fd.get()) != 0) throw_io_error("fsync directory " + dir.string(), errno);
}

/// What a BlobRange keeps alive: the open file and the mapped range.
struct OpenBlob {
    UniqueFd fd;
    MappedRegion map;
};

struct NoExtra {};

}  // namespace

struct FileStore::State {
    fs::path root;
    fs::path blobs;
    fs::path tmp;
    bool sync;
    UniqueFd lock_fd;
    dev_t root_dev = 0;  ///< identity of `root` when opened: a directory put
    ino_t root_ino = 0;  ///< in its place later is not this store
    std::size_t recovered = 0;
    std::atomic<std::uint64_t> tmp_counter{0};
    mutable std::mutex mutex;
    detail::StoreIndex<NoExtra> index;
    /// Bytes that open reservations on a file system without fallocate will
    /// still write (guarded by `mutex`): the free space they are counting on.
    std::uint64_t promised = 0;

    State(const fs::path& dir, const Options& o)
        : root(dir), blobs(dir / "blobs"), tmp(dir / "tmp"), sync(o.sync), index(o.capacity)
    {
    }

    fs::path path_of(std::string_view name) const { return blobs / fanout(name) / std::string(name); }

    void open();
    void recover();
    void scan();
    /// Throws Error(io_error) naming the path when the store's directory, or
    /// its blobs/ or tmp/, is gone or was replaced (removed under the running
    /// store): `what` names the operation.
    void check_directories(const std::string& what) const;
    /// The file of a Blob the index lists is missing: drops the entry when
    /// it is still `seen` (not replaced or removed meanwhile), and throws
    /// no_such_blob naming the file. The caller holds `mutex`.
    [[noreturn]] void forget_missing(const std::string& what, std::string_view name, const BlobInfo& seen,
                                     const fs::path& path);
};

void FileStore::State::check_directories(const std::string& what) const
{
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0)
        throw_io_error(what + ": file store " + root.string() + ": cannot access its directory " + root.string(), errno);
    if (st.st_dev != root_dev || st.st_ino != root_ino)
        throw Error(Errc::io_error, what + ": file store " + root.string() + ": the directory " + root.string() +
                                        " was replaced since the store opened it (restart the daemon to use it)");
    for (const fs::path& dir : {blobs, tmp}) {
        if (::stat(dir.c_str(), &st) != 0)
            throw_io_error(what + ": file store " + root.string() + ": cannot access " + dir.string(), errno);
        if (!S_ISDIR(st.st_mode))
            throw Error(Errc::io_error, what + ": file store " + root.string() + ": " + dir.string() +
                                            " is not a directory");
    }
}

void FileStore::State::forget_missing(const std::string& what, std::string_view name, const BlobInfo& seen,
                                      const fs::path& path)
{
    const auto* entry = index.find(name);
    if (entry && entry->info.committed == seen.committed && entry->info.digest == seen.digest) {
        index.erase(name);
        spdlog::warn("file store {}: {} was removed outside the store: blob {} dropped from the index", root.string(),
                     path.string(), quote_name(name));
        throw Error(Errc::no_such_blob, what + ": blob " + quote_name(name) + " not found: its file " +
                                            path.string() + " was removed outside the store");
    }
    throw Error(Errc::no_such_blob, "blob " + quote_name(name) + " not found (removed meanwhile)");
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
                                              " is in use by another process or store object (" +
                                              lock_path.string() + " is locked)");
        throw_io_error("file store: cannot lock " + lock_path.string(), errno);
    }
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0) throw_io_error("file store: cannot access " + root.string(), errno);
    root_dev = st.st_dev;
    root_ino = st.st_ino;
    recover();
    scan();
}

void FileStore::State::recover()
{
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(tmp, ec)) {
        fs::remove(entry.path(), ec);
        if (ec) throw Error(Errc::io_error, "file store: cannot remove leftover reservation " +
                                                entry.path().string() + ": " + ec.message());
        ++recovered;
    }
    if (ec) throw Error(Errc::io_error, "file store: cannot list " + tmp.string() + ": " + ec.message());
    if (recovered > 0) {
        spdlog::warn("file store {}: removed {} reservation(s) left by an interrupted process",
                     root.string(), recovered);
        if (sync) fsync_dir(tmp);
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
            if (blob_name_problem(fname)) {
                why = "not a blob name";
            } else if (UniqueFd fd(::open(file.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)); !fd) {
                why = std::strerror(errno);
            } else if ((info = read_header(fd.get(), why)) && info->name != fname) {
                why = "header names blob \"" + info->name + "\"";
                info.reset();
            } else if (info && fanout(fname) != sub.path().filename().string()) {
                why = "file is in the wrong fan-out directory";
                info.reset();
            }
            if (!info) {
                spdlog::warn("file store {}: ignoring {}: {}", root.string(), file.path().string(), why);
                continue;
            }
            index.publish({std::move(*info), {}});
        }
    }
    if (ec) throw Error(Errc::io_error, "file store: cannot list " + blobs.string() + ": " + ec.message());
}

namespace {

class FileReservation final : public Reservation {
public:
    /// `sparse`: the file system could not allocate the file's blocks at
    /// reserve time; `promised` bytes of State::promised are this one's.
    FileReservation(std::shared_ptr<FileStore::State> state, std::string name, std::uint64_t size,
                    ReserveMode mode, fs::path path, bool sparse)
        : Reservation(std::move(name), size), state_(std::move(state)), mode_(mode), path_(std::move(path)),
          sparse_(sparse), promised_(sparse ? kHeaderSize + size : 0)
    {
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
        ec = fail(std::error_code(err, std::generic_category()),
                  "push " + quote_name(name()) + ": cannot open the reservation file " + path_.string() + ": " +
                      std::strerror(err));
        return false;
    }

    Window do_window(std::uint64_t offset, std::size_t max, std::error_code& ec) override
    {
        if (!open_file(ec)) return {};
        if (sparse_) {
            if (bounce_.empty())
                bounce_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kBounceSize, size())));
            return {bounce_.data(), std::min(max, bounce_.size())};
        }
        const std::uint64_t file_offset = kHeaderSize + offset;
        if (!map_ || file_offset < map_start_ || file_offset >= map_start_ + map_.size()) {
            map_.reset();
            const std::uint64_t start = file_offset / kWindowSize * kWindowSize;
            const std::uint64_t file_end = kHeaderSize + size();
            const auto length = static_cast<std::size_t>(std::min(kWindowSize, file_end - start));
            std::error_code map_error;
            map_ = MappedRegion::of_file(fd_.get(), start, length, MappedRegion::Access::read_write, map_error);
            if (map_error) {
                ec = fail(map_error, "push " + quote_name(name()) + ": cannot map " + path_.string() + ": " +
                                         map_error.message());
                return {};
            }
            map_start_ = start;
        }
        const std::uint64_t in_map = file_offset - map_start_;
        const auto available = static_cast<std::size_t>(map_.size() - in_map);
        return {map_.data() + in_map, std::min(max, available)};
    }

    /// Sparse file: the bytes are in the buffer; write them, so that a full
    /// disk is an error here and never a SIGBUS (or EFAULT) on a mapping.
    std::error_code do_advance(const std::uint8_t* data, std::size_t n, std::uint64_t offset) override
    {
        if (!sparse_) return {};
        std::size_t done = 0;
        while (done < n) {
            const ssize_t w = ::pwrite(fd_.get(), data + done, n - done,
                                       static_cast<off_t>(kHeaderSize + offset + done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                const int err = w < 0 ? errno : ENOSPC;
                if (is_no_space(err))
                    return fail(Errc::out_of_space,
                                "no room for blob " + quote_name(name()) + " in file store " +
                                    state_->root.string() + ": its file system filled up after " +
                                    std::to_string(offset + done) + " of " + std::to_string(size()) +
                                    " bytes (need " + std::to_string(size() - offset - done) + " more, " +
                                    free_text(state_->tmp) + "; it cannot reserve space in advance): " +
                                    std::strerror(err));
                return fail(std::error_code(err, std::generic_category()),
                            "push " + quote_name(name()) + ": write to " + path_.string() + " failed at byte " +
                                std::to_string(offset + done) + ": " + std::strerror(err));
            }
            done += static_cast<std::size_t>(w);
        }
        settle(n);
        return {};
    }

    void do_suspend() noexcept override
    {
        map_.reset();
        fd_.reset();
        std::vector<std::uint8_t>().swap(bounce_);
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
                                                state_->root.string() + " (" + free_text(state_->tmp) + "): " +
                                                what + " " + path_.string() + ": " + std::strerror(err));
        throw_io_error("commit " + quote_name(name()) + ": " + what + " " + path_.string(), err);
    }

    BlobInfo do_commit(const Digest& digest) override
    {
        map_.reset();
        std::vector<std::uint8_t>().swap(bounce_);
        state_->check_directories("commit " + quote_name(name()));
        std::error_code ec;
        if (!open_file(ec)) throw Error(Errc::io_error, "commit " + quote_name(name()) + ": " + error_message());
        BlobInfo info{name(), size(), digest, std::chrono::system_clock::now()};
        std::uint8_t header[kHeaderSize];
        encode_header(info, header);
        const ssize_t w = ::pwrite(fd_.get(), header, sizeof header, 0);
        if (w != static_cast<ssize_t>(sizeof header)) throw_write_error("write header to", w < 0 ? errno : ENOSPC);
        settle(promised_);
        if (state_->sync && ::fdatasync(fd_.get()) != 0) throw_write_error("fsync", errno);
        fd_.reset();

        const fs::path final_path = state_->path_of(name());
        const fs::path dir = final_path.parent_path();
        fs::create_directory(dir, ec);
        if (ec) throw Error(Errc::io_error, "commit " + quote_name(name()) + ": cannot create " + dir.string() + ": " + ec.message());
        {
            std::lock_guard lock(state_->mutex);
            if (mode_ == ReserveMode::create && state_->index.find(name()))
                throw Error(Errc::already_exists, "commit " + quote_name(name()) +
                                                      ": a blob of that name was committed meanwhile");
            if (::rename(path_.c_str(), final_path.c_str()) != 0)
                throw_io_error("commit " + quote_name(name()) + ": rename " + path_.string() + " into " +
                                   final_path.string(),
                               errno);
            state_->index.close_reservation(name(), size());
            closed_ = true;
            state_->index.publish({info, {}});
        }
        if (state_->sync) {
            try {
                fsync_dir(dir);
            } catch (const Error& e) {
                // The rename may not survive a crash: withdraw the Blob, so
                // that a failed commit never leaves it visible.
                std::lock_guard lock(state_->mutex);
                const auto* entry = state_->index.find(name());
                if (entry && entry->info.committed == info.committed && entry->info.digest == info.digest) {
                    state_->index.erase(name());
                    ::unlink(final_path.c_str());
                }
                throw Error(Errc::io_error, "commit " + quote_name(name()) + ": " + e.what() +
                                                "; the blob was withdrawn" +
                                                (mode_ == ReserveMode::replace ? " (the version it replaced is gone)"
                                                                               : ""));
            }
        }
        return info;
    }

    void do_abort() noexcept override
    {
        do_suspend();
        settle(promised_);
        if (closed_) return;
        ::unlink(path_.c_str());
        std::lock_guard lock(state_->mutex);
        state_->index.close_reservation(name(), size());
        closed_ = true;
    }

    std::shared_ptr<FileStore::State> state_;
    ReserveMode mode_;
    fs::path path_;
    bool sparse_;
    std::uint64_t promised_;  ///< of State::promised, not yet written
    UniqueFd fd_;             ///< open only while being filled or committed
    MappedRegion map_;
    std::uint64_t map_start_ = 0;
    std::vector<std::uint8_t> bounce_;  ///< sparse_ only
    bool closed_ = false;
};

}  // namespace

FileStore::FileStore(const fs::path& directory) : FileStore(directory, Options{}) {}

FileStore::FileStore(const fs::path& directory, Options options)
    : state_(std::make_shared<State>(directory, options))
{
    state_->open();
    spdlog::info("file store {}: {} blob(s), {} bytes", directory.string(), state_->index.count(),
                 state_->index.used());
}

FileStore::~FileStore() = default;

std::optional<BlobInfo> FileStore::file_info(int fd, std::string& why) { return read_header(fd, why); }

const fs::path& FileStore::directory() const noexcept { return state_->root; }

std::size_t FileStore::recovered_reservations() const noexcept { return state_->recovered; }

BlobInfo FileStore::stat(std::string_view name) const
{
    validate_blob_name(name);
    const std::string what = "stat " + quote_name(name);
    std::lock_guard lock(state_->mutex);
    state_->check_directories(what);
    const BlobInfo info = state_->index.get(name).info;
    // The index answers; the file confirms (it may have been removed behind
    // the store's back).
    const fs::path path = state_->path_of(name);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        const int err = errno;
        if (err == ENOENT) state_->forget_missing(what, name, info, path);
        throw_io_error(what + ": cannot access " + path.string(), err);
    }
    return info;
}

std::vector<BlobInfo> FileStore::list() const
{
    std::lock_guard lock(state_->mutex);
    state_->check_directories("list");
    return state_->index.list();
}

FileStore::Location FileStore::locate(std::string_view name) const
{
    stat(name);
    return {state_->path_of(name), kHeaderSize};
}

BlobRange FileStore::read(std::string_view name, std::uint64_t start, std::uint64_t end) const
{
    validate_blob_name(name);
    const std::string what = "read " + quote_name(name);
    fs::path path;
    BlobInfo seen;
    {
        std::lock_guard lock(state_->mutex);
        state_->check_directories(what);
        seen = state_->index.get(name).info;  // throws no_such_blob, also while only reserved
        path = state_->path_of(name);
    }
    auto blob = std::make_shared<OpenBlob>();
    blob->fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!blob->fd) {
        const int err = errno;
        if (err == ENOENT) {
            // Removed by the store meanwhile, or behind its back.
            std::lock_guard lock(state_->mutex);
            state_->check_directories(what);
            state_->forget_missing(what, name, seen, path);
        }
        throw_io_error(what + ": open " + path.string(), err);
    }
    // The header of the file actually opened: if the Blob was replaced since
    // the index lookup, the view is consistently of the new one.
    std::string why;
    auto info = read_header(blob->fd.get(), why);
    if (!info) throw Error(Errc::corrupt, "read " + quote_name(name) + ": " + path.string() + ": " + why);
    end = detail::checked_end(name, info->size, start, end);
    const std::uint8_t* data = nullptr;
    if (end > start) {
        std::error_code map_error;
        blob->map = MappedRegion::of_file(blob->fd.get(), kHeaderSize + start, static_cast<std::size_t>(end - start),
                                          MappedRegion::Access::read, map_error);
        if (map_error) throw_io_error("read " + quote_name(name) + ": mmap " + path.string(), map_error.value());
        data = blob->map.data();
    }
    const int fd = blob->fd.get();
    return BlobRange(std::move(*info), start, end, std::move(blob), data, fd, kHeaderSize + start);
}

std::unique_ptr<Reservation> FileStore::reserve(std::string_view name, std::uint64_t size,
                                                ReserveMode mode)
{
    validate_blob_name(name);
    if (size > static_cast<std::uint64_t>(INT64_MAX) - kHeaderSize)
        throw Error(Errc::out_of_space, "no room for blob " + quote_name(name) + ": " +
                                            std::to_string(size) + " bytes exceeds the largest file size");
    const std::string what = "reserve " + quote_name(name);
    {
        std::lock_guard lock(state_->mutex);
        state_->check_directories(what);
        state_->index.check_reservable(name, mode);
        if (!state_->index.fits(size)) state_->index.throw_out_of_space(name, size);
        state_->index.open_reservation(name, size);
    }
    std::uint64_t promised = 0;
    auto release = [&] {
        std::lock_guard lock(state_->mutex);
        state_->index.close_reservation(std::string(name), size);
        state_->promised -= std::min(promised, state_->promised);
    };
    const fs::path path = state_->tmp / (std::to_string(::getpid()) + "-" +
                                         std::to_string(state_->tmp_counter++) + ".part");
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd) {
        const int err = errno;
        release();
        throw_io_error(what + ": create " + path.string(), err);
    }
    const std::uint64_t need = kHeaderSize + size;
    const auto total = static_cast<off_t>(need);
    bool sparse = false;
    int rc = ::fallocate(fd.get(), 0, 0, total);
    if (rc != 0 && (errno == EOPNOTSUPP || errno == ENOSYS)) {
        // No fallocate (ext2, vfat, ...): the blocks are allocated as the
        // bytes are written (pwrite, never into a mapping). Check the free
        // space now so that a full file system still fails here.
        sparse = true;
        std::lock_guard lock(state_->mutex);
        const auto free = free_bytes_of(state_->tmp);
        const std::uint64_t others = state_->promised;
        if (free && (*free < others || *free - others < need)) {
            ::unlink(path.c_str());
            state_->index.close_reservation(std::string(name), size);
            throw Error(Errc::out_of_space, "no room for blob " + quote_name(name) + ": the file system of " +
                                                state_->root.string() + " has " + std::to_string(*free) +
                                                " bytes free (" + std::to_string(others) +
                                                " promised to other reservations), need " + std::to_string(need) +
                                                " (" + std::to_string(size) + " and a " +
                                                std::to_string(kHeaderSize) + "-byte header)");
        }
        promised = need;
        state_->promised += need;
        rc = ::ftruncate(fd.get(), total);
    }
    if (rc != 0) {
        const int err = errno;
        ::unlink(path.c_str());
        release();
        if (is_no_space(err))
            throw Error(Errc::out_of_space, "no room for blob " + quote_name(name) + ": the file system of " +
                                                state_->root.string() + " cannot hold " +
                                                std::to_string(size) + " more bytes (" +
                                                std::strerror(err) + ")");
        throw_io_error(what + ": allocate " + path.string(), err);
    }
    // The descriptor closes here: a reservation holds one only while a
    // transfer fills it (a client reserving without filling costs no fd).
    return std::make_unique<FileReservation>(state_, std::string(name), size, mode, path, sparse);
}

void FileStore::remove(std::string_view name)
{
    validate_blob_name(name);
    const std::string what = "remove " + quote_name(name);
    const fs::path path = state_->path_of(name);
    {
        std::lock_guard lock(state_->mutex);
        state_->check_directories(what);
        const BlobInfo seen = state_->index.get(name).info;  // no_such_blob
        // The entry goes only with the file: a failed unlink keeps both.
        if (::unlink(path.c_str()) != 0) {
            const int err = errno;
            if (err == ENOENT) state_->forget_missing(what, name, seen, path);
            throw_io_error(what + ": unlink " + path.string(), err);
        }
        state_->index.erase(name);
    }
    if (state_->sync) {
        try {
            fsync_dir(path.parent_path());
        } catch (const Error& e) {
            // Removed, as everyone now sees; only its durability is in doubt.
            spdlog::warn("file store {}: {}: {} (the removal may not survive a crash)", state_->root.string(), what,
                         e.what());
        }
    }
}

StoreUsage FileStore::usage() const
{
    std::lock_guard lock(state_->mutex);
    return state_->index.usage();
}

}  // namespace blobstreaming
