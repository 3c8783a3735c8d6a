/// RadosStore's index records (RadosIndex.h): text, one line of `key=value`
/// fields after a version number, so that `rados listomapvals` shows them
/// readably; decoding is strict (every field present, numbers whole).
#include "RadosIndex.h"

#include <blobstreaming/common/Error.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <map>

#include <sys/random.h>

namespace blobstreaming::detail::rados_index {
namespace {

constexpr std::string_view kVersion = "1";

using Fields = std::map<std::string, std::string, std::less<>>;

/// The fields of "1 k=v k=v ..."; nullopt (why) for anything else.
std::optional<Fields> fields_of(std::string_view text, std::string& why)
{
    Fields out;
    std::size_t at = 0;
    bool first = true;
    while (at < text.size()) {
        std::size_t end = text.find(' ', at);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view token = text.substr(at, end - at);
        at = end + 1;
        if (first) {
            first = false;
            if (token != kVersion) {
                why = "record version \"" + std::string(token) + "\" is not " + std::string(kVersion);
                return std::nullopt;
            }
            continue;
        }
        const std::size_t eq = token.find('=');
        if (eq == std::string_view::npos || eq == 0) {
            why = "field \"" + std::string(token) + "\" is not KEY=VALUE";
            return std::nullopt;
        }
        out.emplace(std::string(token.substr(0, eq)), std::string(token.substr(eq + 1)));
    }
    if (first) {
        why = "empty record";
        return std::nullopt;
    }
    return out;
}

bool text_field(const Fields& f, const char* key, std::string& out, std::string& why)
{
    const auto it = f.find(key);
    if (it == f.end()) {
        why = std::string("no field ") + key;
        return false;
    }
    out = it->second;
    return true;
}

template <class T>
bool number_field(const Fields& f, const char* key, T& out, std::string& why)
{
    std::string text;
    if (!text_field(f, key, text, why)) return false;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (ec != std::errc() || end != text.data() + text.size()) {
        why = std::string("field ") + key + "=" + text + " is not a number";
        return false;
    }
    return true;
}

/// Percent-encodes what a field cannot hold as it is: spaces (the
/// separator), '%', and bytes outside printable ASCII.
std::string escape(std::string_view text)
{
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (const char c : text) {
        const auto b = static_cast<unsigned char>(c);
        if (b <= 0x20 || b >= 0x7f || c == '%') {
            out += '%';
            out += hex[b >> 4];
            out += hex[b & 15];
        } else {
            out += c;
        }
    }
    return out;
}

bool unescape(std::string_view text, std::string& out)
{
    out.clear();
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        unsigned value = 0;
        if (text.size() - i < 3) return false;
        const auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
        if (ec != std::errc() || end != text.data() + i + 3) return false;
        out += static_cast<char>(value);
        i += 2;
    }
    return true;
}

}  // namespace

std::string resume_object(const std::string& id) { return "blobstreaming.resume." + id; }

std::string data_object(const std::string& id, std::uint64_t chunk)
{
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, ".%08llx", static_cast<unsigned long long>(chunk));
    return "blobstreaming.data." + id + suffix;
}

std::uint64_t chunk_count(std::uint64_t size, std::uint32_t chunk) noexcept
{
    return chunk == 0 ? 0 : size / chunk + (size % chunk != 0);
}

std::string new_id()
{
    unsigned char bytes[16];
    std::size_t got = 0;
    while (got < sizeof bytes) {
        const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0) throw_io_error("getrandom", errno);
        got += static_cast<std::size_t>(n);
    }
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned char b : bytes) {
        out += hex[b >> 4];
        out += hex[b & 15];
    }
    return out;
}

std::int64_t now_ms() noexcept
{
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string encode(const BlobRecord& r)
{
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(r.info.committed.time_since_epoch()).count();
    return std::string(kVersion) + " size=" + std::to_string(r.info.size) + " chunk=" + std::to_string(r.chunk) +
           " data=" + r.data + " committed=" + std::to_string(ns) + " checksum=" + r.info.checksum.text();
}

std::optional<BlobRecord> decode_blob(std::string_view name, std::string_view text, std::string& why)
{
    const auto f = fields_of(text, why);
    if (!f) return std::nullopt;
    BlobRecord r;
    r.info.name = std::string(name);
    std::int64_t ns = 0;
    std::string checksum;
    if (!number_field(*f, "size", r.info.size, why) || !number_field(*f, "chunk", r.chunk, why) ||
        !text_field(*f, "data", r.data, why) || !number_field(*f, "committed", ns, why) ||
        !text_field(*f, "checksum", checksum, why))
        return std::nullopt;
    const auto parsed = Checksum::parse(checksum);
    if (!parsed) {
        why = "field checksum=" + checksum + " is not ALGORITHM:HEX";
        return std::nullopt;
    }
    if (r.chunk == 0 || r.data.empty()) {
        why = "chunk size 0 or no data id";
        return std::nullopt;
    }
    r.info.checksum = *parsed;
    r.info.committed = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(ns)));
    return r;
}

std::string encode(const ReservationRecord& r)
{
    return std::string(kVersion) + " size=" + std::to_string(r.size) + " chunk=" + std::to_string(r.chunk) +
           " owner=" + r.owner + " created=" + std::to_string(r.created_ms) + " grace=" + std::to_string(r.grace_ms) +
           (r.client.empty() ? std::string() : " client=" + escape(r.client)) + " name=" + r.name;
}

std::optional<ReservationRecord> decode_reservation(std::string_view text, std::string& why)
{
    const auto f = fields_of(text, why);
    if (!f) return std::nullopt;
    ReservationRecord r;
    if (!number_field(*f, "size", r.size, why) || !number_field(*f, "chunk", r.chunk, why) ||
        !text_field(*f, "owner", r.owner, why) || !number_field(*f, "created", r.created_ms, why) ||
        !number_field(*f, "grace", r.grace_ms, why) || !text_field(*f, "name", r.name, why))
        return std::nullopt;
    if (const auto client = f->find("client"); client != f->end() && !unescape(client->second, r.client)) {
        why = "field client=" + client->second + " is not percent-encoded text";
        return std::nullopt;
    }
    return r;
}

std::string encode(const TrashRecord& r)
{
    return std::string(kVersion) + " chunks=" + std::to_string(r.chunks) +
           " deadline=" + std::to_string(r.deadline_ms) + " name=" + r.name;
}

std::optional<TrashRecord> decode_trash(std::string_view text, std::string& why)
{
    const auto f = fields_of(text, why);
    if (!f) return std::nullopt;
    TrashRecord r;
    if (!number_field(*f, "chunks", r.chunks, why) || !number_field(*f, "deadline", r.deadline_ms, why) ||
        !text_field(*f, "name", r.name, why))
        return std::nullopt;
    return r;
}

}  // namespace blobstreaming::detail::rados_index
