#include <blobstreaming/blobstore/FileStore.h>

#include "StoreIndex.h"

#include <blobstreaming/blobstore/BlobName.h>
#include <blobstreaming/blobstore/Error.h>
#include <blobstreaming/blobstore/LittleEndian.h>
#include <blobstreaming/blobstore/UniqueFd.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

/// A mapping, unmapped on destruction.
struct Mapping {
    void* addr = MAP_FAILED;
    std::size_t length = 0;
    Mapping() = default;
    Mapping(void* a, std::size_t l) : addr(a), length(l) {}
    Mapping(Mapping&& o) noexcept : addr(std::exchange(o.addr, MAP_FAILED)), length(o.length) {}
    Mapping& operator=(Mapping&& o) noexcept
    {
        if (this != &o) {
            reset();
            addr = std::exchange(o.addr, MAP_FAILED);
            length = o.length;
        }
        return *this;
    }
    ~Mapping() { reset(); }
    void reset()
    {
        if (addr != MAP_FAILED) ::munmap(addr, length);
        addr = MAP_FAILED;
    }
    explicit operator bool() const { return addr != MAP_FAILED; }
};

/// What a BlobRange keeps alive: the open file and the mapped range.
struct OpenBlob {
    UniqueFd fd;
    Mapping map;
};

struct NoExtra {};

}  // namespace

struct FileStore::State {
    fs::path root;
    fs::path blobs;
    fs::path tmp;
    bool sync;
    UniqueFd lock_fd;
    std::size_t recovered = 0;
    std::atomic<std::uint64_t> tmp_counter{0};
    mutable std::mutex mutex;
    detail::StoreIndex<NoExtra> index;

    State(const fs::path& dir, const Options& o)
        : root(dir), blobs(dir / "blobs"), tmp(dir / "tmp"), sync(o.sync), index(o.capacity)
    {
    }

    fs::path path_of(std::string_view name) const { return blobs / fanout(name) / std::string(name); }

    void open();
    void recover();
    void scan();
};

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
    FileReservation(std::shared_ptr<FileStore::State> state, std::string name, std::uint64_t size,
                    ReserveMode mode, fs::path path, UniqueFd fd)
        : Reservation(std::move(name), size), state_(std::move(state)), mode_(mode),
          path_(std::move(path)), fd_(std::move(fd))
    {
    }
    ~FileReservation() override { abort(); }

private:
    Window do_window(std::uint64_t offset, std::size_t max, std::error_code& ec) override
    {
        const std::uint64_t file_offset = kHeaderSize + offset;
        if (!map_ || file_offset < map_start_ || file_offset >= map_start_ + map_.length) {
            map_.reset();
            const std::uint64_t start = file_offset / kWindowSize * kWindowSize;
            const std::uint64_t file_end = kHeaderSize + size();
            const auto length = static_cast<std::size_t>(std::min(kWindowSize, file_end - start));
            void* addr = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(),
                                static_cast<off_t>(start));
            if (addr == MAP_FAILED) {
                ec = std::error_code(errno, std::generic_category());
                return {};
            }
            map_ = Mapping(addr, length);
            map_start_ = start;
        }
        const std::uint64_t in_map = file_offset - map_start_;
        const auto available = static_cast<std::size_t>(map_.length - in_map);
        return {static_cast<std::uint8_t*>(map_.addr) + in_map, std::min(max, available)};
    }

    BlobInfo do_commit(const Digest& digest) override
    {
        map_.reset();
        BlobInfo info{name(), size(), digest, std::chrono::system_clock::now()};
        std::uint8_t header[kHeaderSize];
        encode_header(info, header);
        if (::pwrite(fd_.get(), header, sizeof header, 0) != static_cast<ssize_t>(sizeof header))
            throw_io_error("commit " + quote_name(name()) + ": write header to " + path_.string(), errno);
        if (state_->sync && ::fdatasync(fd_.get()) != 0)
            throw_io_error("commit " + quote_name(name()) + ": fsync " + path_.string(), errno);
        fd_.reset();

        const fs::path final_path = state_->path_of(name());
        const fs::path dir = final_path.parent_path();
        std::error_code ec;
        fs::create_directory(dir, ec);
        if (ec) throw Error(Errc::io_error, "commit " + quote_name(name()) + ": cannot create " + dir.string() + ": " + ec.message());
        {
            std::lock_guard lock(state_->mutex);
            if (mode_ == ReserveMode::create && state_->index.find(name()))
                throw Error(Errc::already_exists, "commit " + quote_name(name()) +
                                                      ": a blob of that name was committed meanwhile");
            if (::rename(path_.c_str(), final_path.c_str()) != 0)
                throw_io_error("commit " + quote_name(name()) + ": rename into " + final_path.string(), errno);
            state_->index.close_reservation(name(), size());
            closed_ = true;
            state_->index.publish({info, {}});
        }
        if (state_->sync) fsync_dir(dir);
        return info;
    }

    void do_abort() noexcept override
    {
        map_.reset();
        fd_.reset();
        if (closed_) return;
        ::unlink(path_.c_str());
        std::lock_guard lock(state_->mutex);
        state_->index.close_reservation(name(), size());
        closed_ = true;
    }

    std::shared_ptr<FileStore::State> state_;
    ReserveMode mode_;
    fs::path path_;
    UniqueFd fd_;
    Mapping map_;
    std::uint64_t map_start_ = 0;
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
    std::lock_guard lock(state_->mutex);
    return state_->index.get(name).info;
}

