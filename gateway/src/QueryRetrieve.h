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
};

/// The query of `identifier` (QueryRetrieveLevel PATIENT, STUDY, SERIES or
/// IMAGE; PATIENT is refused in the Study Root model). Keys with a value
/// that the index records are matched with DICOM's rules (Matching.h);
/// others (and keys the index does not record) are universal: returned
/// empty. Text keys are decoded by the identifier's Specific Character Set
/// (TextDecoder); a key that cannot be, or that holds a NUL byte, is refused
/// (C000) naming it. Throws QueryRefused.
IndexQuery parse_identifier(DcmDataset& identifier, InformationModel model);

/// The response identifier of one match: Specific Character Set ISO_IR 192
/// (UTF-8), QueryRetrieveLevel, then every requested key with the row's
/// value ("" when the index does not have it).
void fill_response(const IndexQuery& query, const IndexRow& row, DcmDataset& response);

}  // namespace blobstreaming::dicom
