#include <blobstreaming/common/MappedRegion.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace blobstreaming {

MappedRegion::MappedRegion(void* base, std::size_t mapped, std::size_t lead, std::size_t size) noexcept
    : base_(base), mapped_(mapped), data_(static_cast<std::uint8_t*>(base) + lead), size_(size)
{}

MappedRegion MappedRegion::of_file(int fd, std::uint64_t offset, std::size_t length, std::error_code& ec) noexcept
{
    ec.clear();
    if (length == 0) return {};
    static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t start = offset - offset % page;
    const auto lead = static_cast<std::size_t>(offset - start);
    void* p = ::mmap(nullptr, lead + length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
    if (p == MAP_FAILED) {
        ec = std::error_code(errno, std::generic_category());
        return {};
    }
    return MappedRegion(p, lead + length, lead, length);
}

MappedRegion MappedRegion::anonymous(std::size_t length, std::error_code& ec) noexcept
{
    ec.clear();
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        ec = std::error_code(errno, std::generic_category());
        return {};
    }
    MappedRegion region(p, length, 0, length);
    region.advise(MADV_HUGEPAGE);  // without THP the mapping stays in 4 KiB pages
    return region;
}

MappedRegion MappedRegion::address_space(std::size_t length, std::error_code& ec) noexcept
{
    ec.clear();
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        ec = std::error_code(errno, std::generic_category());
        return {};
    }
    MappedRegion region(p, length, 0, length);
    region.advise(MADV_HUGEPAGE);
    return region;
}

void MappedRegion::trim(std::size_t keep) noexcept
{
    if (!base_ || keep >= size_) return;
    static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t lead = static_cast<std::size_t>(data_ - static_cast<std::uint8_t*>(base_));
    const std::size_t kept = std::max<std::size_t>((lead + keep + page - 1) / page * page, page);
    if (kept < mapped_ && ::munmap(static_cast<std::uint8_t*>(base_) + kept, mapped_ - kept) == 0) mapped_ = kept;
    size_ = keep;
}

MappedRegion::MappedRegion(MappedRegion&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), mapped_(std::exchange(other.mapped_, 0)),
      data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0))
{}

MappedRegion& MappedRegion::operator=(MappedRegion&& other) noexcept
{
    if (this != &other) {
        reset();
        base_ = std::exchange(other.base_, nullptr);
        mapped_ = std::exchange(other.mapped_, 0);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

void MappedRegion::advise(int advice) const noexcept
{
    if (base_) ::madvise(base_, mapped_, advice);
}

void MappedRegion::reset() noexcept
{
    if (base_) ::munmap(base_, mapped_);
    base_ = nullptr;
    mapped_ = 0;
    data_ = nullptr;
    size_ = 0;
}

}  // namespace blobstreaming
