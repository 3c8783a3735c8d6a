#pragma once
/// Which host this process runs on, as stores and clients compare it: a
/// store names its host (StoreStatus::host, LocalFile::host) and a process
/// reads that store's files only when the name is its own.

#include <string>
#include <string_view>

namespace blobstreaming {

/// This host's /proc/sys/kernel/random/boot_id, trimmed ("" when
/// unreadable), read once.
const std::string& boot_id();

/// Whether `host` (another process's boot_id()) names this host: never
/// when either is unknown ("").
bool on_this_host(std::string_view host);

}  // namespace blobstreaming
