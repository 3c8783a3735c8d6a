#pragma once
/// Where a stored instance's Pixel Data lies, from the first bytes of its
/// Blob (WADO-RS frames and bulk data are byte ranges of the Blob; nothing
/// after the Pixel Data element's header is read). A walk over the top-level
/// elements of a Part 10 file: the File Meta Information (explicit VR
/// little endian), then the data set in its transfer syntax (implicit or
/// explicit VR little endian, encapsulated pixel data included); sequences
/// of undefined length are skipped item by item.

#include <cstddef>
#include <cstdint>
#include <string>

namespace blobstreaming::dicom::web {

struct PixelLayout {
    std::string transfer_syntax;
    std::uint64_t element_offset = 0;  ///< of the Pixel Data element (its tag), in the Blob
    std::uint64_t value_offset = 0;    ///< of Pixel Data's value, in the Blob; 0: no Pixel Data
    std::uint64_t value_length = 0;  ///< its declared length (not meaningful when encapsulated)
    bool encapsulated = false;       ///< undefined length: fragments (a compressed transfer syntax)
    unsigned rows = 0, columns = 0, samples_per_pixel = 1, bits_allocated = 0;
    std::uint64_t frames = 1;  ///< NumberOfFrames, 1 when absent

    /// Bytes of one native frame (Rows x Columns x Samples x Bits Allocated / 8);
    /// 0 when that is not a whole number of bytes or an attribute is missing.
    std::uint64_t frame_bytes() const noexcept;
};

enum class Scan {
    found,          ///< `layout` filled
    need_more,      ///< the prefix ends before the Pixel Data element's header
    no_pixel_data,  ///< the whole object was given and has none
    malformed,      ///< `why` says what
};

/// Scans `size` bytes at the start of an instance's Blob; `whole`: they are
/// the whole Blob.
Scan locate_pixel_data(const std::uint8_t* data, std::size_t size, bool whole, PixelLayout& layout, std::string& why);

/// Whether `transfer_syntax` holds native pixel data readable as stored:
/// implicit or explicit VR little endian.
bool native_little_endian(const std::string& transfer_syntax);

}  // namespace blobstreaming::dicom::web
