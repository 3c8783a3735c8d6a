/// FileStore's operations (FileStore.h): stat, list, read, reserve, remove.
/// The file format is in FileHeader.cpp, opening and the index in
/// FileStoreState.cpp, a reservation's push window in FileReservation.cpp.
#include <blobstreaming/blobstore/FileStore.h>

#include "FileHeader.h"
#include "FileReservation.h"
#include "FileStoreState.h"
#include "FileSystem.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/DescriptorReserve.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/MappedRegion.h>
#include <blobstreaming/common/UniqueFd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace blobstreaming {

using detail::free_bytes_of;
using detail::is_no_space;
using detail::read_header;

namespace {

/// What a BlobRange keeps alive: the open file (shared with the store's
/// OpenFiles), whose bytes are mapped on the first data() of any of its
/// views (a pull sent with sendfile never maps them).
struct OpenBlob final : LazyMapping {
    std::shared_ptr<const detail::OpenFile> file;
    std::uint64_t start = 0;  ///< of the view, in the Blob

    const std::uint8_t* bytes() const noexcept override
    {
        const std::uint8_t* all = file->bytes();
        return all ? all + start : nullptr;
    }
    std::string error() const override
    {
        return file->map_error ? file->mmap_what + ": " + file->map_error.message() : std::string();
    }
    bool mapped() const noexcept override { return file->mapped(); }
};

/// openat(2) that, when the process is out of descriptors, has the idle
/// ones (this store's open files among them) closed and tries once more.
int open_giving_way(int dir, const char* relative, int flags)
{
    int fd = ::openat(dir, relative, flags);
    if (fd < 0 && out_of_descriptors(errno) && IdleDescriptors::release_all() > 0) fd = ::openat(dir, relative, flags);
    return fd;
}

/// Gives a new reservation file (`fd`, at `path`) the room for a Blob of
/// `size` bytes and its header: fallocate; on a file system without it
/// (ext2, vfat, ...) the blocks are allocated as the bytes are written
/// (by pwrite), so the free space is checked now, so that
/// a full file system still fails here, and the bytes are counted in
/// State::promised (`promised`, `sparse` set). Returns 0 or the errno of the
/// failed allocation; throws out_of_space (file removed, reservation closed)
/// when the free space is too small.
int allocate_file(FileStore::State& state, int fd, const fs::path& path, std::string_view name, std::uint64_t size,
                  bool& sparse, std::uint64_t& promised)
{
    constexpr std::uint64_t kHeaderSize = FileStore::kHeaderSize;
    const std::uint64_t need = kHeaderSize + size;
    const auto total = static_cast<off_t>(need);
    if (::fallocate(fd, 0, 0, total) == 0) return 0;
    if (errno != EOPNOTSUPP && errno != ENOSYS) return errno;
    sparse = true;
    std::lock_guard lock(state.mutex);
    const auto free = free_bytes_of(state.tmp);
    const std::uint64_t others = state.promised;
    if (free && (*free < others || *free - others < need)) {
        ::unlink(path.c_str());
        state.index.close_reservation(std::string(name), size);
        throw Error(Errc::out_of_space, "no room for blob " + quote_name(name) + ": the file system of " +
                                            state.root.string() + " has " + std::to_string(*free) + " bytes free (" +
                                            std::to_string(others) + " promised to other reservations), need " +
                                            std::to_string(need) + " (" + std::to_string(size) + " and a " +
                                            std::to_string(kHeaderSize) + "-byte header)");
    }
    promised = need;
    state.promised += need;
    return ::ftruncate(fd, total) == 0 ? 0 : errno;
}

}  // namespace

FileStore::FileStore(const fs::path& directory) : FileStore(directory, Options{}) {}

FileStore::FileStore(const fs::path& directory, Options options) : state_(std::make_shared<State>(directory, options))
{
    state_->open();
    state_->idle = IdleDescriptors::add([state = state_.get()] {
        std::lock_guard lock(state->mutex);
        return state->open_files.clear();
    });
    kept_ = detail::reopen_kept(state_);
    spdlog::info("file store {}: {} blob(s), {} bytes", directory.string(), state_->index.count(),
                 state_->index.used());
}

