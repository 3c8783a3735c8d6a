#include "QueryRetrieve.h"

#include "TextDecoder.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcelem.h>
#include <dcmtk/dcmdata/dcuid.h>

namespace blobstreaming::dicom {

namespace {

const char* level_keyword(Level level)
{
    switch (level) {
    case Level::patient: return "PATIENT";
    case Level::study: return "STUDY";
    case Level::series: return "SERIES";
    case Level::instance: break;
    }
    return "IMAGE";
}

}  // namespace

bool information_model_of(const std::string& sop_class, InformationModel& model)
{
    if (sop_class == UID_FINDPatientRootQueryRetrieveInformationModel ||
        sop_class == UID_GETPatientRootQueryRetrieveInformationModel ||
        sop_class == UID_MOVEPatientRootQueryRetrieveInformationModel) {
        model = InformationModel::patient_root;
        return true;
    }
    if (sop_class == UID_FINDStudyRootQueryRetrieveInformationModel ||
        sop_class == UID_GETStudyRootQueryRetrieveInformationModel ||
        sop_class == UID_MOVEStudyRootQueryRetrieveInformationModel) {
        model = InformationModel::study_root;
        return true;
    }
    return false;
}

IndexQuery parse_identifier(DcmDataset& identifier, InformationModel model)
{
    IndexQuery query;
    OFString level_text;
    if (identifier.findAndGetOFString(DCM_QueryRetrieveLevel, level_text).bad() || level_text.empty())
        throw QueryRefused(0xA900, "the identifier has no Query/Retrieve Level (0008,0052)");
    bool known = false;
    for (Level l : {Level::patient, Level::study, Level::series, Level::instance}) {
        if (level_text == level_keyword(l)) {
            query.level = l;
            known = true;
        }
    }
    if (!known)
        throw QueryRefused(0xA900, "Query/Retrieve Level \"" + std::string(level_text.c_str()) +
                                       "\" is not PATIENT, STUDY, SERIES or IMAGE");
    if (model == InformationModel::study_root && query.level == Level::patient)
        throw QueryRefused(0xA900, "Query/Retrieve Level PATIENT is not in the Study Root model");
    std::vector<std::string> terms;
    // The keys in the query's own character set, matched in UTF-8 (the index's).
    TextDecoder decoder(identifier);
    for (unsigned long i = 0; i < identifier.card(); ++i) {
        DcmElement* element = identifier.getElement(i);
        DcmTag tag = element->getTag();
        if (tag == DCM_QueryRetrieveLevel || tag == DCM_SpecificCharacterSet) continue;
        query.requested.push_back(tag);
        if (element->ident() == EVR_SQ) continue;
        // A NUL would end the key there: PAT1\0ZZZ would match PAT1.
        if (TextDecoder::has_inner_nul(*element))
            throw QueryRefused(0xC000, std::string(tag.getTagName()) + " " + tag.toString().c_str() +
                                           ": NUL byte in the value");
        const Attribute* a = find_attribute(tag.getTagName());
        if (!a) continue;
        std::string value;
        if (!decoder.decode(*element, value))
            throw QueryRefused(0xC000, std::string(a->keyword) + ": " + decoder.problem());
        if (!value.empty()) terms.push_back(std::string(a->keyword) + "=" + value);
    }
    try {
        query.matches = parse_matches(terms);
    } catch (const Error& e) {
        std::string why = e.what();
        if (why.rfind("find: ", 0) == 0) why = why.substr(6);
        throw QueryRefused(0xC000, why);
    }
    return query;
}

void fill_response(const IndexQuery& query, const IndexRow& row, DcmDataset& response)
{
    // The index holds UTF-8 (an index written before it decoded: escaped).
    response.putAndInsertString(DCM_SpecificCharacterSet, "ISO_IR 192");
    response.putAndInsertString(DCM_QueryRetrieveLevel, level_keyword(query.level));
    for (DcmTag tag : query.requested) {
        std::string value;
        for (const auto& [column, v] : row) {
            if (column == tag.getTagName()) value = v;
        }
        if (tag.getEVR() == EVR_SQ) response.insertEmptyElement(tag);
        else response.putAndInsertString(tag, utf8_escaped(value).c_str());
    }
}

}  // namespace blobstreaming::dicom
