#pragma once
/// --log-file FILE of blobstored and blob-dicomd: the daemon's log appended
/// to FILE, opened again on SIGHUP so that logrotate (or an administrator)
/// can move the old file away without copying it.

#include <blobstreaming/common/UniqueFd.h>

#include <spdlog/sinks/base_sink.h>

#include <mutex>
#include <string>

namespace blobstreaming::daemon {

/// Thread-safe (spdlog's base_sink locks around every line and reopen()).
class LogFileSink : public spdlog::sinks::base_sink<std::mutex> {
public:
    /// Opens (creates, mode 0640) `path` for appending. Throws
    /// Error(Errc::io_error) naming the file and the reason.
    explicit LogFileSink(std::string path);

    /// Opens `path` again and writes to it from now on. When that fails the
    /// old file stays in use and the reason is returned ("" on success).
    std::string reopen();

    const std::string& path() const noexcept { return path_; }

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override;
    void flush_() override {}

private:
    static UniqueFd open_file(const std::string& path, std::string& why);

    const std::string path_;
    UniqueFd fd_;
};

}  // namespace blobstreaming::daemon
