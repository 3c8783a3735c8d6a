/// File system queries of the file store (FileSystem.h).
#include "FileSystem.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/UniqueFd.h>

#include <cerrno>

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace blobstreaming::detail {

bool is_no_space(int err) { return err == ENOSPC || err == EDQUOT || err == EFBIG; }

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

void fsync_dir(const fs::path& dir)
{
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) throw_io_error("open directory " + dir.string(), errno);
    if (::fsync(fd.get()) != 0) throw_io_error("fsync directory " + dir.string(), errno);
}

}  // namespace blobstreaming::detail
