#include "Attributes.h"

#include <blobstreaming/common/Error.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <mutex>

namespace blobstreaming::dicom {

const char* level_name(Level level) noexcept
{
    switch (level) {
    case Level::patient: return "patient";
    case Level::study: return "study";
    case Level::series: return "series";
    case Level::instance: return "instance";
    }
    return "?";
}

Level parse_level(std::string_view name)
{
    for (Level l : {Level::patient, Level::study, Level::series, Level::instance}) {
        if (name == level_name(l)) return l;
    }
    throw Error(Errc::invalid_argument,
                "--level: unknown level \"" + std::string(name) + "\" (patient, study, series or instance)");
}

const std::vector<Attribute>& attributes()
{
    // clang-format off
    static const std::vector<Attribute> table = {
        {"PatientID",         Level::patient,  Kind::text,   false},
        {"PatientName",       Level::patient,  Kind::text,   false},
        {"PatientBirthDate",  Level::patient,  Kind::date,   false},
        {"StudyInstanceUID",  Level::study,    Kind::uid,    false},
        {"StudyDate",         Level::study,    Kind::date,   false},
        {"StudyTime",         Level::study,    Kind::time,   false},
        {"AccessionNumber",   Level::study,    Kind::text,   false},
        {"StudyDescription",  Level::study,    Kind::text,   false},
        {"ModalitiesInStudy", Level::study,    Kind::text,   true},
        {"SeriesInstanceUID", Level::series,   Kind::uid,    false},
        {"Modality",          Level::series,   Kind::text,   false},
        {"SeriesNumber",      Level::series,   Kind::number, false},
        {"SOPInstanceUID",    Level::instance, Kind::uid,    false},
        {"SOPClassUID",       Level::instance, Kind::uid,    false},
        {"InstanceNumber",    Level::instance, Kind::number, false},
        {"NumberOfFrames",    Level::instance, Kind::number, false},
        {"TransferSyntaxUID", Level::instance, Kind::uid,    false},
    };
    // clang-format on
    return table;
}

const Attribute* find_attribute(std::string_view keyword)
{
    for (const Attribute& a : attributes()) {
        if (keyword == a.keyword) return &a;
    }
    return nullptr;
}

bool is_keyword(const std::string& text)
{
    return !text.empty() && text.size() <= 64 &&
           std::all_of(text.begin(), text.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
}

const Attribute* header_attribute(const std::string& keyword, Level level, Kind kind)
{
    if (!is_keyword(keyword))
        throw Error(Errc::invalid_argument, "\"" + keyword + "\" is not a DICOM keyword (letters and digits)");
    if (find_attribute(keyword))
        throw Error(Errc::invalid_argument, keyword + " is a column of the index, not kept in its header column");
    // Interned: a Match holds a pointer (Matching.h). The keywords stay for
    // the process's life; std::deque never moves what it holds.
    static std::mutex mutex;
    static std::deque<std::string> keywords;
    static std::deque<Attribute> interned;
    std::lock_guard<std::mutex> lock(mutex);
    for (const Attribute& a : interned)
        if (keyword == a.keyword && a.level == level && a.kind == kind) return &a;
    keywords.push_back(keyword);
    interned.push_back({keywords.back().c_str(), level, kind, false, true});
    return &interned.back();
}

std::string attribute_list()
{
    std::string out;
    for (const Attribute& a : attributes()) out += (out.empty() ? "" : ", ") + std::string(a.keyword);
    return out;
}

}  // namespace blobstreaming::dicom
