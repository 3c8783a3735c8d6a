#pragma once
/// One mmap(2) region, unmapped on destruction: the only owner of a mapping
/// in the tree (a FileStore's read views, client file sources and same-host
/// reads, MemoryStore's large buffers).

#include <cstddef>
#include <cstdint>
#include <system_error>

namespace blobstreaming {

class MappedRegion {
public:
    /// Maps bytes [offset, offset + length) of the open file `fd`, read-only
    /// and shared with the file. `offset` need not be page-aligned: the mapping starts
    /// at the page that holds it and data() points at `offset`. A `length`
    /// of 0 gives an empty region and maps nothing. On failure sets `ec`
    /// (errno of mmap) and returns an empty region.
    static MappedRegion of_file(int fd, std::uint64_t offset, std::size_t length, std::error_code& ec) noexcept;
    /// `length` > 0 bytes of private zero-filled memory (huge pages
    /// advised). On failure sets `ec` and returns an empty region.
    static MappedRegion anonymous(std::size_t length, std::error_code& ec) noexcept;
    /// As anonymous(), without reserving swap (MAP_NORESERVE): address
    /// space that takes memory only as its pages are written, for bytes
    /// whose number is known only at their end (an open-ended reservation).
    static MappedRegion address_space(std::size_t length, std::error_code& ec) noexcept;

    MappedRegion() = default;
    ~MappedRegion() { reset(); }
    MappedRegion(MappedRegion&& other) noexcept;
    MappedRegion& operator=(MappedRegion&& other) noexcept;
    MappedRegion(const MappedRegion&) = delete;
    MappedRegion& operator=(const MappedRegion&) = delete;

    /// The first requested byte; nullptr when empty.
    std::uint8_t* data() const noexcept { return data_; }
    /// The requested length.
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return data_ == nullptr; }
    explicit operator bool() const noexcept { return data_ != nullptr; }
    /// madvise(2) over the whole mapping; advisory, errors ignored.
    void advise(int advice) const noexcept;
    void reset() noexcept;
    /// Unmaps the whole pages beyond the first `keep` bytes (<= size()),
    /// which then is the size.
    void trim(std::size_t keep) noexcept;

private:
    MappedRegion(void* base, std::size_t mapped, std::size_t lead, std::size_t size) noexcept;

    void* base_ = nullptr;    ///< what mmap returned
    std::size_t mapped_ = 0;  ///< what mmap mapped
    std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace blobstreaming
