#pragma once
/// blob-dicomd's spool (--spool): a file per instance being received or
/// sent, "blob-dicomd-PID-N.dcm" (the gateway's process id, a counter),
/// removed once its push or C-STORE sub-operation has ended. A gateway
/// killed meanwhile leaves its files: the next start removes them.

#include <cstddef>
#include <string>

namespace blobstreaming::dicom {

/// The path of this process's spool file number `n` in `dir`.
std::string spool_file(const std::string& dir, unsigned long n);

/// Removes the spool files in `dir` that a gateway no longer running made:
/// names of spool_file()'s form only, and only those whose process is gone
/// (no such process, or one that is not a blob-dicomd: its number taken
/// again), or is this one (a gateway of the same number before a restart of
/// the host; this one has written none yet). Logs what it removed and what
/// it could not. Returns how many it removed.
std::size_t remove_stale_spool(const std::string& dir);

}  // namespace blobstreaming::dicom
