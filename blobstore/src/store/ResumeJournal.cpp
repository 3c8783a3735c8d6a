/// The resume journal's records (ResumeJournal.h): [u32 length][u32 CRC32C
/// of the payload][payload], little-endian. Payload 'H': version 1, size,
/// algorithm, mode, name and owner (u16 length + bytes each); 'R': start,
/// end, CRC32C.
#include "ResumeJournal.h"

#include <blobstreaming/common/BlobName.h>

#include <algorithm>

namespace blobstreaming::detail {

namespace {

constexpr std::uint8_t kVersion = 1;
constexpr std::size_t kRecordHead = 8;
/// A header holds a name and a client identity (a certificate subject):
/// nothing near this, so a larger length is a damaged record.
constexpr std::uint32_t kMaxPayload = 16 * 1024;

void put(std::string& out, std::uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_text(std::string& out, const std::string& text)
{
    const std::size_t n = std::min<std::size_t>(text.size(), 0xffff);
    put(out, n, 2);
    out.append(text, 0, n);
}

std::string record(const std::string& payload)
{
    std::string out;
    put(out, payload.size(), 4);
    put(out, crc32c(payload.data(), payload.size()), 4);
    return out + payload;
}

/// Reads little-endian fields from a payload; `ok` false once one is short.
struct Reader {
    std::string_view in;
    bool ok = true;
    std::uint64_t get(int bytes)
    {
        if (in.size() < static_cast<std::size_t>(bytes)) {
            ok = false;
            return 0;
        }
        std::uint64_t v = 0;
        for (int i = 0; i < bytes; ++i) v |= std::uint64_t{static_cast<std::uint8_t>(in[i])} << (8 * i);
        in.remove_prefix(bytes);
        return v;
    }
    std::string text()
    {
        const auto n = static_cast<std::size_t>(get(2));
        if (!ok || in.size() < n) {
            ok = false;
            return {};
        }
        std::string s(in.substr(0, n));
        in.remove_prefix(n);
        return s;
    }
};

/// The next record's payload; nullopt with `why` when it is torn or changed.
std::optional<std::string_view> next_record(std::string_view& bytes, std::string& why)
{
    Reader head{bytes};
    const auto length = static_cast<std::uint32_t>(head.get(4));
    const auto crc = static_cast<std::uint32_t>(head.get(4));
    if (!head.ok || length > kMaxPayload || head.in.size() < length) {
        why = "a record is cut short (" + std::to_string(bytes.size()) + " bytes left)";
        return std::nullopt;
    }
    const std::string_view payload = head.in.substr(0, length);
    if (crc32c(payload.data(), payload.size()) != crc) {
        why = "a record does not match its CRC32C";
        return std::nullopt;
    }
    bytes.remove_prefix(kRecordHead + length);
    return payload;
}

}  // namespace

std::string encode_resume_header(const ResumeHeader& header)
{
    std::string p = "H";
    put(p, kVersion, 1);
    put(p, header.size, 8);
    put(p, static_cast<std::uint8_t>(header.checksum), 1);
    put(p, header.mode == ReserveMode::replace ? 1 : 0, 1);
    put_text(p, header.name);
    put_text(p, header.owner);
    return record(p);
}

std::string encode_resume_range(const ResumeRange& range)
{
    std::string p = "R";
    put(p, range.start, 8);
    put(p, range.end, 8);
    put(p, range.crc, 4);
    return record(p);
}

std::optional<ResumeJournal> parse_resume_journal(std::string_view bytes, std::string& why)
{
    auto first = next_record(bytes, why);
    if (!first) return std::nullopt;
    Reader h{*first};
    ResumeJournal j;
    const auto type = h.get(1);
    const auto version = h.get(1);
    j.header.size = h.get(8);
    const auto algorithm = h.get(1);
    const auto mode = h.get(1);
    j.header.name = h.text();
    j.header.owner = h.text();
    if (!h.ok || type != 'H') {
        why = "its first record is not a header";
        return std::nullopt;
    }
    if (version != kVersion) {
        why = "version " + std::to_string(version) + " (this release reads " + std::to_string(kVersion) + ")";
        return std::nullopt;
    }
    if (algorithm != static_cast<std::uint8_t>(ChecksumAlgorithm::crc32c) &&
        algorithm != static_cast<std::uint8_t>(ChecksumAlgorithm::sha256)) {
        why = "unknown checksum algorithm " + std::to_string(algorithm);
        return std::nullopt;
    }
    j.header.checksum = static_cast<ChecksumAlgorithm>(algorithm);
    j.header.mode = mode == 1 ? ReserveMode::replace : ReserveMode::create;
    if (blob_name_problem(j.header.name)) {
        why = "it names no valid blob";
        return std::nullopt;
    }
    while (!bytes.empty()) {
        auto payload = next_record(bytes, j.stopped);
        if (!payload) break;
        Reader r{*payload};
        const auto t = r.get(1);
        ResumeRange range;
        range.start = r.get(8);
        range.end = r.get(8);
        range.crc = static_cast<std::uint32_t>(r.get(4));
        if (!r.ok || t != 'R') {
            j.stopped = "a record is not a range";
            break;
        }
        if (range.start != j.received() || range.end <= range.start || range.end > j.header.size) {
            j.stopped = "range [" + std::to_string(range.start) + ", " + std::to_string(range.end) +
                        ") does not follow byte " + std::to_string(j.received()) + " within " +
                        std::to_string(j.header.size) + " bytes";
            break;
        }
        j.ranges.push_back(range);
    }
    return j;
}

}  // namespace blobstreaming::detail
