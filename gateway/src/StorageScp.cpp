#include "StorageScp.h"

#include "dicom/InstanceIdentity.h"
#include "dicom/NearestCopy.h"
#include "AssociationGate.h"
#include "DataSetReceiver.h"
#include "MoveScp.h"
#include "QueryRetrieve.h"
#include "Retrieval.h"
#include "Spool.h"
#include "StorageCommitment.h"
#include "SubOperation.h"

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
        // Storage Commitment results whose association ended first.
        const CommitmentServices services{*g_options, g_index, *g_session, spool_path};
        for (const CommitmentReport& report : reports_) deliver(services, report);
        return result;
    }

protected:
    OFCondition handleIncomingCommand(T_DIMSE_Message* message, const DcmPresentationContextInfo& context) override
    {
        // What this association (or another) was told is stored is indexed
        // before anything reads the index (InstanceStore::wait_indexed).
        if (message->CommandField != DIMSE_C_STORE_RQ && message->CommandField != DIMSE_C_ECHO_RQ)
            g_store->wait_indexed();
        if (message->CommandField == DIMSE_C_FIND_RQ) return find(message->msg.CFindRQ, context.presentationContextID);
        if (message->CommandField == DIMSE_C_GET_RQ) return get(message->msg.CGetRQ, context.presentationContextID);
        if (message->CommandField == DIMSE_C_MOVE_RQ) return move(message->msg.CMoveRQ, context.presentationContextID);
        if (message->CommandField == DIMSE_N_ACTION_RQ)
            return commit(message->msg.NActionRQ, context.presentationContextID);
        if (message->CommandField != DIMSE_C_STORE_RQ) return DcmThreadSCP::handleIncomingCommand(message, context);
        T_DIMSE_C_StoreRQ& request = message->msg.CStoreRQ;
        if (!peer_.rights.store) return refuse_store(request, context.presentationContextID);
        ReceivedInstance instance;
        instance.sop_class_uid = request.AffectedSOPClassUID;
        instance.sop_instance_uid = request.AffectedSOPInstanceUID;
        instance.peer = std::string(getPeerAETitle().c_str()) + "@" + getPeerIP().c_str();
        // Into memory (a large data set: into this spool file), nothing of
        // it pushed before its last PDV: an association that breaks meanwhile
        // leaves no Blob and no index entry.
        instance.path = spool_path();
        const OFCondition received =
            received_.receive(association_, request, context.presentationContextID, getDIMSEBlockingMode(),
                              static_cast<int>(getDIMSETimeout()), instance.path);
        if (received.bad()) {
            spdlog::error("instance {} from {}: receiving failed: {}", printable(instance.sop_instance_uid),
                          printable(instance.peer), received.text());
            return received;
        }
        // The spool file, if any, goes once the modality has its answer.
        struct Spool {
            const std::string& path;
            ~Spool() { std::remove(path.c_str()); }
        } spool{instance.path};
        OFCondition answered = EC_Normal;
        const auto respond = [&](const StoreOutcome& outcome) {
            DcmDataset detail;
            DcmDataset* comment = nullptr;
            if (outcome.status != status::success) {
                // Error Comment (0000,0902) is LO: at most 64 characters.
                detail.putAndInsertString(DCM_ErrorComment, outcome.comment.substr(0, 64).c_str());
                comment = &detail;
            }
            answered = sendSTOREResponse(context.presentationContextID, request.MessageID, request.AffectedSOPClassUID,
                                         request.AffectedSOPInstanceUID, outcome.status, comment);
        };
        if (received_.spilled())
            g_store->store(instance, respond);
        else
            g_store->store(instance, received_.bytes(), respond);
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
        detail.putAndInsertString(DCM_ErrorComment, error_comment_text(why).c_str());
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
                rows = g_index->find(query.level, query.matches, query.returned);
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
                                  const RetrievalCounts& counts, DcmDataset* identifier = nullptr,
                                  DcmDataset* detail = nullptr)
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
        rsp.NumberOfRemainingSubOperations = count(counts.remaining);
        rsp.NumberOfCompletedSubOperations = count(counts.completed);
        rsp.NumberOfFailedSubOperations = count(counts.failed);
        rsp.NumberOfWarningSubOperations = count(counts.warning);
        rsp.opts = O_GET_AFFECTEDSOPCLASSUID | O_GET_NUMBEROFCOMPLETEDSUBOPERATIONS |
                   O_GET_NUMBEROFFAILEDSUBOPERATIONS | O_GET_NUMBEROFWARNINGSUBOPERATIONS;
        if (status == STATUS_GET_Pending_SubOperationsAreContinuing ||
            status == STATUS_GET_Cancel_SubOperationsTerminatedDueToCancelIndication)
            rsp.opts |= O_GET_NUMBEROFREMAININGSUBOPERATIONS;
        return sendDIMSEMessage(context, &message, identifier, detail);
    }

    /// C-GET (Patient Root, Study Root): the instances the index lists for
    /// the identifier (Retrieval: from their nearest copies, verified), sent
    /// as C-STORE sub-operations on this association (send_instance: as
    /// stored, bit-exact, else converted where the peer needs it).
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
        std::unique_ptr<Retrieval> retrieval;
        if (!peer_.rights.retrieve) {
            status = kNotAuthorized;
            why = "not authorized: no retrieve right for this AE title";
        } else if (parse_query(request.AffectedSOPClassUID, identifier, query, status, why)) {
            try {
                retrieval = std::make_unique<Retrieval>(*g_index, *g_session, query, "C-GET from " + peer(), spool_path);
                retrieval->in_place(true);  // same-host copies sent from the stores' files
            } catch (const RetrievalRefused& e) {
                status = e.status;
                why = index_failure("C-GET", peer(), Error(Errc::io_error, e.what()));
            }
        }
        DcmDataset detail;
        if (!why.empty()) {
            spdlog::error("C-GET from {}: refused (status {:04X}): {}", peer(), status, printable(why));
            return send_get_response(context, request, status, {}, nullptr, error_comment(detail, why));
        }
        Uint16 message_id = 1;
        bool lost = false, cancelled = false;
        PendingPacer pending;
        const auto timeout = std::chrono::duration_cast<std::chrono::seconds>(g_options->timeout);
        const RetrievalCounts counts = retrieval->run(
            [&](const RetrievedInstance& instance) {
                return send_instance(association_, instance, message_id++, timeout, nullptr, lost, &cancelled);
            },
            [&](const RetrievalCounts& now) {
                if (lost || cancelled) return false;
                if (checkForCANCEL(context, request.MessageID).good()) return false;
                if (now.remaining == 0 || !pending.due()) return true;
                cond = send_get_response(context, request, STATUS_GET_Pending_SubOperationsAreContinuing, now);
                return cond.good();
            });
        if (lost) return DIMSE_ILLEGALASSOCIATION;
        if (cond.bad()) return cond;
        if (counts.remaining > 0) {
            spdlog::info("C-GET from {}: cancelled after {} of {} instances", peer(),
                         retrieval->size() - counts.remaining, retrieval->size());
            return send_get_response(context, request, STATUS_GET_Cancel_SubOperationsTerminatedDueToCancelIndication,
                                     counts);
        }
        spdlog::info("C-GET from {}: {} level, {} instances sent, {} failed, in {:.3f} s", peer(),
                     level_name(query.level), counts.completed, counts.failed,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
        const Uint16 final_status = retrieval->final_status(counts);
        if (final_status == STATUS_Success) return send_get_response(context, request, STATUS_Success, counts);
        DcmDataset failures;
        std::string list;
        for (const std::string& uid : retrieval->failed_uids()) list += (list.empty() ? "" : "\\") + uid;
        failures.putAndInsertString(DCM_FailedSOPInstanceUIDList, list.c_str());
        // The first failure's reason (the log has each, in full), as far as LO holds it.
        return send_get_response(context, request, final_status, counts, &failures,
                                 error_comment(detail, retrieval->first_comment()));
    }

    /// C-MOVE (Patient Root, Study Root): MoveScp.
    OFCondition move(T_DIMSE_C_MoveRQ& request, T_ASC_PresentationContextID context)
    {
        DcmDataset* identifier = nullptr;
        T_ASC_PresentationContextID data_context = context;
        const OFCondition cond = receiveDIMSEDataset(&data_context, &identifier);
        if (cond.bad()) return cond;
        std::unique_ptr<DcmDataset> owned(identifier);
        IndexQuery query;
        Uint16 status = 0;
        std::string why;
        const bool parsed = parse_query(request.AffectedSOPClassUID, identifier, query, status, why);
        const MoveServices services{*g_options, g_index, *g_session, spool_path};
        // The DICOM port's access control decides who may move where.
        const auto refusal = [this](const std::string& destination) -> std::string {
            if (!peer_.rights.move) return "not authorized: no move right for this AE title";
            if (!peer_.rights.may_move_to(destination))
                return "not authorized: this AE title may not move to " + destination;
            return {};
        };
        return serve_move(services, {association_, context, request, peer(), getPeerAETitle().c_str(), refusal},
                          parsed ? &query : nullptr, status, why);
    }

    /// N-ACTION of Storage Commitment: StorageCommitment; a result whose
    /// association ended is sent once this one is over (run()).
    OFCondition commit(T_DIMSE_N_ActionRQ& request, T_ASC_PresentationContextID context)
    {
        std::unique_ptr<CommitmentReport> later;
        const CommitmentServices services{*g_options, g_index, *g_session, spool_path};
        const std::string refusal =
            peer_.rights.store ? std::string() : "not authorized: no store right for this AE title (Storage "
                                                 "Commitment confirms what a peer stored)";
        const OFCondition cond = serve_commitment(services, association_, context, request, peer(),
                                                  getPeerAETitle().c_str(), later, refusal);
        if (later) reports_.push_back(std::move(*later));
        return cond;
    }

    /// The release is answered once the entries of what the association
    /// stored are written: a query after the modality's release finds them.
    void notifyReleaseRequest() override
    {
        g_store->wait_indexed();
        DcmThreadSCP::notifyReleaseRequest();
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
    DataSetReceiver received_;  ///< each C-STORE's data set, its memory kept between them
    std::vector<CommitmentReport> reports_;
};

