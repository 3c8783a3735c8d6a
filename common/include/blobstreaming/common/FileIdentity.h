#pragma once
/// A file's identity and state as one stat saw it, and when such a stat
/// may be trusted to notice any later change: for those who keep a file
/// open or mapped across uses (a FileStore's open files, the client
/// library's same-host mappings) and prove it unchanged by one stat.

#include <chrono>
#include <ctime>

#include <sys/stat.h>
#include <sys/types.h>

namespace blobstreaming {

/// Any write, truncation, chmod, link, unlink or rename of the file moves
/// its ctime (a file renamed over it unlinks it, so that too): a file whose
/// identity is unchanged, still linked, is the one at its path with the
/// bytes it had (once settled()).
struct FileIdentity {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    timespec mtime{};
    timespec ctime{};

    static FileIdentity of(const struct stat& st) noexcept;
    bool operator==(const FileIdentity& other) const noexcept;
    bool operator!=(const FileIdentity& other) const noexcept { return !(*this == other); }
};

/// How long after a file's last change a stat of it must be taken for the
/// identity it gives to notice any later change: file systems stamp ctime
/// from the kernel's coarse clock, which advances in ticks (clock_getres of
/// CLOCK_REALTIME_COARSE: 1-10 ms), truncated to their own granularity, so
/// a change in the same tick as the stat could leave the ctime as it was
/// ("racy git"). Two ticks (at least 2 ms) on a file system with
/// sub-millisecond stamps, 3 s on one whose ctime is a whole number of
/// milliseconds (FAT, ext3's small inodes, ...).
std::chrono::nanoseconds identity_settle_time(const struct stat& st) noexcept;

/// Whether the identity that `st` gives, taken at or after `taken`
/// (CLOCK_REALTIME read before the stat: realtime_now()), notices any later
/// change of the file (identity_settle_time).
bool identity_settled(const struct stat& st, const timespec& taken) noexcept;

/// CLOCK_REALTIME now, for identity_settled().
timespec realtime_now() noexcept;

}  // namespace blobstreaming
