#include "Multipart.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <random>

namespace blobstreaming::dicom::web {

namespace {

std::string lower(std::string_view s)
{
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

const char* find_in(const char* from, const char* end, std::string_view what)
{
    const char* at = std::search(from, end, what.begin(), what.end());
    return at == end ? nullptr : at;
}

}  // namespace

std::string media_type(std::string_view value)
{
    return lower(trim(value.substr(0, value.find(';'))));
}

std::string media_parameter(std::string_view value, std::string_view name)
{
    std::size_t at = value.find(';');
    while (at != std::string_view::npos) {
        std::string_view rest = value.substr(at + 1);
        const std::size_t eq = rest.find('=');
        if (eq == std::string_view::npos) return "";
        const std::string key = lower(trim(rest.substr(0, eq)));
        rest = trim(rest.substr(eq + 1));
        std::string v;
        std::size_t used = 0;
        if (!rest.empty() && rest.front() == '"') {
            const std::size_t close = rest.find('"', 1);
            v = std::string(rest.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1));
            used = close == std::string_view::npos ? rest.size() : close + 1;
        } else {
            used = std::min(rest.find(';'), rest.size());
            v = std::string(trim(rest.substr(0, used)));
        }
        if (key == lower(name)) return v;
        const std::size_t next = rest.find(';', used);
        if (next == std::string_view::npos) return "";
        at = static_cast<std::size_t>(rest.data() + next - value.data());
    }
    return "";
}

std::string split_parts(const char* body, std::size_t size, const std::string& boundary, std::size_t max_parts,
                        std::vector<Part>& parts, bool& too_many)
{
    too_many = false;
    const char* end = body + size;
    const std::string dash = "--" + boundary;
    const std::string delimiter = "\r\n" + dash;
    // The first delimiter may open the body (no CRLF before it) or follow a preamble.
    const bool opens = size >= dash.size() && std::memcmp(body, dash.data(), dash.size()) == 0;
    const char* at = opens ? body : find_in(body, end, delimiter);
    if (!at) return "no delimiter \"--" + boundary + "\" in the body (the boundary of Content-Type)";
    at += opens ? dash.size() : delimiter.size();
    for (;;) {
        if (end - at >= 2 && at[0] == '-' && at[1] == '-') return "";  // the close delimiter
        const char* line_end = find_in(at, end, "\r\n");
        if (!line_end) return "part " + std::to_string(parts.size() + 1) + ": the body ends after its delimiter";
        const char* headers = line_end + 2;
        Part part;
        const char* content = nullptr;
        if (end - headers >= 2 && headers[0] == '\r' && headers[1] == '\n') {
            content = headers + 2;  // no headers
        } else {
            const char* blank = find_in(headers, end, "\r\n\r\n");
            if (!blank) return "part " + std::to_string(parts.size() + 1) + ": no blank line after its headers";
            for (const char* line = headers; line < blank + 2;) {
                const char* eol = find_in(line, blank + 2, "\r\n");
                const std::string_view h(line, static_cast<std::size_t>(eol - line));
                const std::size_t colon = h.find(':');
                if (colon != std::string_view::npos && lower(trim(h.substr(0, colon))) == "content-type")
                    part.content_type = std::string(trim(h.substr(colon + 1)));
                line = eol + 2;
            }
            content = blank + 4;
        }
        const char* next = find_in(content, end, delimiter);
        if (!next)
            return "part " + std::to_string(parts.size() + 1) + ": no delimiter after it (the body is cut short)";
        if (parts.size() == max_parts) {
            too_many = true;
            return "";
        }
        part.data = content;
        part.size = static_cast<std::size_t>(next - content);
        parts.push_back(part);
        at = next + delimiter.size();
    }
}

std::string new_boundary()
{
    static thread_local std::mt19937_64 random{std::random_device{}()};
    char b[48];
    std::snprintf(b, sizeof b, "blob-dicomd-%016llx%016llx", static_cast<unsigned long long>(random()),
                  static_cast<unsigned long long>(random()));
    return b;
}

std::string part_header(const std::string& boundary, const std::string& content_type, bool first)
{
    return (first ? "--" : "\r\n--") + boundary + "\r\nContent-Type: " + content_type + "\r\n\r\n";
}

std::string close_delimiter(const std::string& boundary) { return "\r\n--" + boundary + "--\r\n"; }

}  // namespace blobstreaming::dicom::web
