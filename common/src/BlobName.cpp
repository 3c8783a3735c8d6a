#include <blobstreaming/common/BlobName.h>

#include <blobstreaming/common/Error.h>

#include <cstdio>

namespace blobstreaming {
namespace {

constexpr const char* kRule = "allowed: 1 to 200 characters of A-Z a-z 0-9 '.' '_' '-', not starting with '.'";

bool allowed(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

std::string describe(char c)
{
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%02x", u);
        return std::string("byte ") + buf;
    }
    return std::string("character '") + c + "'";
}

}  // namespace

std::string quote_name(std::string_view name)
{
    std::string out = "\"";
    const std::size_t shown = name.size() > 80 ? 80 : name.size();
    for (std::size_t i = 0; i < shown; ++i) {
        const auto u = static_cast<unsigned char>(name[i]);
        if (u < 0x20 || u >= 0x7f || u == '"' || u == '\\') {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else {
            out += name[i];
        }
    }
    if (shown < name.size()) out += "...";
    return out + "\"";
}

std::optional<std::string> blob_name_problem(std::string_view name)
{
    if (name.empty()) return std::string("the name is empty");
    if (name.size() > kMaxBlobNameLength) return "the name is " + std::to_string(name.size()) + " characters long";
    if (name.front() == '.') return std::string("the name starts with '.'");
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (!allowed(name[i])) return describe(name[i]) + " at position " + std::to_string(i) + " is not allowed";
    }
    return std::nullopt;
}

void validate_blob_name(std::string_view name)
{
    if (auto problem = blob_name_problem(name))
        throw Error(Errc::invalid_name, "invalid blob name " + quote_name(name) + ": " + *problem + " (" + kRule + ")");
}

}  // namespace blobstreaming
