#include <blobstreaming/cli/Values.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace blobstreaming::cli {
namespace {

constexpr const char* kSizeSyntax = "a number of bytes, optionally with K, M, G or T: x1024";
constexpr const char* kDurationSyntax = "a number with ms, s, m or h";

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

/// Leading decimal digits of `text` (and, with `fraction`, one '.' followed
/// by digits); returns how many characters they take.
std::size_t number_length(const std::string& text, bool fraction)
{
    std::size_t n = 0;
    while (n < text.size() && text[n] >= '0' && text[n] <= '9') ++n;
    if (fraction && n > 0 && n + 1 < text.size() && text[n] == '.') {
        std::size_t m = n + 1;
        while (m < text.size() && text[m] >= '0' && text[m] <= '9') ++m;
        if (m > n + 1) n = m;
    }
    return n;
}

unsigned size_shift(std::string suffix)
{
    if (suffix.size() == 3 && (suffix.compare(1, 2, "iB") == 0 || suffix.compare(1, 2, "ib") == 0)) suffix.resize(1);
    if (suffix.empty()) return 0;
    if (suffix.size() != 1) return ~0u;
    switch (suffix[0]) {
    case 'K':
    case 'k': return 10;
    case 'M':
    case 'm': return 20;
    case 'G':
    case 'g': return 30;
    case 'T':
    case 't': return 40;
    default: return ~0u;
    }
}

std::string seconds_text(std::chrono::milliseconds d)
{
    std::ostringstream out;
    out.precision(12);
    out << static_cast<double>(d.count()) / 1000.0;
    return out.str();
}

}  // namespace

std::uint64_t parse_size(const std::string& option, const std::string& text)
{
    const std::size_t digits = number_length(text, false);
    const unsigned shift = size_shift(text.substr(digits));
    if (digits == 0 || shift == ~0u)
        throw UsageError(option + ": " + quoted(text) + " is not a size (" + kSizeSyntax + ")");
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < digits; ++i) {
        const unsigned digit = static_cast<unsigned>(text[i] - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10)
            throw UsageError(option + ": " + quoted(text) + " is too large (at most 2^64-1 bytes)");
        value = value * 10 + digit;
    }
    if (value > (std::numeric_limits<std::uint64_t>::max() >> shift))
        throw UsageError(option + ": " + quoted(text) + " is too large (at most 2^64-1 bytes)");
    return value << shift;
}

std::size_t parse_count(const std::string& option, const std::string& text, std::size_t min, std::size_t max)
{
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (text.empty() || digits != text.size())
        throw UsageError(option + ": " + quoted(text) + " is not a whole number");
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno != 0 || v < min || v > max)
        throw UsageError(option + ": " + quoted(text) + " is out of range (allowed: " + std::to_string(min) + " to " +
                         std::to_string(max) + ")");
    return static_cast<std::size_t>(v);
}

std::uint64_t parse_size(const std::string& option, const std::string& text, std::uint64_t min, std::uint64_t max)
{
    const std::uint64_t value = parse_size(option, text);
    if (value < min || value > max)
        throw UsageError(option + ": " + quoted(text) + " is out of range (allowed: " + format_size(min) + " to " +
                         format_size(max) + ")");
    return value;
}

std::string format_size(std::uint64_t bytes)
{
    static const char kUnits[] = "KMGT";
    if (bytes == 0) return "0";
    std::string unit;
    for (int i = 0; i < 4 && bytes % 1024 == 0; ++i) {
        bytes /= 1024;
        unit = std::string(1, kUnits[i]);
    }
    return std::to_string(bytes) + unit;
}

std::chrono::milliseconds parse_duration(const std::string& option, const std::string& text,
                                         std::chrono::milliseconds min, std::chrono::milliseconds max, DefaultUnit unit)
{
    const std::size_t length = number_length(text, true);
    const std::string suffix = text.substr(length);
    double scale = 0;  // milliseconds per unit
    if (suffix.empty()) scale = unit == DefaultUnit::seconds ? 1000.0 : 1.0;
    else if (suffix == "ms") scale = 1.0;
    else if (suffix == "s") scale = 1000.0;
    else if (suffix == "m") scale = 60000.0;
    else if (suffix == "h") scale = 3600000.0;
    if (length == 0 || scale == 0) {
        const char* plain = unit == DefaultUnit::seconds ? "a number of seconds" : "a number of milliseconds";
        throw UsageError(option + ": " + quoted(text) + " is not a duration (" + plain + ", or " + kDurationSyntax +
                         ")");
    }
    const double ms = std::strtod(text.substr(0, length).c_str(), nullptr) * scale;
    if (!std::isfinite(ms) || ms < static_cast<double>(min.count()) || ms > static_cast<double>(max.count()))
        throw UsageError(option + ": " + quoted(text) + " is out of range (allowed: " + seconds_text(min) + " to " +
                         seconds_text(max) + " seconds)");
    return std::chrono::milliseconds(std::llround(ms));
}

ChecksumAlgorithm parse_checksum_algorithm(const std::string& option, const std::string& text)
{
    if (const auto algorithm = checksum_algorithm_from(text)) return *algorithm;
    throw UsageError(option + ": " + quoted(text) +
                     " is not a checksum algorithm (allowed: " + kChecksumAlgorithmNames + ")");
}

}  // namespace blobstreaming::cli
