#pragma once
/// The DICOM attributes the study index records and `blob find` matches
/// (docs/DICOM.md): one table, from which the index's schema, the gateway's
/// header parse, the query's matching rules and the output are all made.

#include <string>
#include <string_view>
#include <vector>

namespace blobstreaming::dicom {

/// Query/retrieve levels, top first.
enum class Level { patient, study, series, instance };

/// "patient", "study", "series", "instance".
const char* level_name(Level level) noexcept;
/// The level named `name`; throws Error(Errc::invalid_argument) naming the
/// four allowed.
Level parse_level(std::string_view name);

/// How values of an attribute match (PS3.4 C.2.2.2).
enum class Kind {
    text,    ///< single value or wildcard (`*`, `?`) matching, case-sensitive
    uid,     ///< exact, or a list of UIDs separated by `\`
    date,    ///< YYYYMMDD, or a range A-B, A-, -B
    time,    ///< HH[MM[SS[.F]]], or a range
    number,  ///< an integer, exact
};

struct Attribute {
    const char* keyword;  ///< the DICOM keyword (PS3.6), also the index's column
    Level level;          ///< the level it describes
    Kind kind;
    bool derived;  ///< computed by the index (ModalitiesInStudy), not read from an instance
    /// Not a column of its own: kept with every other attribute of the
    /// instance's header in the index's `header` column (a JSON object
    /// keyword -> value, the values as the columns hold them), matched and
    /// returned from there (header_attribute()).
    bool in_header = false;
};

/// Every attribute, patient level first.
const std::vector<Attribute>& attributes();
/// The attribute named `keyword`, or nullptr.
const Attribute* find_attribute(std::string_view keyword);
/// "PatientID, PatientName, ..." for messages.
std::string attribute_list();

/// Whether `text` has the form of a DICOM keyword: 1 to 64 letters and
/// digits (DCMTK names a tag it does not know "Unknown Tag & Data").
bool is_keyword(const std::string& text);

/// The attribute `keyword` (a DICOM keyword: letters and digits only) kept
/// in the header column, at `level`, matched as `kind`; one object per
/// keyword for the life of the process (the same pointer each time), so at
/// most as many as the DICOM dictionary has keywords. Throws
/// Error(invalid_argument) for a keyword of other characters, or one of
/// attributes() (a column).
const Attribute* header_attribute(const std::string& keyword, Level level, Kind kind);

}  // namespace blobstreaming::dicom
