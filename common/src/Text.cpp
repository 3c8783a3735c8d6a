#include <blobstreaming/common/Text.h>


namespace blobstreaming {

namespace {

/// The length of the well-formed UTF-8 sequence at `text[i]`, or 0.
std::size_t sequence_length(std::string_view text, std::size_t i)
{
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const unsigned char c = b(0);
    if (c < 0x80) return 1;
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range (RFC 3629)
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if (i + n > text.size()) return 0;
    if (b(1) < lo || b(1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if ((b(k) & 0xC0) != 0x80) return 0;
    return n;
}

/// `\x` (or `\u00`) and two hex digits, uppercase or not.
void hex(std::string& out, const char* prefix, unsigned value, bool upper)
{
    static const char kUpper[] = "0123456789ABCDEF", kLower[] = "0123456789abcdef";
    const char* digits = upper ? kUpper : kLower;
    out += prefix;
    out += digits[(value >> 4) & 0xF];
    out += digits[value & 0xF];
}

}  // namespace

bool valid_utf8(std::string_view text)
{
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = sequence_length(text, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

std::string utf8_escaped(std::string_view text)
{
    if (valid_utf8(text)) return std::string(text);
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = sequence_length(text, i);
        if (n == 0) {
            hex(out, "\\x", static_cast<unsigned char>(text[i]), true);
            ++i;
        } else {
            out.append(text, i, n);
            i += n;
        }
    }
    return out;
}

std::string printable(std::string_view text)
{
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        const std::size_t n = sequence_length(text, i);
        if (n == 0) {
            hex(out, "\\x", c, true);
            ++i;
            continue;
        }
        if (n == 1 && (c < 0x20 || c == 0x7F)) {
            if (c == '\n') out += "\\n";
            else if (c == '\r') out += "\\r";
            else if (c == '\t') out += "\\t";
            else hex(out, "\\x", c, false);
        } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
            hex(out, "\\u00", static_cast<unsigned char>(text[i + 1]), false);  // C1 control
        } else {
            out.append(text, i, n);
        }
        i += n;
    }
    return out;
}

}  // namespace blobstreaming
