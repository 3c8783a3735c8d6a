// A file's identity by one stat (FileIdentity.h).
#include <blobstreaming/common/FileIdentity.h>

#include <algorithm>
#include <cstdint>

namespace blobstreaming {

namespace {

bool same_time(const timespec& a, const timespec& b) noexcept { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

}  // namespace

FileIdentity FileIdentity::of(const struct stat& st) noexcept
{
    return {st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
}

bool FileIdentity::operator==(const FileIdentity& other) const noexcept
{
    return dev == other.dev && ino == other.ino && size == other.size && same_time(mtime, other.mtime) &&
           same_time(ctime, other.ctime);
}

std::chrono::nanoseconds identity_settle_time(const struct stat& st) noexcept
{
    using std::chrono::milliseconds;
    using std::chrono::nanoseconds;
    if (st.st_ctim.tv_nsec % 1'000'000 == 0) return std::chrono::seconds(3);
    static const nanoseconds tick = [] {
        timespec res{};
        if (::clock_getres(CLOCK_REALTIME_COARSE, &res) != 0) return nanoseconds(milliseconds(10));
        return nanoseconds(static_cast<std::int64_t>(res.tv_sec) * 1'000'000'000 + res.tv_nsec);
    }();
    return std::max<nanoseconds>(2 * tick, milliseconds(2));
}

timespec realtime_now() noexcept
{
    timespec t{};
    ::clock_gettime(CLOCK_REALTIME, &t);
    return t;
}

bool identity_settled(const struct stat& st, const timespec& taken) noexcept
{
    const auto ns = [](const timespec& t) {
        return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + static_cast<std::int64_t>(t.tv_nsec);
    };
    return ns(taken) - ns(st.st_ctim) > identity_settle_time(st).count();
}

}  // namespace blobstreaming
