#include "QueryRetrieve.h"

#include "TextDecoder.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcelem.h>
#include <dcmtk/dcmdata/dcsequen.h>
#include <dcmtk/dcmdata/dcuid.h>
#include <dcmtk/dcmdata/dcvr.h>

#include <set>

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

/// Whether `element` (a sequence) has a value anywhere in its items: a
/// sequence matching key, which the index cannot match.
bool sequence_has_value(DcmElement& element)
{
    auto& sequence = static_cast<DcmSequenceOfItems&>(element);
    for (unsigned long i = 0; i < sequence.card(); ++i) {
        DcmItem* item = sequence.getItem(i);
        for (unsigned long j = 0; item && j < item->card(); ++j) {
            DcmElement* e = item->getElement(j);
            if (e->ident() == EVR_SQ ? sequence_has_value(*e) : e->getLength() > 0) return true;
        }
    }
    return false;
}

/// How a header attribute of VR `vr` matches.
Kind kind_of(DcmEVR vr)
{
    switch (vr) {
    case EVR_DA: return Kind::date;
    case EVR_TM: return Kind::time;
    case EVR_UI: return Kind::uid;
    case EVR_IS:
    case EVR_US:
    case EVR_UL:
    case EVR_SS:
    case EVR_SL: return Kind::number;
    default: return Kind::text;
    }
}

}  // namespace

bool header_vr(DcmEVR vr)
{
    if (vr == EVR_US || vr == EVR_SS || vr == EVR_UL || vr == EVR_SL || vr == EVR_FL || vr == EVR_FD) return true;
    return DcmVR(vr).isaString() && vr != EVR_UN;
}

