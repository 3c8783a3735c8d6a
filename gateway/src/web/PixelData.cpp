#include "PixelData.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace blobstreaming::dicom::web {

namespace {

constexpr std::uint32_t kUndefined = 0xFFFFFFFF;
constexpr std::uint32_t kItem = 0xFFFEE000;
constexpr std::uint32_t kItemEnd = 0xFFFEE00D;
constexpr std::uint32_t kSequenceEnd = 0xFFFEE0DD;
constexpr std::uint32_t kPixelData = 0x7FE00010;
/// Nesting of sequences of undefined length that the walk follows.
constexpr int kMaxDepth = 32;

/// A short read: the prefix ends here.
struct Short {};
struct Bad {
    std::string why;
};

class Walker {
public:
    Walker(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

    std::uint16_t u16(std::size_t at) const
    {
        need(at, 2);
        return static_cast<std::uint16_t>(data_[at] | data_[at + 1] << 8);
    }
    std::uint32_t u32(std::size_t at) const
    {
        need(at, 4);
        return static_cast<std::uint32_t>(data_[at]) | static_cast<std::uint32_t>(data_[at + 1]) << 8 |
               static_cast<std::uint32_t>(data_[at + 2]) << 16 | static_cast<std::uint32_t>(data_[at + 3]) << 24;
    }
    std::uint32_t tag(std::size_t at) const { return static_cast<std::uint32_t>(u16(at)) << 16 | u16(at + 2); }
    std::string text(std::size_t at, std::size_t length) const
    {
        need(at, length);
        std::string s(reinterpret_cast<const char*>(data_ + at), length);
        while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
        return s;
    }
    void need(std::size_t at, std::size_t length) const
    {
        if (at + length > size_ || at + length < at) throw Short{};
    }

    /// An element's header at `at`: its tag, value offset and length.
    struct Element {
        std::uint32_t tag;
        std::size_t value;
        std::uint32_t length;
        bool unknown = false;  ///< VR UN: a value of undefined length is encoded in implicit VR (PS3.5 6.2.2)
    };
    Element element(std::size_t at, bool explicit_vr) const
    {
        const std::uint32_t t = tag(at);
        if (!explicit_vr || (t >> 16) == 0xFFFE) return {t, at + 8, u32(at + 4)};
        need(at + 4, 2);
        const char vr[3] = {static_cast<char>(data_[at + 4]), static_cast<char>(data_[at + 5]), 0};
        static const char* const kLong[] = {"OB", "OD", "OF", "OL", "OV", "OW", "SQ", "UC", "UN", "UR", "UT", "SV", "UV"};
        for (const char* l : kLong)
            if (std::strcmp(vr, l) == 0) return {t, at + 12, u32(at + 8), std::strcmp(vr, "UN") == 0};
        if (vr[0] < 'A' || vr[0] > 'Z' || vr[1] < 'A' || vr[1] > 'Z')
            throw Bad{"element (" + hex(t) + ") at byte " + std::to_string(at) + " has no valid VR"};
        return {t, at + 8, u16(at + 6)};
    }

    /// Skips the items of a value of undefined length that starts at `at`,
    /// up to and including its Sequence Delimitation Item; returns the
    /// offset after it.
    std::size_t skip_undefined(std::size_t at, bool explicit_vr, int depth) const
    {
        if (depth > kMaxDepth) throw Bad{"sequences nested more than " + std::to_string(kMaxDepth) + " deep"};
        for (;;) {
            const Element e = element(at, false);
            if (e.tag == kSequenceEnd) return e.value;
            if (e.tag != kItem) throw Bad{"expected an item in a sequence at byte " + std::to_string(at)};
            if (e.length != kUndefined) {
                at = e.value + e.length;
                continue;
            }
            at = e.value;
            for (;;) {
                const Element inner = element(at, explicit_vr);
                if (inner.tag == kItemEnd) {
                    at = inner.value;
                    break;
                }
                at = inner.length == kUndefined
                         ? skip_undefined(inner.value, explicit_vr && !inner.unknown, depth + 1)
                         : inner.value + inner.length;
            }
        }
    }

    static std::string hex(std::uint32_t tag)
    {
        char b[16];
        std::snprintf(b, sizeof b, "%04X,%04X", tag >> 16, tag & 0xFFFF);
        return b;
    }

private:
    const std::uint8_t* data_;
    std::size_t size_;
};

}  // namespace

std::uint64_t PixelLayout::frame_bytes() const noexcept
{
    const std::uint64_t bits = std::uint64_t(rows) * columns * samples_per_pixel * bits_allocated;
    return bits % 8 == 0 ? bits / 8 : 0;
}

bool native_little_endian(const std::string& ts)
{
    return ts == "1.2.840.10008.1.2" || ts == "1.2.840.10008.1.2.1";
}

Scan locate_pixel_data(const std::uint8_t* data, std::size_t size, bool whole, PixelLayout& layout, std::string& why)
{
    const Walker w(data, size);
    try {
        if (w.text(128, 4) != "DICM") {
            why = "not a DICOM Part 10 file (no DICM at byte 128)";
            return Scan::malformed;
        }
        std::size_t at = 132;
        const Walker::Element group = w.element(at, true);
        if (group.tag != 0x00020000 || group.length != 4) {
            why = "the File Meta Information does not start with its group length";
            return Scan::malformed;
        }
        const std::size_t meta_end = group.value + 4 + w.u32(group.value);
        at = group.value + 4;
        while (at < meta_end) {
            const Walker::Element e = w.element(at, true);
            if (e.tag == 0x00020010) layout.transfer_syntax = w.text(e.value, e.length);
            at = e.value + e.length;
        }
        const std::string& ts = layout.transfer_syntax;
        if (ts == "1.2.840.10008.1.2.2" || ts == "1.2.840.10008.1.2.1.99") {
            why = "transfer syntax " + ts + " (big endian or deflated) is not read in place";
            return Scan::malformed;
        }
        const bool explicit_vr = ts != "1.2.840.10008.1.2";
        at = meta_end;
        for (;;) {
            if (whole && at >= size) return Scan::no_pixel_data;
            const Walker::Element e = w.element(at, explicit_vr);
            if (e.tag == kPixelData) {
                layout.element_offset = at;
                layout.value_offset = e.value;
                layout.value_length = e.length;
                layout.encapsulated = e.length == kUndefined;
                return Scan::found;
            }
            if (e.tag > kPixelData) return Scan::no_pixel_data;
            switch (e.tag) {
            case 0x00280010: layout.rows = w.u16(e.value); break;
            case 0x00280011: layout.columns = w.u16(e.value); break;
            case 0x00280002: layout.samples_per_pixel = w.u16(e.value); break;
            case 0x00280100: layout.bits_allocated = w.u16(e.value); break;
            case 0x00280008: {
                const std::string n = w.text(e.value, e.length);
                try {
                    layout.frames = n.empty() ? 1 : std::stoull(n.substr(n.find_first_not_of(' ')));
                } catch (const std::exception&) {
                    why = "NumberOfFrames \"" + n + "\" is not a number";
                    return Scan::malformed;
                }
                break;
            }
            default: break;
            }
            at = e.length == kUndefined ? w.skip_undefined(e.value, explicit_vr && !e.unknown, 0) : e.value + e.length;
        }
    } catch (const Short&) {
        if (whole) {
            why = "the object ends inside an element's header or value";
            return Scan::malformed;
        }
        return Scan::need_more;
    } catch (const Bad& b) {
        why = b.why;
        return Scan::malformed;
    }
}

}  // namespace blobstreaming::dicom::web
