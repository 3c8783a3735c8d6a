#include "DurableFiles.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/UniqueFd.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace blobstreaming::bench {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err)
{
    throw Error(Errc::io_error, what + " " + path + ": " + std::strerror(err));
}

void make_directory(const std::string& path)
{
    if (::mkdir(path.c_str(), 0700) != 0) fail("cannot create directory", path, errno);
}

}  // namespace

DurableFiles::DurableFiles(const std::string& parent)
{
    std::string pattern = parent + "/bsbench-durable.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) fail("cannot create a directory in", parent + " (--dir)", errno);
    root_ = pattern;
    tmp_ = root_ + "/tmp";
    blobs_ = root_ + "/blobs";
    make_directory(tmp_);
    make_directory(blobs_);
}

DurableFiles::~DurableFiles()
{
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
    if (ec) std::fprintf(stderr, "bsbench: raw-c-durable: cannot remove %s: %s\n", root_.c_str(), ec.message().c_str());
}

void DurableFiles::store(std::uint32_t index, const std::uint8_t* data, std::uint64_t size)
{
    const std::string part = tmp_ + "/" + std::to_string(index) + ".part";
    const std::string final_path = blobs_ + "/" + std::to_string(index);
    {
        UniqueFd fd(::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        if (!fd) fail("create", part, errno);
        for (std::uint64_t done = 0; done < size;) {
            const ssize_t n = ::write(fd.get(), data + done, size - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) fail("write", part, n < 0 ? errno : ENOSPC);
            done += static_cast<std::uint64_t>(n);
        }
        if (::fdatasync(fd.get()) != 0) fail("fdatasync", part, errno);
    }
    if (::rename(part.c_str(), final_path.c_str()) != 0) fail("rename into " + final_path + ":", part, errno);
    UniqueFd dir(::open(blobs_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) fail("open directory", blobs_, errno);
    if (::fsync(dir.get()) != 0) fail("fsync directory", blobs_, errno);
}

std::vector<Digest> DurableFiles::digests_then_clear(std::uint32_t count)
{
    std::vector<Digest> out;
    out.reserve(count);
    std::vector<std::uint8_t> buffer(1 << 20);
    for (std::uint32_t i = 0; i < count; ++i) {
        const std::string path = blobs_ + "/" + std::to_string(i);
        Sha256 hash;
        UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd && errno != ENOENT) fail("open", path, errno);
        while (fd) {
            const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) fail("read", path, errno);
            if (n == 0) break;
            hash.update(buffer.data(), static_cast<std::size_t>(n));
        }
        out.push_back(hash.finish());
        if (fd && ::unlink(path.c_str()) != 0) fail("unlink", path, errno);
    }
    return out;
}

}  // namespace blobstreaming::bench
