#include <blobstreaming/common/Host.h>

#include <fstream>

namespace blobstreaming {

const std::string& boot_id()
{
    static const std::string id = [] {
        std::ifstream in("/proc/sys/kernel/random/boot_id");
        std::string line;
        std::getline(in, line);
        const auto first = line.find_first_not_of(" \t\r\n");
        if (first == std::string::npos) return std::string();
        return line.substr(first, line.find_last_not_of(" \t\r\n") - first + 1);
    }();
    return id;
}

bool on_this_host(std::string_view host) { return !host.empty() && host == boot_id(); }

}  // namespace blobstreaming
