#pragma once
/// blob-dicomd's Query/Retrieve side apart from the network (docs/DICOM.md,
/// "Query and retrieve"): a C-FIND or C-GET identifier turned into a query
/// of the study index, and an index row turned into a C-FIND response
/// identifier.

#include "dicom/StudyIndex.h"

#include <dcmtk/dcmdata/dcdatset.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace blobstreaming::dicom {

/// Patient Root or Study Root (PS3.4 C.6.1, C.6.2).
enum class InformationModel { patient_root, study_root };

/// The information model of a FIND, GET or MOVE SOP class UID, or false.
bool information_model_of(const std::string& sop_class, InformationModel& model);

/// Why an identifier cannot be answered, with the DIMSE status to answer:
/// A900 (does not match the SOP class: no or a wrong Query/Retrieve
/// Level) or C000 (unable to process: a malformed matching key).
struct QueryRefused : std::runtime_error {
    QueryRefused(std::uint16_t code, const std::string& why) : std::runtime_error(why), status(code) {}
    std::uint16_t status;
};

struct IndexQuery {
    Level level = Level::study;
    std::vector<Match> matches;
    std::vector<DcmTag> requested;  ///< every key of the identifier, returned in each response
    /// The keys kept in the index's header column (Attribute::in_header),
    /// for StudyIndex::find() to return.
    std::vector<const Attribute*> returned;
    /// The identifier's Specific Character Set (0008,0005), "" when none:
    /// the responses' when it can hold their values (fill_response()).
    std::string charset;
};

/// Whether values of VR `vr` are kept in the index's header column: the
/// text VRs and the binary numbers (US, SS, UL, SL, FL, FD), not sequences
/// nor other binary values.
bool header_vr(DcmEVR vr);

/// The query/retrieve level an attribute of the DICOM dictionary belongs
/// to (PS3.4 C.6.1.1 and C.6.2.1: the Patient, Study and Series levels'
/// keys and the other attributes of those entities' modules); every other
/// attribute describes the instance.
Level level_of(const std::string& keyword);

/// The query of `identifier` (QueryRetrieveLevel PATIENT, STUDY, SERIES or
/// IMAGE; PATIENT is refused in the Study Root model). Every key with a
/// value is matched with DICOM's rules (Matching.h): those of attributes()
/// in their columns, any other attribute of the DICOM dictionary of a text
/// or numeric VR in the index's header column (as its VR says: DA a date,
/// TM a time, UI a UID, IS and the binary integers a number, the others
/// text). A key that cannot be matched is refused (C000) naming it, never
/// ignored: a sequence with a value in an item, a private or unknown tag,
/// a binary VR, a File Meta Information element. Keys without a value are
/// returned (empty when the index has no value). Text keys are decoded by
/// the identifier's Specific Character Set (TextDecoder); a key that cannot
/// be, or that holds a NUL byte, is refused (C000) naming it. Throws
/// QueryRefused.
IndexQuery parse_identifier(DcmDataset& identifier, InformationModel model);

/// The response identifier of one match: QueryRetrieveLevel, every
/// requested key with the row's value ("" when the index does not have
/// it), and Specific Character Set: the query's (IndexQuery::charset) with
/// the values encoded in it when it is one character set DCMTK can encode
/// (no ISO 2022 code extensions) that holds every value, else ISO_IR 192
/// (UTF-8, the index's own).
void fill_response(const IndexQuery& query, const IndexRow& row, DcmDataset& response);

}  // namespace blobstreaming::dicom
