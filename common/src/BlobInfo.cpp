#include <blobstreaming/common/BlobInfo.h>

#include <cstdio>
#include <ctime>

namespace blobstreaming {

bool same_version(const BlobInfo& a, const BlobInfo& b) noexcept
{
    return a.size == b.size && a.checksum == b.checksum && a.committed == b.committed;
}

std::string describe_version(const BlobInfo& info)
{
    using namespace std::chrono;
    const auto ns = duration_cast<nanoseconds>(info.committed.time_since_epoch()).count();
    const std::time_t seconds = static_cast<std::time_t>(ns / 1000000000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char when[64];
    std::snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", utc.tm_year + 1900, utc.tm_mon + 1,
                  utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<long long>(ns % 1000000000));
    return std::to_string(info.size) + " bytes, " + info.checksum.brief() + ", committed " + when;
}

}  // namespace blobstreaming
