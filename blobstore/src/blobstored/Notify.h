#pragma once
/// blobstored under systemd (blobstore/systemd/blobstored@.service,
/// Type=notify): the service manager's notification socket and the journal.
/// Outside systemd (no $NOTIFY_SOCKET, no $JOURNAL_STREAM) every call is a
/// no-op and the logs keep their own timestamps.

#include <spdlog/spdlog.h>

#include <string>

namespace blobstreaming::daemon {

/// READY=1 with STATUS=`status`: the store is registered in the Naming
/// Service and serves. Also ends a reload (after reloading()).
void notify_ready(const std::string& status) noexcept;
/// RELOADING=1: SIGHUP's reread of the configuration begins.
void notify_reloading() noexcept;
/// STOPPING=1 with STATUS=`status`: shutdown begins.
void notify_stopping(const std::string& status) noexcept;

/// True when standard error is the journal's stream ($JOURNAL_STREAM names
/// its device and inode), i.e. started by systemd with the default output.
bool stderr_is_journal() noexcept;

/// A formatter for a logger that writes to the journal: `<N>` (the syslog
/// priority of the line's level, which journald reads and strips) and the
/// message, with no timestamp or program name of its own (journald adds both).
std::unique_ptr<spdlog::formatter> journal_formatter();

}  // namespace blobstreaming::daemon
