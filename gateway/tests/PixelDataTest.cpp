// Where Pixel Data lies in the first bytes of a Part 10 object (PixelData.h),
// on objects written byte by byte here: explicit VR little endian with a
// sequence of undefined length (and one of VR UN, implicit inside) before the
// pixels, implicit VR little endian, encapsulated pixel data, a prefix cut
// short, an object without Pixel Data, and ones that are not Part 10 files.
#include "web/PixelData.h"

#define BOOST_TEST_MODULE PixelDataTest
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace blobstreaming::dicom::web;

namespace {

using Bytes = std::vector<std::uint8_t>;

void u16(Bytes& b, unsigned v)
{
    b.push_back(static_cast<std::uint8_t>(v & 0xFF));
    b.push_back(static_cast<std::uint8_t>(v >> 8));
}
void u32(Bytes& b, std::uint32_t v)
{
    u16(b, v & 0xFFFF);
    u16(b, v >> 16);
}
void tag(Bytes& b, unsigned group, unsigned element)
{
    u16(b, group);
    u16(b, element);
}
/// An explicit VR element; `longform` VRs have 2 reserved bytes and a 4-byte length.
void explicit_element(Bytes& b, unsigned g, unsigned e, const char* vr, const Bytes& value, bool undefined = false)
{
    tag(b, g, e);
    b.push_back(static_cast<std::uint8_t>(vr[0]));
    b.push_back(static_cast<std::uint8_t>(vr[1]));
    const std::string v(vr);
    if (v == "OB" || v == "OW" || v == "SQ" || v == "UN" || v == "UT") {
        u16(b, 0);
        u32(b, undefined ? 0xFFFFFFFF : static_cast<std::uint32_t>(value.size()));
    } else {
        u16(b, static_cast<unsigned>(value.size()));
    }
    b.insert(b.end(), value.begin(), value.end());
}
void implicit_element(Bytes& b, unsigned g, unsigned e, const Bytes& value, bool undefined = false)
{
    tag(b, g, e);
    u32(b, undefined ? 0xFFFFFFFF : static_cast<std::uint32_t>(value.size()));
    b.insert(b.end(), value.begin(), value.end());
}
Bytes text(const std::string& s)
{
    Bytes b(s.begin(), s.end());
    if (b.size() % 2) b.push_back(0);
    return b;
}
Bytes us(unsigned v)
{
    Bytes b;
    u16(b, v);
    return b;
}

/// Preamble, DICM and a File Meta Information naming `syntax`.
Bytes meta(const std::string& syntax)
{
    Bytes group;
    explicit_element(group, 0x0002, 0x0010, "UI", text(syntax));
    Bytes b(128, 0);
    for (char c : std::string("DICM")) b.push_back(static_cast<std::uint8_t>(c));
    explicit_element(b, 0x0002, 0x0000, "UL", Bytes{static_cast<std::uint8_t>(group.size()), 0, 0, 0});
    b.insert(b.end(), group.begin(), group.end());
    return b;
}

/// Rows 4, Columns 4, 1 sample, 16 bits, 3 frames, explicit VR; a sequence
/// of undefined length (one item of undefined length holding another such
/// sequence) and a UN element of undefined length before the pixels.
Bytes explicit_object(std::size_t& value_offset)
{
    Bytes b = meta("1.2.840.10008.1.2.1");
    Bytes item_content;
    explicit_element(item_content, 0x0008, 0x1150, "UI", text("1.2.3"));
    Bytes nested;  // an inner sequence of undefined length, its item of defined length
    tag(nested, 0xFFFE, 0xE000);
    u32(nested, static_cast<std::uint32_t>(item_content.size()));
    nested.insert(nested.end(), item_content.begin(), item_content.end());
    tag(nested, 0xFFFE, 0xE0DD);
    u32(nested, 0);
    explicit_element(item_content, 0x0008, 0x1115, "SQ", nested, true);
    Bytes sequence;
    tag(sequence, 0xFFFE, 0xE000);
    u32(sequence, 0xFFFFFFFF);
    sequence.insert(sequence.end(), item_content.begin(), item_content.end());
    tag(sequence, 0xFFFE, 0xE00D);
    u32(sequence, 0);
    tag(sequence, 0xFFFE, 0xE0DD);
    u32(sequence, 0);
    explicit_element(b, 0x0008, 0x1140, "SQ", sequence, true);
    // UN of undefined length: its items in implicit VR (a 4-byte length where explicit VR would read a VR).
    Bytes un;
    tag(un, 0xFFFE, 0xE000);
    u32(un, 0xFFFFFFFF);
    implicit_element(un, 0x0009, 0x1001, Bytes(6, 'x'));
    tag(un, 0xFFFE, 0xE00D);
    u32(un, 0);
    tag(un, 0xFFFE, 0xE0DD);
    u32(un, 0);
    explicit_element(b, 0x0009, 0x1010, "UN", un, true);
    explicit_element(b, 0x0028, 0x0002, "US", us(1));
    explicit_element(b, 0x0028, 0x0008, "IS", text("3 "));
    explicit_element(b, 0x0028, 0x0010, "US", us(4));
    explicit_element(b, 0x0028, 0x0011, "US", us(4));
    explicit_element(b, 0x0028, 0x0100, "US", us(16));
    value_offset = b.size() + 12;
    explicit_element(b, 0x7FE0, 0x0010, "OW", Bytes(3 * 4 * 4 * 2, 7));
    return b;
}

}  // namespace