std::vector<BlobInfo> FileStore::list() const
{
    std::lock_guard lock(state_->mutex);
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
    fs::path path;
    {
        std::lock_guard lock(state_->mutex);
        state_->index.get(name);  // throws no_such_blob, also while only reserved
        path = state_->path_of(name);
    }
    auto blob = std::make_shared<OpenBlob>();
    blob->fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!blob->fd) {
        if (errno == ENOENT)
            throw Error(Errc::no_such_blob, "blob " + quote_name(name) + " not found (removed meanwhile)");
        throw_io_error("read " + quote_name(name) + ": open " + path.string(), errno);
    }
    // The header of the file actually opened: if the Blob was replaced since
    // the index lookup, the view is consistently of the new one.
    std::string why;
    auto info = read_header(blob->fd.get(), why);
    if (!info) throw Error(Errc::corrupt, "read " + quote_name(name) + ": " + path.string() + ": " + why);
    end = detail::checked_end(name, info->size, start, end);
    const std::uint8_t* data = nullptr;
    if (end > start) {
        static const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
        const std::uint64_t file_start = kHeaderSize + start;
        const std::uint64_t map_start = file_start / page * page;
        const auto length = static_cast<std::size_t>(kHeaderSize + end - map_start);
        void* addr = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, blob->fd.get(),
                            static_cast<off_t>(map_start));
        if (addr == MAP_FAILED) throw_io_error("read " + quote_name(name) + ": mmap " + path.string(), errno);
        blob->map = Mapping(addr, length);
        data = static_cast<const std::uint8_t*>(addr) + (file_start - map_start);
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
    {
        std::lock_guard lock(state_->mutex);
        state_->index.check_reservable(name, mode);
        if (!state_->index.fits(size)) state_->index.throw_out_of_space(name, size);
        state_->index.open_reservation(name, size);
    }
    auto release = [&] {
        std::lock_guard lock(state_->mutex);
        state_->index.close_reservation(std::string(name), size);
    };
    const fs::path path = state_->tmp / (std::to_string(::getpid()) + "-" +
                                         std::to_string(state_->tmp_counter++) + ".part");
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd) {
        const int err = errno;
        release();
        throw_io_error("reserve " + quote_name(name) + ": create " + path.string(), err);
    }
    const auto total = static_cast<off_t>(kHeaderSize + size);
    int rc = ::fallocate(fd.get(), 0, 0, total);
    if (rc != 0 && (errno == EOPNOTSUPP || errno == ENOSYS)) rc = ::ftruncate(fd.get(), total);
    if (rc != 0) {
        const int err = errno;
        ::unlink(path.c_str());
        release();
        if (err == ENOSPC || err == EDQUOT || err == EFBIG)
            throw Error(Errc::out_of_space, "no room for blob " + quote_name(name) + ": the file system of " +
                                                state_->root.string() + " cannot hold " +
                                                std::to_string(size) + " more bytes (" +
                                                std::strerror(err) + ")");
        throw_io_error("reserve " + quote_name(name) + ": allocate " + path.string(), err);
    }
    return std::make_unique<FileReservation>(state_, std::string(name), size, mode, path, std::move(fd));
}

void FileStore::remove(std::string_view name)
{
    validate_blob_name(name);
    const fs::path path = state_->path_of(name);
    {
        std::lock_guard lock(state_->mutex);
        state_->index.erase(name);
        if (::unlink(path.c_str()) != 0 && errno != ENOENT)
            throw_io_error("remove " + quote_name(name) + ": unlink " + path.string(), errno);
    }
    if (state_->sync) fsync_dir(path.parent_path());
}

StoreUsage FileStore::usage() const
{
    std::lock_guard lock(state_->mutex);
    return state_->index.usage();
}

}  // namespace blobstreaming