Level level_of(const std::string& keyword)
{
    // clang-format off
    static const std::set<std::string> patient = {
        "PatientName", "PatientID", "IssuerOfPatientID", "TypeOfPatientID", "PatientBirthDate", "PatientBirthTime",
        "PatientSex", "OtherPatientIDs", "OtherPatientNames", "EthnicGroup", "PatientComments", "PatientBirthName",
        "PatientMotherBirthName", "PatientSpeciesDescription", "PatientBreedDescription", "ResponsiblePerson",
        "ResponsiblePersonRole", "ResponsibleOrganization", "PatientIdentityRemoved", "DeidentificationMethod",
        "QualityControlSubject", "StrainDescription", "StrainNomenclature", "StrainAdditionalInformation",
        "PatientAddress", "PatientTelephoneNumbers", "CountryOfResidence", "RegionOfResidence", "MilitaryRank",
        "BranchOfService", "PatientReligiousPreference", "PatientSexNeutered"};
    static const std::set<std::string> study = {
        "StudyDate", "StudyTime", "AccessionNumber", "StudyID", "StudyInstanceUID", "ReferringPhysicianName",
        "StudyDescription", "NameOfPhysiciansReadingStudy", "PhysiciansOfRecord", "AdmittingDiagnosesDescription",
        "PatientAge", "PatientSize", "PatientWeight", "Occupation", "AdditionalPatientHistory", "OtherStudyNumbers",
        "MedicalAlerts", "Allergies", "SmokingStatus", "PregnancyStatus", "LastMenstrualDate", "PatientState",
        "AdmissionID", "ReasonForVisit", "ServiceEpisodeID", "ServiceEpisodeDescription", "PatientBodyMassIndex",
        "MeasuredAPDimension", "MeasuredLateralDimension", "ClinicalTrialTimePointID", "ClinicalTrialSponsorName",
        "ClinicalTrialProtocolID", "ClinicalTrialProtocolName", "ClinicalTrialSiteID", "ClinicalTrialSiteName",
        "ClinicalTrialSubjectID", "ClinicalTrialSubjectReadingID", "RequestingService", "RequestedProcedureID"};
    static const std::set<std::string> series = {
        "Modality", "SeriesInstanceUID", "SeriesNumber", "SeriesDescription", "SeriesDate", "SeriesTime",
        "Laterality", "PerformingPhysicianName", "ProtocolName", "OperatorsName", "BodyPartExamined",
        "PatientPosition", "SmallestPixelValueInSeries", "LargestPixelValueInSeries", "PerformedProcedureStepID",
        "PerformedProcedureStepStartDate", "PerformedProcedureStepStartTime", "PerformedProcedureStepEndDate",
        "PerformedProcedureStepEndTime", "PerformedProcedureStepDescription", "CommentsOnThePerformedProcedureStep",
        "AnatomicalOrientationType", "FrameOfReferenceUID", "PositionReferenceIndicator", "Manufacturer",
        "InstitutionName", "InstitutionAddress", "StationName", "InstitutionalDepartmentName",
        "ManufacturerModelName", "DeviceSerialNumber", "SoftwareVersions", "SpatialResolution",
        "DateOfLastCalibration", "TimeOfLastCalibration", "PixelPaddingValue", "SeriesType"};
    // clang-format on
    if (patient.count(keyword)) return Level::patient;
    if (study.count(keyword)) return Level::study;
    if (series.count(keyword)) return Level::series;
    return Level::instance;
}

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
    std::vector<Match> header_matches;
    // The keys in the query's own character set, matched in UTF-8 (the index's).
    TextDecoder decoder(identifier);
    query.charset = decoder.charset();
    for (unsigned long i = 0; i < identifier.card(); ++i) {
        DcmElement* element = identifier.getElement(i);
        DcmTag tag = element->getTag();
        if (tag == DCM_QueryRetrieveLevel || tag == DCM_SpecificCharacterSet) continue;
        query.requested.push_back(tag);
        const std::string name = std::string(tag.getTagName()) + " " + tag.toString().c_str();
        if (element->ident() == EVR_SQ) {
            if (sequence_has_value(*element))
                throw QueryRefused(0xC000, name + ": sequence matching is not supported (give the sequence empty, "
                                                  "as a return key)");
            continue;
        }
        // A NUL would end the key there: PAT1\0ZZZ would match PAT1.
        if (TextDecoder::has_inner_nul(*element)) throw QueryRefused(0xC000, name + ": NUL byte in the value");
        const Attribute* a = find_attribute(tag.getTagName());
        if (!a) {
            const std::string keyword = tag.getTagName();
            const bool matchable =
                !tag.isPrivate() && tag.getGroup() > 0x0002 && header_vr(element->ident()) && is_keyword(keyword);
            if (!matchable) {
                if (element->getLength() == 0) continue;  // returned empty: never in the index
                throw QueryRefused(0xC000, name + ": cannot be matched (a private, unknown, binary or File Meta "
                                                  "Information element; the index keeps text and numbers only)");
            }
            a = header_attribute(keyword, level_of(keyword), kind_of(element->ident()));
            query.returned.push_back(a);
        }
        std::string value;
        if (!decoder.decode(*element, value))
            throw QueryRefused(0xC000, std::string(a->keyword) + ": " + decoder.problem());
        if (value.empty()) continue;
        if (a->in_header) header_matches.push_back({a, value});
        else terms.push_back(std::string(a->keyword) + "=" + value);
    }
    try {
        query.matches = parse_matches(terms);
        for (const Match& m : header_matches) {
            check_match(m);
            query.matches.push_back(m);
        }
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
    // In the query's character set when it holds every value: DCMTK
    // encodes into one set (no code extensions), and fails on a character
    // the set lacks (no transliteration): then the response stays UTF-8.
    if (query.charset.empty() || query.charset == "ISO_IR 192" || query.charset.find('\\') != std::string::npos) return;
    DcmSpecificCharacterSet encoder;
    if (encoder.selectCharacterSet("ISO_IR 192", query.charset.c_str()).bad()) return;
    std::vector<std::pair<DcmTag, OFString>> encoded;
    for (unsigned long i = 0; i < response.card(); ++i) {
        DcmElement* element = response.getElement(i);
        if (element->getTag() == DCM_SpecificCharacterSet || !element->isAffectedBySpecificCharacterSet()) continue;
        OFString value, out;
        element->getOFStringArray(value);
        if (encoder.convertString(value, out).bad()) return;
        encoded.emplace_back(element->getTag(), out);
    }
    for (const auto& [tag, value] : encoded) response.putAndInsertOFStringArray(tag, value);
    response.putAndInsertString(DCM_SpecificCharacterSet, query.charset.c_str());
}

}  // namespace blobstreaming::dicom
