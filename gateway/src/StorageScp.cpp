#include "StorageScp.h"

#include "dicom/InstanceIdentity.h"
#include "dicom/NearestCopy.h"
#include "AssociationGate.h"
#include "QueryRetrieve.h"
#include "Spool.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmnet/dimse.h>

#include <dcmtk/dcmdata/dcuid.h>
#include <dcmtk/dcmnet/diutil.h>
#include <dcmtk/dcmnet/scp.h>
#include <dcmtk/dcmnet/scpthrd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <unistd.h>

namespace blobstreaming::dicom {

namespace {

/// Each association's SCP is built with its default constructor: they reach the
/// gateway's state through this pointer, set once before listening.
const GatewayOptions* g_options = nullptr;
InstanceStore* g_store = nullptr;
StudyIndex* g_index = nullptr;
client::Session* g_session = nullptr;
std::atomic<unsigned long> g_spool_counter{0};

/// C-GET sends at most this many instances' files from the spool at once.
constexpr std::size_t kGetBatch = 16;

std::atomic<unsigned long> g_failure_counter{0};

/// A failure of the index, logged whole; what a peer is told of it: no
/// path, no database text, the reference of the log line.
std::string index_failure(const char* operation, const std::string& peer, const Error& e)
{
    const std::string reference = std::to_string(::getpid()) + "-" + std::to_string(++g_failure_counter);
    spdlog::error("{} from {}: the study index failed (reference {}): {}", operation, peer, reference, e.what());
    return "study index failure, reference " + reference + " in the gateway's log";
}

std::string spool_path()
{
    return spool_file(g_options->spool, ++g_spool_counter);
}

/// PS3.7 Annex C, the general status 0124H "Refused: not authorized"
/// (DCMTK's STATUS_STORE_Refused_NotAuthorized, STATUS_MOVE_...): an
/// operation the peer has no right to (docs/DICOM.md, "Security").
constexpr Uint16 kNotAuthorized = 0x0124;

class StorageScp : public DcmThreadSCP {
public:
    /// The admitted peer and its rights (AssociationGate asked
    /// DicomSecurity::rights_of): each operation checks its own right in
    /// peer_.rights (a C-MOVE: peer_.rights.may_move_to(destination)).
    void set_peer(const AssociationPeer& peer) { peer_ = peer; }

    /// The pool hands each connection to run(): the association is kept for
    /// C-GET's C-STORE sub-operations, sent straight from the pulled file.
    OFCondition run(T_ASC_Association* association) override
    {
        association_ = association;
        const OFCondition result = DcmThreadSCP::run(association);
        association_ = nullptr;
        return result;
    }

protected:
    OFCondition handleIncomingCommand(T_DIMSE_Message* message, const DcmPresentationContextInfo& context) override
    {
        if (message->CommandField == DIMSE_C_FIND_RQ) return find(message->msg.CFindRQ, context.presentationContextID);
        if (message->CommandField == DIMSE_C_GET_RQ) return get(message->msg.CGetRQ, context.presentationContextID);
        if (message->CommandField != DIMSE_C_STORE_RQ) return DcmThreadSCP::handleIncomingCommand(message, context);
        T_DIMSE_C_StoreRQ& request = message->msg.CStoreRQ;
        if (!peer_.rights.store) return refuse_store(request, context.presentationContextID);
        ReceivedInstance instance;
        instance.sop_class_uid = request.AffectedSOPClassUID;
        instance.sop_instance_uid = request.AffectedSOPInstanceUID;
        instance.peer = std::string(getPeerAETitle().c_str()) + "@" + getPeerIP().c_str();
        instance.path = spool_path();
        const OFCondition received = receiveSTORERequest(request, context.presentationContextID, instance.path.c_str());
        if (received.bad()) {
            std::remove(instance.path.c_str());
            spdlog::error("instance {} from {}: receiving failed: {}", printable(instance.sop_instance_uid),
                          printable(instance.peer), received.text());
            return received;
        }
        // The spool file goes once the modality has its answer.
        struct Spool {
            const std::string& path;
            ~Spool() { std::remove(path.c_str()); }
        } spool{instance.path};
        OFCondition answered = EC_Normal;
        g_store->store(instance, [&](const StoreOutcome& outcome) {
            DcmDataset detail;
            DcmDataset* comment = nullptr;
            if (outcome.status != status::success) {
                // Error Comment (0000,0902) is LO: at most 64 characters.
                detail.putAndInsertString(DCM_ErrorComment, outcome.comment.substr(0, 64).c_str());
                comment = &detail;
            }
            answered = sendSTOREResponse(context.presentationContextID, request.MessageID, request.AffectedSOPClassUID,
                                         request.AffectedSOPInstanceUID, outcome.status, comment);
        });
        return answered;
    }

