#include "ImageShelf.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/MappedRegion.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

namespace blobstreaming::corba {

namespace {

std::string key_of(const BlobInfo& info) { return info.name + '\n' + describe_version(info); }

[[noreturn]] void cannot(const Store::LocalFile& file, const std::string& what, int error)
{
    throw Error(Errc::io_error, "image of " + quote_name(file.info.name) + " from " + file.path.string() + ": " + what +
                                    ": " + std::strerror(error));
}

}  // namespace

UniqueFd ImageShelf::make(const Store::LocalFile& file, std::uint64_t& inode)
{
    UniqueFd in(::open(file.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!in) cannot(file, "open", errno);
    struct stat st {};
    if (::fstat(in.get(), &st) != 0) cannot(file, "fstat", errno);
    if (!S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) < file.data_offset + file.info.size)
        throw Error(Errc::io_error, "image of " + quote_name(file.info.name) + ": " + file.path.string() +
                                        " is not a file of the Blob's size");
    std::string why;
    const auto held = FileStore::file_info(in.get(), why);
    if (!held || !same_version(*held, file.info))
        throw Error(Errc::blob_changed, "image of " + quote_name(file.info.name) + ": " + file.path.string() +
                                            " no longer holds " + describe_version(file.info));
    // The memfd's name shows in /proc/PID/maps of every store that maps it.
    const std::string label = ("blob " + file.info.name).substr(0, 240);
    UniqueFd out(::memfd_create(label.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!out) cannot(file, "memfd_create", errno);
    if (::ftruncate(out.get(), static_cast<off_t>(file.info.size)) != 0) cannot(file, "ftruncate", errno);
    off_t at = static_cast<off_t>(file.data_offset);
    std::uint64_t left = file.info.size;
    while (left > 0) {
        const ssize_t n =
            ::sendfile(out.get(), in.get(), &at, static_cast<std::size_t>(std::min<std::uint64_t>(left, 1u << 30)));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) cannot(file, "sendfile", errno);
        if (n == 0)
            throw Error(Errc::io_error, "image of " + quote_name(file.info.name) + ": " + file.path.string() +
                                            " ended " + std::to_string(left) + " bytes early");
        left -= static_cast<std::uint64_t>(n);
    }
    if (::fcntl(out.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
        cannot(file, "sealing the image", errno);
    if (::fstat(out.get(), &st) != 0) cannot(file, "fstat of the image", errno);
    inode = static_cast<std::uint64_t>(st.st_ino);
    // Sealed: these are the bytes every store that maps the image will see.
    // A file that rotted is not handed out (each destination verifies too).
    std::error_code ec;
    const MappedRegion mapped = MappedRegion::of_file(out.get(), 0, static_cast<std::size_t>(file.info.size), ec);
    if (ec) cannot(file, "mapping the image", ec.value());
    const Checksum held_sum = ChecksumState::of(file.info.checksum.algorithm, mapped.data(), mapped.size());
    if (held_sum != file.info.checksum)
        throw Error(Errc::digest_mismatch, "image of " + quote_name(file.info.name) + ": the bytes of " +
                                               file.path.string() + " have checksum " + held_sum.text() +
                                               ", the Blob's is " + file.info.checksum.text() + ": not shared");
    return out;
}

bool ImageShelf::make_room(std::uint64_t room, std::chrono::steady_clock::time_point now)
{
    for (auto it = entries_.begin(); it != entries_.end();) {
        if (it->ready && now - it->last_asked > kKeep) {
            bytes_ -= it->info.size;
            it = entries_.erase(it);
        } else {
            ++it;
        }
    }
    for (auto it = entries_.end(); bytes_ + room > kMaxBytes && it != entries_.begin();) {
        --it;
        if (!it->ready) continue;
        bytes_ -= it->info.size;
        it = entries_.erase(it);
    }
    return bytes_ + room <= kMaxBytes;
}

std::optional<ImageShelf::Image> ImageShelf::image_of(const Store::LocalFile& file)
{
    if (file.info.size == 0 || file.info.size > kMaxImage) return std::nullopt;
    const std::string key = key_of(file.info);
    std::unique_lock lock(mutex_);
    for (;;) {
        auto it = entries_.begin();
        while (it != entries_.end() && it->key != key) ++it;
        if (it == entries_.end()) break;
        if (!it->ready) {
            made_.wait(lock);  // the first request is making it (or failed: then it is gone)
            continue;
        }
        it->last_asked = std::chrono::steady_clock::now();
        entries_.splice(entries_.begin(), entries_, it);
        return Image{it->fd.get(), it->inode, it->info};
    }
    if (!make_room(file.info.size, std::chrono::steady_clock::now())) return std::nullopt;
    entries_.push_front(Entry{key, UniqueFd(), 0, file.info, false, std::chrono::steady_clock::now()});
    bytes_ += file.info.size;
    const auto mine = entries_.begin();  // list iterators stay valid while others come and go
    lock.unlock();
    std::uint64_t inode = 0;
    UniqueFd fd;
    try {
        fd = make(file, inode);
    } catch (...) {
        lock.lock();
        bytes_ -= mine->info.size;
        entries_.erase(mine);
        made_.notify_all();
        throw;
    }
    lock.lock();
    mine->fd = std::move(fd);
    mine->inode = inode;
    mine->ready = true;
    mine->last_asked = std::chrono::steady_clock::now();
    made_.notify_all();
    return Image{mine->fd.get(), inode, mine->info};
}

}  // namespace blobstreaming::corba
