#include <blobstreaming/transporter/daemon/LogFile.h>

#include <blobstreaming/common/Error.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace blobstreaming::daemon {

UniqueFd LogFileSink::open_file(const std::string& path, std::string& why)
{
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640));
    if (!fd) why = "cannot open the log file " + path + ": " + std::strerror(errno);
    return fd;
}

LogFileSink::LogFileSink(std::string path) : path_(std::move(path))
{
    std::string why;
    fd_ = open_file(path_, why);
    if (!fd_) throw Error(Errc::io_error, "--log-file: " + why);
}

std::string LogFileSink::reopen()
{
    std::string why;
    UniqueFd fd = open_file(path_, why);
    std::lock_guard<std::mutex> lock(mutex_);
    if (fd) fd_ = std::move(fd);
    return why;
}

void LogFileSink::sink_it_(const spdlog::details::log_msg& msg)
{
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    const char* p = line.data();
    std::size_t left = line.size();
    // O_APPEND: each write lands at the end, whoever else appends. A line
    // that cannot be written (a full disk) is dropped: the daemon serves on.
    while (left > 0) {
        const ssize_t n = ::write(fd_.get(), p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

}  // namespace blobstreaming::daemon