FileStore::~FileStore() = default;

std::optional<BlobInfo> FileStore::file_info(int fd, std::string& why) { return read_header(fd, why); }

const fs::path& FileStore::directory() const noexcept { return state_->root; }

std::size_t FileStore::recovered_reservations() const noexcept { return state_->recovered; }

std::uint64_t FileStore::directory_syncs() const { return state_->directory_sync.count(); }

std::uint64_t FileStore::files_created_ahead() const { return state_->spare.taken(); }

bool FileStore::file_ready_ahead() const { return state_->spare.ready(); }

std::size_t FileStore::open_files() const
{
    std::lock_guard lock(state_->mutex);
    return state_->open_files.size();
}

std::uint64_t FileStore::reads_from_open_files() const
{
    return state_->reads_kept_open.load(std::memory_order_relaxed);
}

BlobInfo FileStore::stat(std::string_view name) const
{
    validate_blob_name(name);
    std::lock_guard lock(state_->mutex);
    return *state_->confirm(name, "stat " + quote_name(name), false);
}

std::optional<BlobInfo> FileStore::find(std::string_view name) const
{
    validate_blob_name(name);
    std::lock_guard lock(state_->mutex);
    return state_->confirm(name, "stat " + quote_name(name), true);
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

std::optional<Store::LocalFile> FileStore::local_file(std::string_view name) const
{
    LocalFile out;
    out.info = stat(name);  // the name, the directories and the file checked once
    out.path = state_->path_of(name);
    out.data_offset = kHeaderSize;
    return out;
}

BlobRange FileStore::read(std::string_view name, std::uint64_t start, std::uint64_t end) const
{
    validate_blob_name(name);
    // Messages are made only when needed: a read served from a kept file
    // formats nothing.
    const auto what = [name] { return "read " + quote_name(name); };
    BlobInfo seen;
    detail::HeaderDigest digest{};
    std::shared_ptr<const detail::OpenFile> kept;
    {
        std::lock_guard lock(state_->mutex);
        const auto* entry = state_->index.find(name);
        if (!entry) state_->check_directories(what());
        // throws no_such_blob (also while only reserved)
        const auto& found = entry ? *entry : state_->index.get(name);
        seen = found.info;
        digest = found.extra.header_digest;
        kept = state_->open_files.find(name, seen);
    }
    if (kept) {
        // The file kept open is unchanged since its header was checked, and
        // still linked: served without opening or checking it again.
        struct stat st {};
        if (::fstat(kept->fd.get(), &st) == 0 && st.st_nlink > 0 && FileIdentity::of(st) == kept->identity) {
            state_->reads_kept_open.fetch_add(1, std::memory_order_relaxed);
        } else {
            std::lock_guard lock(state_->mutex);
            state_->open_files.erase(name, kept.get());
            kept.reset();
        }
    }
    std::shared_ptr<const detail::OpenFile> file = std::move(kept);
    if (!file) {
        auto opened = std::make_shared<detail::OpenFile>();
        const std::string relative = State::relative_path_of(name);
        // Relative to blobs/ as the store opened it: a file of this store's
        // own directory, never of one put in its place.
        opened->fd.reset(open_giving_way(state_->blobs_fd.get(), relative.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!opened->fd) {
            const int err = errno;
            const fs::path path = state_->path_of(name);
            {
                // A removed or replaced store directory says so; a missing file
                // was removed by the store meanwhile, or behind its back.
                std::lock_guard lock(state_->mutex);
                state_->check_directories(what());
                if (err == ENOENT) state_->forget_missing(what(), name, seen, path);
            }
            throw_io_error(what() + ": open " + path.string(), err);
        }
        // The header of the file actually opened: if the Blob was replaced
        // since the index lookup, the view is consistently of the new one. A
        // header equal to the one the index checked is not hashed again.
        std::string why;
        const detail::KnownHeader known{seen, digest};
        struct stat st {};
        const timespec taken = realtime_now();  // before the fstat that identity_settled() judges
        auto info = read_header(opened->fd.get(), why, &known, nullptr, &st);
        if (!info) throw Error(Errc::corrupt, what() + ": " + state_->path_of(name).string() + ": " + why);
        opened->info = std::move(*info);
        opened->mmap_what = what() + ": mmap " + state_->path_of(name).string();
        opened->identity = FileIdentity::of(st);
        bool kept_now = false;
        if (same_version(opened->info, seen) && identity_settled(st, taken)) {
            std::lock_guard lock(state_->mutex);
            const auto* entry = state_->index.find(name);
            kept_now = entry && same_version(entry->info, seen) && state_->open_files.keep(name, opened);
        }
        // A kept file is mapped once, for all its views: the data plane
        // sends a small range from memory (PullTransfer). The pages are
        // the page cache's; nothing is read until sent.
        if (kept_now && opened->info.size > 0) opened->bytes();
        file = std::move(opened);
    }
    end = detail::checked_end(name, file->info.size, start, end);
    auto blob = std::make_shared<OpenBlob>();
    blob->start = start;
    const LazyMapping* mapping = end > start ? blob.get() : nullptr;
    const int fd = file->fd.get();
    BlobInfo info = file->info;
    blob->file = std::move(file);
    return BlobRange(std::move(info), start, end, std::move(blob), mapping, fd, kHeaderSize + start);
}

std::unique_ptr<Reservation> FileStore::reserve(std::string_view name, std::uint64_t size, ReserveMode mode,
                                                ChecksumAlgorithm checksum)
{
    validate_blob_name(name);
    if (size > static_cast<std::uint64_t>(INT64_MAX) - kHeaderSize)
        throw Error(Errc::out_of_space, "no room for blob " + quote_name(name) + ": " + std::to_string(size) +
                                            " bytes exceeds the largest file size");
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
    const fs::path path = state_->tmp / (state_->tmp_prefix + "-" + std::to_string(state_->tmp_counter++) + ".part");
    UniqueFd fd = state_->spare.take(path);
    if (!fd) fd.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd) {
        const int err = errno;
        release();
        throw_io_error(what + ": create " + path.string(), err);
    }
    bool sparse = false;
    const int rc = allocate_file(*state_, fd.get(), path, name, size, sparse, promised);
    if (rc != 0) {
        const int err = rc;
        ::unlink(path.c_str());
        release();
        if (is_no_space(err))
            throw Error(Errc::out_of_space, "no room for blob " + quote_name(name) + ": the file system of " +
                                                state_->root.string() + " cannot hold " + std::to_string(size) +
                                                " more bytes (" + std::strerror(err) + ")");
        throw_io_error(what + ": allocate " + path.string(), err);
    }
    // The descriptor closes here: a reservation holds one only while a
    // transfer fills it (a client reserving without filling costs no fd).
    return detail::make_file_reservation(state_, std::string(name), size, mode, checksum, path, sparse);
}

BlobInfo FileStore::remove(std::string_view name)
{
    validate_blob_name(name);
    const std::string what = "remove " + quote_name(name);
    const fs::path path = state_->path_of(name);
    BlobInfo seen;
    {
        std::lock_guard lock(state_->mutex);
        state_->check_directories(what);
        seen = state_->index.get(name).info;  // no_such_blob
        // The entry goes only with the file: a failed unlink keeps both.
        if (::unlink(path.c_str()) != 0) {
            const int err = errno;
            if (err == ENOENT) state_->forget_missing(what, name, seen, path);
            throw_io_error(what + ": unlink " + path.string(), err);
        }
        state_->index.erase(name);
        state_->open_files.erase(name);
    }
    if (state_->sync) {
        try {
            state_->directory_sync.sync(path.parent_path());
        } catch (const Error& e) {
            // Removed, as everyone now sees; only its durability is in doubt.
            spdlog::warn("file store {}: {}: {} (the removal may not survive a crash)", state_->root.string(), what,
                         e.what());
        }
    }
    return seen;
}

std::vector<Store::Kept> FileStore::take_kept()
{
    std::lock_guard lock(kept_mutex_);
    return std::move(kept_);
}

StoreUsage FileStore::usage() const
{
    std::lock_guard lock(state_->mutex);
    return state_->index.usage();
}

}  // namespace blobstreaming