void add_contexts(DcmSCPConfig& config)
{
    OFList<OFString> verification;
    verification.push_back(UID_LittleEndianExplicitTransferSyntax);
    verification.push_back(UID_LittleEndianImplicitTransferSyntax);
    config.addPresentationContext(UID_VerificationSOPClass, verification);
    for (const char* model :
         {UID_FINDPatientRootQueryRetrieveInformationModel, UID_FINDStudyRootQueryRetrieveInformationModel,
          UID_GETPatientRootQueryRetrieveInformationModel, UID_GETStudyRootQueryRetrieveInformationModel,
          UID_MOVEPatientRootQueryRetrieveInformationModel, UID_MOVEStudyRootQueryRetrieveInformationModel})
        config.addPresentationContext(model, verification);
    // Either role: a modality may propose the SCP role too, to have the
    // N-EVENT-REPORT on the association of its N-ACTION.
    config.addPresentationContext(UID_StorageCommitmentPushModelSOPClass, verification, ASC_SC_ROLE_SCUSCP);
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
    // (8 above): the storage classes a storescu proposes by default come
    // first, then the rest of DCMTK's list while there is room (docs/DICOM.md,
    // "Limits"). Either role: a C-GET's requestor proposes the SCP role for
    // the classes it retrieves, a modality the SCU role.
    std::set<std::string> offered;
    auto offer = [&](const char* uid) {
        if (offered.size() >= 120 || !offered.insert(uid).second) return;
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
    register_decoders();
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
