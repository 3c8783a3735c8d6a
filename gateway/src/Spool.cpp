#include "Spool.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <memory>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace blobstreaming::dicom {

namespace {

constexpr const char* kPrefix = "blob-dicomd-";
constexpr const char* kSuffix = ".dcm";
/// The process name blob-dicomd runs under (/proc/PID/comm).
constexpr const char* kProgram = "blob-dicomd";

bool all_digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

/// The process id of a spool file's name, or 0 when it is not of that form.
pid_t owner_of(const std::string& name)
{
    const std::size_t prefix = std::strlen(kPrefix), suffix = std::strlen(kSuffix);
    if (name.size() <= prefix + suffix || name.compare(0, prefix, kPrefix) != 0 ||
        name.compare(name.size() - suffix, suffix, kSuffix) != 0)
        return 0;
    const std::string middle = name.substr(prefix, name.size() - prefix - suffix);
    const std::size_t dash = middle.find('-');
    if (dash == std::string::npos) return 0;
    const std::string pid = middle.substr(0, dash), counter = middle.substr(dash + 1);
    if (!all_digits(pid) || !all_digits(counter) || pid.size() > 9) return 0;
    return static_cast<pid_t>(std::stol(pid));
}

/// Whether process `pid` is a blob-dicomd other than this one.
bool running_gateway(pid_t pid)
{
    if (pid == ::getpid()) return false;
    if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    // No /proc to tell: the process exists, its files are kept.
    if (!comm || !std::getline(comm, name)) return true;
    return name == kProgram;
}

}  // namespace

std::string spool_file(const std::string& dir, unsigned long n)
{
    return dir + "/" + kPrefix + std::to_string(::getpid()) + "-" + std::to_string(n) + kSuffix;
}

std::size_t remove_stale_spool(const std::string& dir)
{
    std::unique_ptr<DIR, int (*)(DIR*)> entries(::opendir(dir.c_str()), &::closedir);
    if (!entries) {
        spdlog::warn("--spool {}: cannot list it for stale spool files: {}", dir, std::strerror(errno));
        return 0;
    }
    std::size_t removed = 0;
    while (const dirent* entry = ::readdir(entries.get())) {
        const std::string name = entry->d_name;
        const pid_t pid = owner_of(name);
        if (pid <= 0 || running_gateway(pid)) continue;
        const std::string path = dir + "/" + name;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (::unlink(path.c_str()) != 0) {
            spdlog::warn("stale spool file {} (process {} is gone): not removed: {}", path, pid, std::strerror(errno));
            continue;
        }
        spdlog::info("stale spool file {} removed ({} bytes; process {} that received it is gone)", path, st.st_size,
                     pid);
        ++removed;
    }
    return removed;
}

}  // namespace blobstreaming::dicom