    /// A C-STORE without the store right: its data set read and dropped, 0124.
    OFCondition refuse_store(T_DIMSE_C_StoreRQ& request, T_ASC_PresentationContextID context)
    {
        const OFCondition received = receiveSTORERequest(request, context, "/dev/null");
        if (received.bad()) return received;
        spdlog::warn("C-STORE of {} from {}: refused (status 0124, not authorized): no store right (rights {})",
                     printable(request.AffectedSOPInstanceUID), peer(), peer_.rights.text());
        DcmDataset detail;
        return sendSTOREResponse(context, request.MessageID, request.AffectedSOPClassUID,
                                 request.AffectedSOPInstanceUID, kNotAuthorized,
                                 error_comment(detail, "not authorized: no store right for this AE title"));
    }

    /// The peer for log lines: its AE title is the peer's text, escaped.
    std::string peer() { return printable(std::string(getPeerAETitle().c_str()) + "@" + getPeerIP().c_str()); }

    /// The query of a C-FIND or C-GET identifier, or a refusal's status and why.
    bool parse_query(const char* sop_class, DcmDataset* identifier, IndexQuery& query, Uint16& status, std::string& why)
    {
        InformationModel model;
        if (!information_model_of(sop_class, model)) {
            status = 0x0122;  // SOP class not supported
            why = std::string("SOP class ") + sop_class + " is not Patient Root or Study Root";
            return false;
        }
        if (!g_index) {
            status = 0xC000;
            why = "blob-dicomd runs without --index: nothing to query";
            return false;
        }
        if (!identifier) {
            status = 0xA900;
            why = "no identifier";
            return false;
        }
        try {
            query = parse_identifier(*identifier, model);
            return true;
        } catch (const QueryRefused& e) {
            status = e.status;
            why = e.what();
            return false;
        }
    }

    static DcmDataset* error_comment(DcmDataset& detail, const std::string& why)
    {
        // The command set's character set is the default one (ASCII).
        std::string ascii;
        for (char c : why) {
            const auto u = static_cast<unsigned char>(c);
            if (u >= 0x20 && u < 0x7F) {
                ascii += c;
            } else {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\x%02X", u);
                ascii += buf;
            }
        }
        detail.putAndInsertString(DCM_ErrorComment, ascii.substr(0, 64).c_str());
        return &detail;
    }

