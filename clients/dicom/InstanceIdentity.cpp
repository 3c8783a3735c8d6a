#include "InstanceIdentity.h"

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcdatset.h>
#include <dcmtk/dcmdata/dcfilefo.h>

#include <cstdio>
#include <cstring>

namespace blobstreaming::dicom {

bool valid_uid(std::string_view uid) noexcept
{
    if (uid.empty() || uid.size() > 64) return false;
    std::size_t start = 0;
    for (;;) {
        const std::size_t dot = uid.find('.', start);
        const std::string_view component = uid.substr(start, dot == std::string_view::npos ? uid.npos : dot - start);
        if (component.empty() || component.find_first_not_of("0123456789") != std::string_view::npos) return false;
        if (component.size() > 1 && component.front() == '0') return false;
        if (dot == std::string_view::npos) return true;
        start = dot + 1;
    }
}

std::string escaped(std::string_view value, std::size_t limit)
{
    std::string out;
    for (std::size_t i = 0; i < value.size() && i < limit; ++i) {
        const auto c = static_cast<unsigned char>(value[i]);
        if (c == '\\' || c == '"') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c >= 0x20 && c < 0x7F) {
            out += static_cast<char>(c);
        } else {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02X", c);
            out += hex;
        }
    }
    if (value.size() > limit) out += "...";
    return out;
}

std::string invalid_uid(const std::map<std::string, std::string>& values)
{
    for (const char* keyword : kInstanceUids) {
        const auto it = values.find(keyword);
        if (it == values.end() || it->second.empty() || valid_uid(it->second)) continue;
        return std::string(keyword) + " \"" + escaped(it->second) +
               "\" is not a valid UID (digits in components separated by single dots, no leading zero but \"0\", "
               "at most 64 characters)";
    }
    return {};
}

namespace {

std::string value_of(const std::map<std::string, std::string>& values, const char* keyword)
{
    const auto it = values.find(keyword);
    return it == values.end() ? std::string() : it->second;
}

}  // namespace

std::string identity_difference(const std::map<std::string, std::string>& a,
                                const std::map<std::string, std::string>& b)
{
    std::string out;
    for (const char* keyword : kIdentifying) {
        const std::string x = value_of(a, keyword), y = value_of(b, keyword);
        if (x == y) continue;
        out += (out.empty() ? "" : ", ") + std::string(keyword) + " \"" + escaped(x) + "\" (not \"" + escaped(y) +
               "\")";
    }
    return out;
}

std::size_t data_set_offset(const std::uint8_t* bytes, std::size_t size)
{
    // Preamble (128), "DICM", then (0002,0000) UL 4 <length>: explicit VR little endian.
    constexpr std::size_t start = 132, element = 12;
    if (size < start + element || std::memcmp(bytes + 128, "DICM", 4) != 0) return 0;
    const std::uint8_t* e = bytes + start;
    if (e[0] != 0x02 || e[1] != 0 || e[2] != 0 || e[3] != 0 || e[4] != 'U' || e[5] != 'L') return 0;
    const std::size_t length = e[8] | (e[9] << 8) | (e[10] << 16) | (static_cast<std::size_t>(e[11]) << 24);
    return start + element + length <= size ? start + element + length : 0;
}

std::string data_set_checksum(const Checksum& blob, std::uint64_t blob_size, const std::uint8_t* head,
                              std::size_t size)
{
    if (blob.algorithm != ChecksumAlgorithm::crc32c) return {};
    const std::size_t offset = data_set_offset(head, size);
    if (offset == 0 || offset > blob_size) return {};
    const std::uint64_t length = blob_size - offset;
    return Checksum::crc32c(blob.crc() ^ crc32c_combine(crc32c(head, offset), 0, length)).text();
}

std::string delivered_mismatch(const std::string& path, const std::map<std::string, std::string>& expected)
{
    // The whole file is parsed (it is here whole), values over 4 KiB (the
    // pixel data) left unread.
    DcmFileFormat file;
    const OFCondition read = file.loadFile(path.c_str(), EXS_Unknown, EGL_noChange, 4096, ERM_fileOnly);
    if (read.bad()) return std::string("the object delivered does not parse: ") + read.text();
    return delivered_mismatch(*file.getDataset(), expected);
}

std::string delivered_mismatch(DcmItem& data_set, const std::map<std::string, std::string>& expected)
{
    const std::pair<const char*, DcmTagKey> checked[] = {{"SOPInstanceUID", DCM_SOPInstanceUID},
                                                         {"PatientID", DCM_PatientID},
                                                         {"StudyInstanceUID", DCM_StudyInstanceUID},
                                                         {"SeriesInstanceUID", DCM_SeriesInstanceUID},
                                                         {"SOPClassUID", DCM_SOPClassUID}};
    for (const auto& [keyword, tag] : checked) {
        const std::string want = value_of(expected, keyword);
        if (want.empty()) continue;
        OFString got;
        data_set.findAndGetOFStringArray(tag, got);
        if (want != got.c_str())
            return std::string("its ") + keyword + " is \"" + escaped(got.c_str()) + "\", the index says \"" +
                   escaped(want) + "\"";
    }
    return {};
}

}  // namespace blobstreaming::dicom
