#include "StorageCommitment.h"

#include "Destinations.h"
#include "OutgoingAssociation.h"
#include "SubOperation.h"
#include "dicom/InstanceIdentity.h"
#include "dicom/NearestCopy.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcitem.h>
#include <dcmtk/dcmdata/dcsequen.h>
#include <dcmtk/dcmdata/dcuid.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <vector>

namespace blobstreaming::dicom {

namespace {

constexpr Uint16 kNoSuchObjectInstance = 0x0112;
constexpr Uint16 kProcessingFailure = 0x0110;
constexpr Uint16 kClassInstanceConflict = 0x0119;
/// Instances pulled at once while checking.
constexpr std::size_t kBatch = 16;

struct Reference {
    std::string sop_class;
    std::string sop;
    Uint16 failure = 0;  ///< 0: committed
    std::string why;
};

std::string text_of(DcmItem& item, const DcmTagKey& tag)
{
    OFString value;
    item.findAndGetOFString(tag, value);
    return value.c_str();
}

int seconds_of(const GatewayOptions& options)
{
    return static_cast<int>(std::max<long long>(1, options.timeout.count() / 1000));
}

OFCondition answer_action(T_ASC_Association* association, T_ASC_PresentationContextID context,
                          const T_DIMSE_N_ActionRQ& request, Uint16 status, const std::string& comment)
{
    T_DIMSE_Message message{};
    message.CommandField = DIMSE_N_ACTION_RSP;
    T_DIMSE_N_ActionRSP& rsp = message.msg.NActionRSP;
    rsp.MessageIDBeingRespondedTo = request.MessageID;
    OFStandard::strlcpy(rsp.AffectedSOPClassUID, request.RequestedSOPClassUID, sizeof rsp.AffectedSOPClassUID);
    OFStandard::strlcpy(rsp.AffectedSOPInstanceUID, request.RequestedSOPInstanceUID, sizeof rsp.AffectedSOPInstanceUID);
    rsp.ActionTypeID = request.ActionTypeID;
    rsp.DimseStatus = status;
    rsp.DataSetType = DIMSE_DATASET_NULL;
    rsp.opts = O_NACTION_AFFECTEDSOPCLASSUID | O_NACTION_AFFECTEDSOPINSTANCEUID | O_NACTION_ACTIONTYPEID;
    DcmDataset detail;
    if (!comment.empty()) detail.putAndInsertString(DCM_ErrorComment, error_comment_text(comment).c_str());
    return DIMSE_sendMessageUsingMemoryData(association, context, &message, comment.empty() ? nullptr : &detail,
                                            nullptr, nullptr, nullptr);
}

/// Checks each reference against the index and its stored copies.
void verify(const CommitmentServices& services, std::vector<Reference>& refs, const std::string& operation)
{
    std::vector<std::string> sops;
    for (const Reference& r : refs)
        if (r.failure == 0) sops.push_back(r.sop);
    std::map<std::string, std::vector<IndexedBlob>> copies;
    try {
        copies = services.index->copies_of(sops);
    } catch (const Error& e) {
        spdlog::error("{}: the study index failed: {}", operation, e.what());
        for (Reference& r : refs)
            if (r.failure == 0) r = {r.sop_class, r.sop, kProcessingFailure, std::string("the study index failed")};
        return;
    }
    const std::map<std::string, client::StoreStatus> stores = store_statuses(services.session);
    std::vector<Reference*> to_check;
    for (Reference& r : refs) {
        if (r.failure != 0) continue;
        if (copies[r.sop].empty()) {
            r.failure = kNoSuchObjectInstance;
            r.why = "the study index does not list it";
        } else {
            to_check.push_back(&r);
        }
    }
    for (std::size_t begin = 0; begin < to_check.size(); begin += kBatch) {
        const std::size_t end = std::min(to_check.size(), begin + kBatch);
        std::vector<InstanceToPull> batch;
        for (std::size_t i = begin; i < end; ++i) {
            std::vector<IndexedBlob> c = copies[to_check[i]->sop];
            order_nearest(c, stores);
            batch.push_back({to_check[i]->sop, std::move(c), services.spool_path()});
        }
        const std::vector<PulledInstance> pulled = pull_from_copies(services.session, batch, client::PullOptions{});
        for (std::size_t i = begin; i < end; ++i) {
            Reference& r = *to_check[i];
            const PulledInstance& p = pulled[i - begin];
            const std::string& path = batch[i - begin].path;
            if (!p.result.ok()) {
                r.failure = kProcessingFailure;
                r.why = "no copy could be read: Blob " + p.blob + ": " + p.result.message;
            } else if (const std::string other = delivered_mismatch(path, {{"SOPInstanceUID", r.sop}});
                       !other.empty()) {
                r.failure = kProcessingFailure;
                r.why = "Blob " + p.blob + " in store \"" + p.result.store + "\" is another instance: " + other;
            } else if (const std::string cls = delivered_mismatch(path, {{"SOPClassUID", r.sop_class}}); !cls.empty()) {
                r.failure = kClassInstanceConflict;
                r.why = "stored with another SOP class: " + cls;
            }
            std::remove(path.c_str());
        }
    }
}

/// The N-EVENT-REPORT's data set (PS3.4 J.3.3): the transaction, the
/// committed instances, the failed ones with their reasons.
std::shared_ptr<DcmDataset> event_of(const std::string& transaction, const std::vector<Reference>& refs,
                                     const std::string& aetitle)
{
    auto event = std::make_shared<DcmDataset>();
    event->putAndInsertString(DCM_TransactionUID, transaction.c_str());
    event->putAndInsertString(DCM_RetrieveAETitle, aetitle.c_str());
    for (const Reference& r : refs) {
        DcmItem* item = nullptr;
        const DcmTagKey sequence = r.failure == 0 ? DCM_ReferencedSOPSequence : DCM_FailedSOPSequence;
        if (event->findOrCreateSequenceItem(sequence, item, -2).bad() || !item) continue;
        item->putAndInsertString(DCM_ReferencedSOPClassUID, r.sop_class.c_str());
        item->putAndInsertString(DCM_ReferencedSOPInstanceUID, r.sop.c_str());
        if (r.failure != 0) item->putAndInsertUint16(DCM_FailureReason, r.failure);
    }
    return event;
}

/// Sends the N-EVENT-REPORT on `association` and reads its response.
OFCondition send_event(T_ASC_Association* association, T_ASC_PresentationContextID context,
                       const CommitmentReport& report, int seconds, Uint16& status)
{
    T_DIMSE_Message message{};
    message.CommandField = DIMSE_N_EVENT_REPORT_RQ;
    T_DIMSE_N_EventReportRQ& rq = message.msg.NEventReportRQ;
    rq.MessageID = association->nextMsgID++;
    OFStandard::strlcpy(rq.AffectedSOPClassUID, UID_StorageCommitmentPushModelSOPClass, sizeof rq.AffectedSOPClassUID);
    OFStandard::strlcpy(rq.AffectedSOPInstanceUID, UID_StorageCommitmentPushModelSOPInstance,
                        sizeof rq.AffectedSOPInstanceUID);
    rq.EventTypeID = report.event_type;
    rq.DataSetType = DIMSE_DATASET_PRESENT;
    OFCondition cond =
        DIMSE_sendMessageUsingMemoryData(association, context, &message, nullptr, report.event.get(), nullptr, nullptr);
    if (cond.bad()) return cond;
    T_DIMSE_Message response{};
    T_ASC_PresentationContextID response_context = 0;
    DcmDataset* detail = nullptr;
    cond = DIMSE_receiveCommand(association, DIMSE_NONBLOCKING, seconds, &response_context, &response, &detail);
    delete detail;
    if (cond.bad()) return cond;
    if (response.CommandField != DIMSE_N_EVENT_REPORT_RSP)
        return makeOFCondition(OFM_dcmnet, 0x400, OF_error, "expected an N-EVENT-REPORT response");
    if (response.msg.NEventReportRSP.DataSetType != DIMSE_DATASET_NULL) {
        DcmDataset* reply = nullptr;
        cond = DIMSE_receiveDataSetInMemory(association, DIMSE_NONBLOCKING, seconds, &response_context, &reply, nullptr,
                                            nullptr);
        delete reply;
        if (cond.bad()) return cond;
    }
    status = response.msg.NEventReportRSP.DimseStatus;
    return EC_Normal;
}

}  // namespace

OFCondition serve_commitment(const CommitmentServices& services, T_ASC_Association* association,
                             T_ASC_PresentationContextID context, T_DIMSE_N_ActionRQ& request, const std::string& peer,
                             const std::string& calling_ae, std::unique_ptr<CommitmentReport>& later,
                             const std::string& refusal)
{
    const auto started = std::chrono::steady_clock::now();
    const int seconds = seconds_of(services.options);
    const std::string operation = "storage commitment from " + peer;
    DcmDataset* received = nullptr;
    if (request.DataSetType != DIMSE_DATASET_NULL) {
        T_ASC_PresentationContextID data_context = context;
        const OFCondition cond = DIMSE_receiveDataSetInMemory(association, DIMSE_NONBLOCKING, seconds, &data_context,
                                                              &received, nullptr, nullptr);
        if (cond.bad()) return cond;
    }
    std::unique_ptr<DcmDataset> action(received);
    auto refuse = [&](Uint16 status, const std::string& why) {
        spdlog::error("{}: N-ACTION refused (status {:04X}): {}", operation, status, printable(why));
        return answer_action(association, context, request, status, why);
    };
    if (!refusal.empty()) return refuse(0x0124, refusal);  // Refused: not authorized
    if (std::string(request.RequestedSOPClassUID) != UID_StorageCommitmentPushModelSOPClass)
        return refuse(0x0118, std::string("SOP class ") + request.RequestedSOPClassUID +
                                  " is not Storage Commitment Push Model");
    if (std::string(request.RequestedSOPInstanceUID) != UID_StorageCommitmentPushModelSOPInstance)
        return refuse(kNoSuchObjectInstance, std::string("SOP instance ") + request.RequestedSOPInstanceUID +
                                                 " is not " UID_StorageCommitmentPushModelSOPInstance);
    if (request.ActionTypeID != 1)
        return refuse(0x0123,
                      "action type " + std::to_string(request.ActionTypeID) + " is not 1 (Request Storage Commitment)");
    if (!services.index) return refuse(kProcessingFailure, "blob-dicomd runs without --index: nothing to commit");
    const std::string transaction = action ? text_of(*action, DCM_TransactionUID) : "";
    if (!valid_uid(transaction)) return refuse(0x0120, "no valid Transaction UID (0008,1195)");
    DcmSequenceOfItems* sequence = nullptr;
    if (action->findAndGetSequence(DCM_ReferencedSOPSequence, sequence).bad() || !sequence || sequence->card() == 0)
        return refuse(0x0120, "no Referenced SOP Sequence (0008,1199) with items");
    std::vector<Reference> refs;
    for (unsigned long i = 0; i < sequence->card(); ++i) {
        DcmItem* item = sequence->getItem(i);
        Reference r{text_of(*item, DCM_ReferencedSOPClassUID), text_of(*item, DCM_ReferencedSOPInstanceUID), 0, {}};
        if (!valid_uid(r.sop) || !valid_uid(r.sop_class)) {
            r.failure = kNoSuchObjectInstance;
            r.why = "not a valid UID";
        }
        refs.push_back(std::move(r));
    }
    OFCondition cond = answer_action(association, context, request, STATUS_Success, {});
    if (cond.bad()) return cond;

    verify(services, refs, operation);
    std::size_t failed = 0;
    for (const Reference& r : refs) {
        if (r.failure == 0) continue;
        ++failed;
        spdlog::warn("{}: transaction {}: instance {} not committed ({:04X}): {}", operation, transaction,
                     escaped(r.sop), r.failure, r.why);
    }
    CommitmentReport report{calling_ae, transaction, static_cast<Uint16>(failed == 0 ? 1 : 2),
                            event_of(transaction, refs, services.options.aetitle)};
    Uint16 status = 0;
    cond = send_event(association, context, report, seconds, status);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (cond.bad()) {
        spdlog::info("{}: transaction {}: the association ended before the N-EVENT-REPORT ({}): sending it on an "
                     "association of its own",
                     operation, transaction, cond.text());
        later = std::make_unique<CommitmentReport>(std::move(report));
        return cond;
    }
    spdlog::info("{}: transaction {}: {} committed, {} failed, reported on the same association (status {:04X}) in "
                 "{:.3f} s",
                 operation, transaction, refs.size() - failed, failed, status, took);
    return EC_Normal;
}

void deliver(const CommitmentServices& services, const CommitmentReport& report)
{
    const std::string operation = "storage commitment for " + printable(report.requestor);
    const Destination* destination = find_destination(services.options.destinations, report.requestor);
    if (!destination) {
        spdlog::error("{}: transaction {}: the result cannot be sent: no --destination for AE title \"{}\"", operation,
                      report.transaction_uid, printable(report.requestor));
        return;
    }
    try {
        const auto timeout = std::chrono::seconds(seconds_of(services.options));
        // The gateway is the association's requestor and the SOP class's SCP.
        OutgoingAssociation outgoing(*destination, services.options.aetitle,
                                     {{UID_StorageCommitmentPushModelSOPClass,
                                       {UID_LittleEndianExplicitTransferSyntax, UID_LittleEndianImplicitTransferSyntax},
                                       ASC_SC_ROLE_SCP}},
                                     services.options.max_pdu, timeout);
        const T_ASC_PresentationContextID context =
            ASC_findAcceptedPresentationContextID(outgoing.get(), UID_StorageCommitmentPushModelSOPClass);
        Uint16 status = 0;
        const OFCondition cond = send_event(outgoing.get(), context, report, static_cast<int>(timeout.count()), status);
        if (cond.bad()) {
            outgoing.abort();
            spdlog::error("{}: transaction {}: sending the N-EVENT-REPORT to {} failed: {}", operation,
                          report.transaction_uid, outgoing.peer(), cond.text());
            return;
        }
        spdlog::info("{}: transaction {}: reported to {} on an association of its own (status {:04X})", operation,
                     report.transaction_uid, outgoing.peer(), status);
    } catch (const Error& e) {
        spdlog::error("{}: transaction {}: {}", operation, report.transaction_uid, e.what());
    }
}

}  // namespace blobstreaming::dicom