    /// C-FIND (Patient Root, Study Root): one pending response per match of
    /// the index, then Success; C-CANCEL is looked for between responses.
    OFCondition find(T_DIMSE_C_FindRQ& request, T_ASC_PresentationContextID context)
    {
        DcmDataset* identifier = nullptr;
        OFCondition cond = receiveFINDRequest(request, context, identifier);
        if (cond.bad()) return cond;
        std::unique_ptr<DcmDataset> owned(identifier);
        const auto started = std::chrono::steady_clock::now();
        IndexQuery query;
        Uint16 status = 0;
        std::string why;
        std::vector<IndexRow> rows;
        if (!peer_.rights.query) {
            status = kNotAuthorized;
            why = "not authorized: no query right for this AE title";
        } else if (parse_query(request.AffectedSOPClassUID, identifier, query, status, why)) {
            try {
                rows = g_index->find(query.level, query.matches);
            } catch (const Error& e) {
                status = 0xC000;
                why = index_failure("C-FIND", peer(), e);
            }
        }
        DcmDataset detail;
        if (!why.empty()) {
            spdlog::error("C-FIND from {}: refused (status {:04X}): {}", peer(), status, printable(why));
            return sendFINDResponse(context, request.MessageID, request.AffectedSOPClassUID, nullptr, status,
                                    error_comment(detail, why));
        }
        std::size_t sent = 0;
        for (const IndexRow& row : rows) {
            if (checkForCANCEL(context, request.MessageID).good()) {
                spdlog::info("C-FIND from {}: cancelled after {} of {} matches", peer(), sent, rows.size());
                return sendFINDResponse(context, request.MessageID, request.AffectedSOPClassUID, nullptr,
                                        STATUS_FIND_Cancel_MatchingTerminatedDueToCancelRequest);
            }
            DcmDataset response;
            fill_response(query, row, response);
            cond = sendFINDResponse(context, request.MessageID, request.AffectedSOPClassUID, &response,
                                    STATUS_FIND_Pending_MatchesAreContinuing);
            if (cond.bad()) return cond;
            ++sent;
        }
        spdlog::info("C-FIND from {}: {} level, {} matches in {:.3f} s", peer(), level_name(query.level), sent,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
        return sendFINDResponse(context, request.MessageID, request.AffectedSOPClassUID, nullptr, STATUS_Success);
    }

    OFCondition send_get_response(T_ASC_PresentationContextID context, const T_DIMSE_C_GetRQ& request, Uint16 status,
                                  std::size_t remaining, std::size_t completed, std::size_t failed,
                                  DcmDataset* identifier = nullptr, DcmDataset* detail = nullptr)
    {
        T_DIMSE_Message message{};
        message.CommandField = DIMSE_C_GET_RSP;
        T_DIMSE_C_GetRSP& rsp = message.msg.CGetRSP;
        rsp.MessageIDBeingRespondedTo = request.MessageID;
        OFStandard::strlcpy(rsp.AffectedSOPClassUID, request.AffectedSOPClassUID, sizeof rsp.AffectedSOPClassUID);
        rsp.DimseStatus = status;
        rsp.DataSetType = identifier ? DIMSE_DATASET_PRESENT : DIMSE_DATASET_NULL;
        // The counts are US (16 bits): a retrieval of more instances reports 65535.
        auto count = [](std::size_t n) { return static_cast<DIC_US>(std::min<std::size_t>(n, 65535)); };
        rsp.NumberOfRemainingSubOperations = count(remaining);
        rsp.NumberOfCompletedSubOperations = count(completed);
        rsp.NumberOfFailedSubOperations = count(failed);
        rsp.NumberOfWarningSubOperations = 0;
        rsp.opts = O_GET_AFFECTEDSOPCLASSUID | O_GET_NUMBEROFCOMPLETEDSUBOPERATIONS |
                   O_GET_NUMBEROFFAILEDSUBOPERATIONS | O_GET_NUMBEROFWARNINGSUBOPERATIONS;
        if (status == STATUS_GET_Pending_SubOperationsAreContinuing) rsp.opts |= O_GET_NUMBEROFREMAININGSUBOPERATIONS;
        return sendDIMSEMessage(context, &message, identifier, detail);
    }

    /// One C-STORE sub-operation of a C-GET: the file's data set as it is,
    /// on a context of its SOP class and transfer syntax. Returns "" or why
    /// it failed.
    std::string store_sub_operation(const std::string& path, const std::string& sop_class, const std::string& sop,
                                    const std::string& syntax, Uint16 message_id)
    {
        const T_ASC_PresentationContextID context =
            ASC_findAcceptedPresentationContextID(association_, sop_class.c_str(), syntax.c_str());
        T_ASC_PresentationContext accepted;
        if (context == 0 || ASC_findAcceptedPresentationContext(association_->params, context, &accepted).bad() ||
            syntax != accepted.acceptedTransferSyntax)
            return "no presentation context for SOP class " + sop_class + " in transfer syntax " + syntax +
                   " (the instance is sent as stored)";
        T_DIMSE_Message message{};
        message.CommandField = DIMSE_C_STORE_RQ;
        T_DIMSE_C_StoreRQ& rq = message.msg.CStoreRQ;
        rq.MessageID = message_id;
        OFStandard::strlcpy(rq.AffectedSOPClassUID, sop_class.c_str(), sizeof rq.AffectedSOPClassUID);
        OFStandard::strlcpy(rq.AffectedSOPInstanceUID, sop.c_str(), sizeof rq.AffectedSOPInstanceUID);
        rq.DataSetType = DIMSE_DATASET_PRESENT;
        rq.Priority = DIMSE_PRIORITY_MEDIUM;
        OFCondition cond =
            DIMSE_sendMessageUsingFileData(association_, context, &message, nullptr, path.c_str(), nullptr, nullptr);
        if (cond.bad()) return std::string("sending the C-STORE failed: ") + cond.text();
        T_DIMSE_Message response{};
        T_ASC_PresentationContextID response_context = 0;
        DcmDataset* detail = nullptr;
        cond = receiveDIMSECommand(&response_context, &response, &detail);
        delete detail;
        if (cond.bad()) return std::string("no C-STORE response: ") + cond.text();
        if (response.CommandField != DIMSE_C_STORE_RSP)
            return "expected a C-STORE response, got command " + std::to_string(response.CommandField);
        const Uint16 status = response.msg.CStoreRSP.DimseStatus;
        if (status != STATUS_Success && (status & 0xF000) != 0xB000) {
            char code[8];
            std::snprintf(code, sizeof code, "%04X", status);
            return std::string("the peer answered the C-STORE with status ") + code;
        }
        return {};
    }

    /// C-GET (Patient Root, Study Root): the instances the index lists for
    /// the identifier, pulled from their stores (verified) in batches and
    /// sent as C-STORE sub-operations on this association, bit-exact.
    OFCondition get(T_DIMSE_C_GetRQ& request, T_ASC_PresentationContextID context)
    {
        DcmDataset* identifier = nullptr;
        T_ASC_PresentationContextID data_context = context;
        OFCondition cond = receiveDIMSEDataset(&data_context, &identifier);
        if (cond.bad()) return cond;
        std::unique_ptr<DcmDataset> owned(identifier);
        const auto started = std::chrono::steady_clock::now();
        IndexQuery query;
        Uint16 status = 0;
        std::string why;
        std::vector<IndexRow> rows;
        if (!peer_.rights.retrieve) {
            status = kNotAuthorized;
            why = "not authorized: no retrieve right for this AE title";
        } else if (parse_query(request.AffectedSOPClassUID, identifier, query, status, why)) {
            try {
                rows = g_index->find(Level::instance, query.matches);
            } catch (const Error& e) {
                status = 0xC000;
                why = index_failure("C-GET", peer(), e);
            }
        }
        DcmDataset detail;
        if (!why.empty()) {
            spdlog::error("C-GET from {}: refused (status {:04X}): {}", peer(), status, printable(why));
            return send_get_response(context, request, status, 0, 0, 0, nullptr, error_comment(detail, why));
        }
        auto column = [](const IndexRow& row, const char* name) {
            for (const auto& [c, v] : row)
                if (c == name) return v;
            return std::string();
        };
        // What is retrieved: each matching instance, but one with more than
        // one data set under its SOP Instance UID (a conflict: refused,
        // naming its Blobs, until one is removed), also when only a copy in
        // conflict matches.
        struct Item {
            std::string sop;
            const IndexRow* row = nullptr;
            std::string refused;
            std::string comment;  ///< why, short enough for an Error Comment (LO: 64 characters)
        };
        std::vector<Item> items;
        std::map<std::string, std::string> conflicts;
        try {
            for (const Conflict& c : g_index->conflicts(query.matches)) conflicts[c.sop] = c.text();
        } catch (const Error& e) {
            spdlog::error("C-GET from {}: refused (status C000): the index's conflicts: {}", peer(), e.what());
            return send_get_response(context, request, 0xC000, 0, 0, 0, nullptr, error_comment(detail, e.what()));
        }
        for (const IndexRow& row : rows) {
            Item item{column(row, "SOPInstanceUID"), &row, {}, {}};
            if (const auto c = conflicts.find(item.sop); c != conflicts.end()) {
                item.refused = c->second;
                item.comment = "conflict: another data set under its SOP Instance UID";
                conflicts.erase(c);
            } else if (!valid_uid(item.sop)) {
                item.refused = "the index holds an invalid SOP Instance UID \"" + escaped(item.sop) + "\"";
                item.comment = "invalid SOP Instance UID in the index";
            }
            items.push_back(std::move(item));
        }
        for (const auto& [sop, text] : conflicts)
            items.push_back({sop, nullptr, text, "conflict: another data set under its SOP Instance UID"});
        std::size_t completed = 0, failed = 0;
        std::vector<std::string> failed_uids;
        std::string first_comment;
        Uint16 message_id = 1;
        // Each instance from its nearest copy (a study precached to a
        // workstation store is read there), the next copy when that store
        // fails it: the stores' tiers asked once per C-GET.
        const std::map<std::string, client::StoreStatus> stores = store_statuses(*g_session);
        for (std::size_t begin = 0; begin < items.size(); begin += kGetBatch) {
            if (checkForCANCEL(context, request.MessageID).good()) {
                spdlog::info("C-GET from {}: cancelled after {} of {} instances", peer(), completed + failed,
                             items.size());
                return send_get_response(context, request,
                                         STATUS_GET_Cancel_SubOperationsTerminatedDueToCancelIndication,
                                         items.size() - completed - failed, completed, failed);
            }
            const std::size_t end = std::min(items.size(), begin + kGetBatch);
            std::vector<InstanceToPull> batch;
            std::vector<std::size_t> pulled_items;
            std::vector<std::string> sops;
            for (std::size_t i = begin; i < end; ++i)
                if (items[i].refused.empty()) sops.push_back(items[i].sop);
            std::map<std::string, std::vector<IndexedBlob>> copies;
            try {
                copies = g_index->copies_of(sops);
            } catch (const Error& e) {
                spdlog::warn("C-GET from {}: the copies of {} instances: {}; from the stores the index names", peer(),
                             sops.size(), e.what());
            }
            std::map<std::size_t, std::size_t> slot;  // item -> its place in batch
            for (std::size_t i = begin; i < end; ++i) {
                if (!items[i].refused.empty()) continue;
                const IndexRow& row = *items[i].row;
                slot[i] = batch.size();
                batch.push_back({items[i].sop,
                                 nearest_first(std::move(copies[items[i].sop]),
                                               {column(row, "blob"), column(row, "store"), ""}, stores),
                                 spool_path()});
            }
            const std::vector<PulledInstance> results = pull_from_copies(*g_session, batch, client::PullOptions{});
            for (std::size_t i = begin; i < end; ++i) {
                const Item& item = items[i];
                std::string problem = item.refused, comment = item.comment;
                if (problem.empty()) {
                    const IndexRow& row = *item.row;
                    const InstanceToPull& to_pull = batch[slot[i]];
                    const PulledInstance& pulled = results[slot[i]];
                    std::string tried;
                    for (const std::string& t : pulled.tried) tried += (tried.empty() ? "\"" : "\", \"") + t;
                    if (!pulled.result.ok()) {
                        problem = "pulling Blob " + pulled.blob + " (stores tried: " + tried +
                                  "\"): " + pulled.result.message;
                    } else {
                        // The object's own attributes, from the bytes to be sent.
                        std::map<std::string, std::string> expected;
                        for (const char* k : {"SOPInstanceUID", "PatientID", "StudyInstanceUID", "SeriesInstanceUID",
                                              "SOPClassUID"})
                            expected[k] = column(row, k);
                        if (const std::string mismatch = delivered_mismatch(to_pull.path, expected);
                            !mismatch.empty()) {
                            problem = "Blob " + pulled.blob + " in store \"" + pulled.result.store +
                                      "\" is not the instance the index lists: " + mismatch + "; not sent";
                            comment = "not the instance the index lists: " + mismatch;
                        } else {
                            problem = store_sub_operation(to_pull.path, column(row, "SOPClassUID"), item.sop,
                                                          column(row, "TransferSyntaxUID"), message_id++);
                        }
                    }
                    std::remove(to_pull.path.c_str());
                }
                if (problem.empty()) {
                    ++completed;
                } else {
                    ++failed;
                    failed_uids.push_back(item.sop);
                    if (first_comment.empty()) first_comment = comment.empty() ? problem : comment;
                    spdlog::error("C-GET from {}: instance {}: {}", peer(), escaped(item.sop), problem);
                }
                if (i + 1 < items.size()) {
                    cond = send_get_response(context, request, STATUS_GET_Pending_SubOperationsAreContinuing,
                                             items.size() - i - 1, completed, failed);
                    if (cond.bad()) {
                        for (std::size_t j = i + 1; j < end; ++j)
                            if (slot.count(j)) std::remove(batch[slot[j]].path.c_str());
                        return cond;
                    }
                }
            }
        }
        spdlog::info("C-GET from {}: {} level, {} instances sent, {} failed, in {:.3f} s", peer(),
                     level_name(query.level), completed, failed,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
        if (failed == 0) return send_get_response(context, request, STATUS_Success, 0, completed, 0);
        DcmDataset failures;
        std::string list;
        for (const std::string& uid : failed_uids) list += (list.empty() ? "" : "\\") + uid;
        failures.putAndInsertString(DCM_FailedSOPInstanceUIDList, list.c_str());
        // The first failure's reason (the log has each, in full), as far as LO holds it.
        std::string comment = first_comment;
        for (char& ch : comment) ch = ch == '\\' ? '/' : ch;
        return send_get_response(context, request,
                                 completed == 0 ? STATUS_GET_Refused_OutOfResourcesSubOperations
                                                : STATUS_GET_Warning_SubOperationsCompleteOneOrMoreFailures,
                                 0, completed, failed, &failures, error_comment(detail, comment));
    }

    void notifyAssociationRequest(const T_ASC_Parameters& params, DcmSCPActionType& action) override
    {
        DcmThreadSCP::notifyAssociationRequest(params, action);
        spdlog::debug("association request from {}@{}", printable(params.DULparams.callingAPTitle),
                      printable(params.DULparams.callingPresentationAddress));
    }

private:
    T_ASC_Association* association_ = nullptr;
    AssociationPeer peer_;
};

void add_contexts(DcmSCPConfig& config)
{
    OFList<OFString> verification;
    verification.push_back(UID_LittleEndianExplicitTransferSyntax);
    verification.push_back(UID_LittleEndianImplicitTransferSyntax);
    config.addPresentationContext(UID_VerificationSOPClass, verification);
    for (const char* model :
         {UID_FINDPatientRootQueryRetrieveInformationModel, UID_FINDStudyRootQueryRetrieveInformationModel,
          UID_GETPatientRootQueryRetrieveInformationModel, UID_GETStudyRootQueryRetrieveInformationModel})
        config.addPresentationContext(model, verification);
    // Uncompressed first; then the compressed syntaxes a modality may send
    // as they are (the gateway stores the bytes it receives).
    OFList<OFString> syntaxes;
    for (const char* uid :
         {UID_LittleEndianExplicitTransferSyntax, UID_LittleEndianImplicitTransferSyntax,
          UID_BigEndianExplicitTransferSyntax, UID_DeflatedExplicitVRLittleEndianTransferSyntax,
          UID_JPEGProcess1TransferSyntax, UID_JPEGProcess2_4TransferSyntax, UID_JPEGProcess14SV1TransferSyntax,
          UID_JPEGProcess14TransferSyntax, UID_JPEGLSLosslessTransferSyntax, UID_JPEGLSLossyTransferSyntax,
          UID_JPEG2000LosslessOnlyTransferSyntax, UID_JPEG2000TransferSyntax, UID_RLELosslessTransferSyntax,
          UID_MPEG2MainProfileAtMainLevelTransferSyntax, UID_MPEG4HighProfileLevel4_1TransferSyntax})
        syntaxes.push_back(uid);
    // DCMTK's association profile holds at most 128 presentation contexts
    // (5 above): the storage classes a storescu proposes by default come
    // first, then the rest of DCMTK's list while there is room (docs/DICOM.md,
    // "Limits"). Either role: a C-GET's requestor proposes the SCP role for
    // the classes it retrieves, a modality the SCU role.
    std::set<std::string> offered;
    auto offer = [&](const char* uid) {
        if (offered.size() >= 123 || !offered.insert(uid).second) return;
        const OFCondition added = config.addPresentationContext(uid, syntaxes, ASC_SC_ROLE_SCUSCP);
        if (added.bad()) spdlog::warn("SOP class {} not offered: {}", uid, added.text());
    };
    for (int i = 0; i < numberOfDcmShortSCUStorageSOPClassUIDs; ++i) offer(dcmShortSCUStorageSOPClassUIDs[i]);
    for (int i = 0; i < numberOfDcmAllStorageSOPClassUIDs; ++i) offer(dcmAllStorageSOPClassUIDs[i]);
    spdlog::debug("{} of DCMTK's {} storage SOP classes offered", offered.size(), numberOfDcmAllStorageSOPClassUIDs);
}

}  // namespace

std::string serve_associations(const GatewayOptions& options, InstanceStore& store, StudyIndex* index,
                               client::Session& session, const DicomSecurity& security)
{
    g_options = &options;
    g_store = &store;
    g_index = index;
    g_session = &session;
    DcmSCPConfig config;
    config.setAETitle(options.aetitle.c_str());
    config.setPort(static_cast<Uint16>(options.port));
    config.setMaxReceivePDULength(options.max_pdu);
    config.setConnectionBlockingMode(DUL_BLOCK);
    config.setDIMSEBlockingMode(DIMSE_NONBLOCKING);
    const auto seconds = static_cast<Uint32>(std::max<long long>(1, options.timeout.count() / 1000));
    config.setDIMSETimeout(seconds);
    config.setACSETimeout(seconds);
    config.setHostLookupEnabled(false);
    add_contexts(config);
    // Each association on a thread of its own, taken by AssociationGate
    // (slots, deadlines) rather than DCMTK's pool.
    const DcmSharedSCPConfig shared(config);
    return accept_associations(options, security, [shared](T_ASC_Association* association, const AssociationPeer& peer) {
        StorageScp scp;
        scp.setSharedConfig(shared);
        scp.set_peer(peer);
        const OFCondition ended = scp.run(association);
        if (ended.bad()) spdlog::debug("association ended: {}", ended.text());
    });
}

}  // namespace blobstreaming::dicom