BOOST_AUTO_TEST_CASE(explicit_vr_with_sequences_before_the_pixels)
{
    std::size_t expected = 0;
    const Bytes b = explicit_object(expected);
    PixelLayout layout;
    std::string why;
    BOOST_TEST(static_cast<int>(locate_pixel_data(b.data(), b.size(), true, layout, why)) ==
               static_cast<int>(Scan::found), why);
    BOOST_TEST(layout.value_offset == expected);
    BOOST_TEST(layout.element_offset == expected - 12);
    BOOST_TEST(layout.value_length == 96u);
    BOOST_TEST(!layout.encapsulated);
    BOOST_TEST(layout.transfer_syntax == "1.2.840.10008.1.2.1");
    BOOST_TEST(layout.frames == 3u);
    BOOST_TEST(layout.frame_bytes() == 32u);
    BOOST_TEST(native_little_endian(layout.transfer_syntax));
}

BOOST_AUTO_TEST_CASE(a_prefix_cut_before_the_pixel_header_asks_for_more)
{
    std::size_t expected = 0;
    const Bytes b = explicit_object(expected);
    for (std::size_t cut : {std::size_t(10), std::size_t(140), expected - 20, expected - 1}) {
        PixelLayout layout;
        std::string why;
        BOOST_TEST(static_cast<int>(locate_pixel_data(b.data(), cut, false, layout, why)) ==
                       static_cast<int>(Scan::need_more),
                   "cut at " << cut << ": " << why);
    }
    // The same bytes as a whole object: it ends inside an element.
    PixelLayout layout;
    std::string why;
    BOOST_TEST(static_cast<int>(locate_pixel_data(b.data(), expected - 20, true, layout, why)) ==
               static_cast<int>(Scan::malformed));
    BOOST_TEST(why == "the object ends inside an element's header or value");
}

BOOST_AUTO_TEST_CASE(implicit_vr_and_encapsulated_pixels)
{
    Bytes b = meta("1.2.840.10008.1.2");
    implicit_element(b, 0x0028, 0x0010, us(2));
    implicit_element(b, 0x0028, 0x0011, us(2));
    implicit_element(b, 0x0028, 0x0100, us(8));
    const std::size_t offset = b.size() + 8;
    implicit_element(b, 0x7FE0, 0x0010, Bytes(4, 1));
    PixelLayout layout;
    std::string why;
    BOOST_TEST(static_cast<int>(locate_pixel_data(b.data(), b.size(), true, layout, why)) ==
               static_cast<int>(Scan::found), why);
    BOOST_TEST(layout.value_offset == offset);
    BOOST_TEST(layout.frame_bytes() == 4u);
    BOOST_TEST(layout.frames == 1u);

    Bytes j = meta("1.2.840.10008.1.2.4.50");  // JPEG baseline: fragments
    explicit_element(j, 0x7FE0, 0x0010, "OB", Bytes{}, true);
    PixelLayout encapsulated;
    BOOST_TEST(static_cast<int>(locate_pixel_data(j.data(), j.size(), false, encapsulated, why)) ==
               static_cast<int>(Scan::found));
    BOOST_TEST(encapsulated.encapsulated);
    BOOST_TEST(!native_little_endian(encapsulated.transfer_syntax));
}

BOOST_AUTO_TEST_CASE(no_pixel_data_and_not_part_10)
{
    Bytes b = meta("1.2.840.10008.1.2.1");
    explicit_element(b, 0x0010, 0x0020, "LO", text("PAT1"));
    PixelLayout layout;
    std::string why;
    BOOST_TEST(static_cast<int>(locate_pixel_data(b.data(), b.size(), true, layout, why)) ==
               static_cast<int>(Scan::no_pixel_data));
    Bytes after = b;
    explicit_element(after, 0xFFFC, 0xFFFC, "OB", Bytes(2, 0));  // data set trailing padding, past Pixel Data's tag
    BOOST_TEST(static_cast<int>(locate_pixel_data(after.data(), after.size(), false, layout, why)) ==
               static_cast<int>(Scan::no_pixel_data));

    Bytes not_dicom(200, 0);
    BOOST_TEST(static_cast<int>(locate_pixel_data(not_dicom.data(), not_dicom.size(), true, layout, why)) ==
               static_cast<int>(Scan::malformed));
    BOOST_TEST(why == "not a DICOM Part 10 file (no DICM at byte 128)");

    Bytes big = meta("1.2.840.10008.1.2.2");
    BOOST_TEST(static_cast<int>(locate_pixel_data(big.data(), big.size(), false, layout, why)) ==
               static_cast<int>(Scan::malformed));
    BOOST_TEST(why == "transfer syntax 1.2.840.10008.1.2.2 (big endian or deflated) is not read in place");
}
