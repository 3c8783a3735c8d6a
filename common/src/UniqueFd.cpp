#include <blobstreaming/common/UniqueFd.h>

#include <unistd.h>

namespace blobstreaming {

void UniqueFd::reset(int fd) noexcept
{
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

}  // namespace blobstreaming
