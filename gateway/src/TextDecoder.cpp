#include "TextDecoder.h"

#include <blobstreaming/common/Text.h>

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcvr.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include <iconv.h>

namespace blobstreaming::dicom {

namespace {

/// A NUL inside a value written `\x00`: PostgreSQL's text holds none, and
/// libpq's parameters would end there.
std::string without_nul(std::string text)
{
    for (std::size_t at = text.find('\0'); at != std::string::npos; at = text.find('\0', at + 4))
        text.replace(at, 1, "\\x00");
    return text;
}

/// Whether the Specific Character Set is a Japanese ISO 2022 one that
/// DCMTK over glibc's iconv does not offer (it names JIS X 0208 "ISO-IR-87",
/// which glibc lacks): IR 87 or IR 159 with the default set or IR 13
/// (JIS X 0201) and nothing else. `katakana`: IR 13 is among them.
bool iso2022_japanese(const std::string& charset, bool& katakana)
{
    std::istringstream values(charset);
    std::string value;
    bool kanji = false;
    katakana = false;
    while (std::getline(values, value, '\\')) {
        const auto begin = value.find_first_not_of(' '), end = value.find_last_not_of(' ');
        value = begin == std::string::npos ? std::string() : value.substr(begin, end - begin + 1);
        if (value == "ISO 2022 IR 87" || value == "ISO 2022 IR 159") kanji = true;
        else if (value == "ISO 2022 IR 13") katakana = true;
        else if (!value.empty() && value != "ISO 2022 IR 6") return false;
    }
    return kanji;
}

/// `bytes` converted by glibc's iconv from `from_code` to UTF-8, or nullopt
/// when a sequence is not valid there.
std::optional<std::string> iconv_utf8(const char* from_code, const std::string& bytes)
{
    const iconv_t cd = ::iconv_open("UTF-8", from_code);
    if (cd == reinterpret_cast<iconv_t>(-1)) return std::nullopt;
    std::string out(bytes.size() * 4 + 16, '\0');  // a 2-byte JIS character is 3 bytes of UTF-8
    char* in = const_cast<char*>(bytes.data());
    std::size_t in_left = bytes.size();
    char* o = out.data();
    std::size_t out_left = out.size();
    std::size_t r = ::iconv(cd, &in, &in_left, &o, &out_left);
    if (r != static_cast<std::size_t>(-1)) r = ::iconv(cd, nullptr, nullptr, &o, &out_left);
    ::iconv_close(cd);
    if (r == static_cast<std::size_t>(-1) || in_left != 0) return std::nullopt;
    out.resize(out.size() - out_left);
    return out;
}

/// A value in the Japanese ISO 2022 sets (PS3.5 6.1.2.5.3, Annex H): the
/// two-byte runs (ESC $ B JIS X 0208, ESC $ ( D JIS X 0212) through glibc's
/// ISO-2022-JP-2 decoder, the one-byte ones ASCII (ESC ( B; JIS X 0201
/// Romaji, ESC ( J, read as ASCII) and, with IR 13, half-width katakana
/// (bytes A1..DF: U+FF61..U+FF9F). nullopt for anything else.
std::optional<std::string> decode_japanese(const std::string& raw, bool katakana)
{
    std::string out, run, escape;
    auto flush = [&]() -> bool {
        if (run.empty()) return true;
        const auto text = iconv_utf8("ISO-2022-JP-2", escape + run + "\x1b(B");
        if (!text) return false;
        out += *text;
        run.clear();
        return true;
    };
    for (std::size_t i = 0; i < raw.size();) {
        if (raw[i] == '\x1b') {
            if (!flush()) return std::nullopt;
            escape.clear();
            for (const char* known : {"\x1b$B", "\x1b$@", "\x1b$(D", "\x1b(B", "\x1b(J", "\x1b)I"}) {
                if (raw.compare(i, std::char_traits<char>::length(known), known) == 0) escape = known;
            }
            if (escape.empty()) return std::nullopt;  // another set's switch
            i += escape.size();
            if (escape[1] != '$') escape.clear();  // back to one byte a character
            continue;
        }
        const auto b = static_cast<unsigned char>(raw[i++]);
        if (!escape.empty()) run += static_cast<char>(b);
        else if (b < 0x80) out += static_cast<char>(b);
        else if (katakana && b >= 0xA1 && b <= 0xDF) {
            const unsigned cp = 0xFF61 + (b - 0xA1);  // three bytes of UTF-8
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else return std::nullopt;
    }
    if (!flush()) return std::nullopt;
    return out;
}

}  // namespace

TextDecoder::TextDecoder(DcmItem& data_set)
{
    OFString charset;
    data_set.findAndGetOFStringArray(DCM_SpecificCharacterSet, charset);
    charset_ = charset.c_str();
    japanese_ = iso2022_japanese(charset_, katakana_);
    if (japanese_) return;
    const OFCondition selected = converter_.selectCharacterSet(charset, "ISO_IR 192");
    if (selected.bad())
        select_problem_ =
            "Specific Character Set \"" + printable(charset_) + "\" cannot be decoded: " + selected.text();
}

bool TextDecoder::decode(DcmElement& element, std::string& out)
{
    problem_.clear();
    OFString value;
    element.getOFStringArray(value);
    const std::string raw = without_nul(std::string(value.c_str(), value.length()));
    const bool ascii = std::all_of(raw.begin(), raw.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x80 && c != 0x1B;  // ESC: an ISO 2022 switch
    });
    // Only the text VRs are affected by the character set (PS3.5 6.1.2.3).
    if (ascii || !element.isAffectedBySpecificCharacterSet()) {
        out = utf8_escaped(raw);
        if (out == raw) return true;
        problem_ = "bytes outside the character repertoire of its VR";
        return false;
    }
    if (japanese_) {
        if (const auto text = decode_japanese(raw, katakana_); text && valid_utf8(*text)) {
            out = *text;
            return true;
        }
        out = utf8_escaped(raw);
        problem_ = "not valid in Specific Character Set \"" + printable(charset_) + "\" (ISO 2022 JIS)";
        return false;
    }
    if (!select_problem_.empty()) {
        out = utf8_escaped(raw);
        problem_ = select_problem_;
        return false;
    }
    // Person names switch back to the default set at each component and group.
    const OFString delimiters = element.getVR() == EVR_PN ? "\\^=" : "\\";
    OFString converted;
    const OFCondition c = converter_.convertString(raw.data(), raw.size(), converted, delimiters);
    const std::string text(converted.c_str(), converted.length());
    if (c.good() && valid_utf8(text)) {
        out = text;
        return true;
    }
    out = utf8_escaped(raw);
    problem_ = "not valid in Specific Character Set \"" + printable(charset_.empty() ? "ISO_IR 6" : charset_) + "\"" +
               (c.bad() ? std::string(" (") + c.text() + ")" : std::string());
    return false;
}

bool TextDecoder::has_inner_nul(DcmElement& element)
{
    char* bytes = nullptr;
    Uint32 length = 0;
    if (element.getString(bytes, length).bad() || !bytes) return false;
    while (length > 0 && bytes[length - 1] == '\0') --length;
    return std::find(bytes, bytes + length, '\0') != bytes + length;
}

}  // namespace blobstreaming::dicom
