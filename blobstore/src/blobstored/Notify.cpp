/// blobstored and systemd (Notify.h): sd_notify(3) and the journal's stream.
#include "Notify.h"

#include <spdlog/pattern_formatter.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/stat.h>
#include <syslog.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

namespace blobstreaming::daemon {
namespace {

void notify(const std::string& state) noexcept
{
    // 0: not under systemd (no $NOTIFY_SOCKET); < 0: the socket failed,
    // which the unit's start timeout reports: nothing to do here.
    (void)::sd_notify(0, state.c_str());
}

/// `%*` in the pattern: the line's syslog priority in angle brackets.
class SyslogPriority final : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override
    {
        int priority = LOG_INFO;
        switch (msg.level) {
        case spdlog::level::trace:
        case spdlog::level::debug: priority = LOG_DEBUG; break;
        case spdlog::level::info: priority = LOG_INFO; break;
        case spdlog::level::warn: priority = LOG_WARNING; break;
        case spdlog::level::err: priority = LOG_ERR; break;
        case spdlog::level::critical: priority = LOG_CRIT; break;
        default: break;
        }
        const char text[] = {'<', static_cast<char>('0' + priority), '>'};
        dest.append(text, text + sizeof text);
    }
    std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<SyslogPriority>(); }
};

}  // namespace

void notify_ready(const std::string& status) noexcept { notify("READY=1\nSTATUS=" + status); }

void notify_reloading() noexcept { notify("RELOADING=1\nSTATUS=reloading the configuration (SIGHUP)"); }

void notify_stopping(const std::string& status) noexcept { notify("STOPPING=1\nSTATUS=" + status); }

bool stderr_is_journal() noexcept
{
    const char* stream = std::getenv("JOURNAL_STREAM");
    if (!stream || !*stream) return false;
    unsigned long long dev = 0, ino = 0;
    if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
    struct stat st {};
    if (::fstat(STDERR_FILENO, &st) != 0) return false;
    return static_cast<unsigned long long>(st.st_dev) == dev && static_cast<unsigned long long>(st.st_ino) == ino;
}

std::unique_ptr<spdlog::formatter> journal_formatter()
{
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<SyslogPriority>('*').set_pattern("%*%l: %v");
    return formatter;
}

}  // namespace blobstreaming::daemon
