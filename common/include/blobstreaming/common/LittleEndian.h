#pragma once
/// Fixed-width little-endian encoding for our on-disk header and wire frames.

#include <cstddef>
#include <cstdint>

namespace blobstreaming::le {

template <class T>
inline void put(std::uint8_t* p, T v) noexcept
{
    for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

template <class T>
inline T get(const std::uint8_t* p) noexcept
{
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>(v | static_cast<T>(T{p[i]} << (8 * i)));
    return v;
}

}  // namespace blobstreaming::le
