#pragma once
/// Rate limit for one kind of log line that an attacker can provoke at will
/// (refused and expired connections, failed accepts): a flood must not turn
/// into a flood of the log.

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace blobstreaming::server {

/// At most `burst` lines per `window`; the others are counted, and flush()
/// logs one summary line for them once the window is over. Not thread-safe
/// (the reactor thread owns every instance).
class LogThrottle {
public:
    using Clock = std::chrono::steady_clock;

    /// `what` names the suppressed lines in the summary, e.g. "refused data
    /// connections".
    explicit LogThrottle(std::string what, unsigned burst = 5, std::chrono::seconds window = std::chrono::seconds(10))
        : what_(std::move(what)), burst_(burst), window_(window)
    {}

    /// True: log this line now. False: it was counted for the summary.
    bool allow(Clock::time_point now = Clock::now())
    {
        flush(now);
        if (logged_ < burst_) {
            ++logged_;
            return true;
        }
        ++suppressed_;
        return false;
    }

    /// Ends the window when it is over: logs how many lines were suppressed
    /// in it (if any) and allows a new burst. Call it now and then (the data
    /// server's housekeeping does, every second) so that the summary of the
    /// last burst is not held back until the next event.
    void flush(Clock::time_point now = Clock::now())
    {
        if (now - started_ < window_) return;
        if (suppressed_ > 0)
            spdlog::warn("{} more {} in the last {:.0f} s (not logged one by one)", suppressed_, what_,
                         std::chrono::duration<double>(now - started_).count());
        started_ = now;
        logged_ = 0;
        suppressed_ = 0;
    }

    /// Lines suppressed in the current window.
    std::uint64_t suppressed() const noexcept { return suppressed_; }

private:
    std::string what_;
    unsigned burst_;
    Clock::duration window_;
    Clock::time_point started_{};
    unsigned logged_ = 0;
    std::uint64_t suppressed_ = 0;
};

}  // namespace blobstreaming::server
