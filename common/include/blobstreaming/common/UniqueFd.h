#pragma once
/// Move-only owner of a file descriptor.

#include <utility>

namespace blobstreaming {

class UniqueFd {
public:
    UniqueFd() noexcept = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    ~UniqueFd() { reset(); }
    UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept
    {
        if (this != &other) reset(other.release());
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;

    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    int release() noexcept { return std::exchange(fd_, -1); }
    /// Closes the current descriptor (errors ignored: nothing to do about
    /// them after fsync) and takes `fd`.
    void reset(int fd = -1) noexcept;

private:
    int fd_ = -1;
};

}  // namespace blobstreaming
