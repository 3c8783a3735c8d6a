#include "MoveScp.h"

#include "Destinations.h"
#include "OutgoingAssociation.h"
#include "Retrieval.h"
#include "SubOperation.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>

#include <dcmtk/dcmdata/dcdeftag.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

namespace blobstreaming::dicom {

namespace {

/// The counts are US (16 bits): a move of more instances reports 65535.
DIC_US count(std::size_t n) { return static_cast<DIC_US>(std::min<std::size_t>(n, 65535)); }

OFCondition respond(const MoveRequest& move, Uint16 status, const RetrievalCounts& counts, DcmDataset* identifier,
                    const std::string& comment)
{
    T_DIMSE_Message message{};
    message.CommandField = DIMSE_C_MOVE_RSP;
    T_DIMSE_C_MoveRSP& rsp = message.msg.CMoveRSP;
    rsp.MessageIDBeingRespondedTo = move.request.MessageID;
    OFStandard::strlcpy(rsp.AffectedSOPClassUID, move.request.AffectedSOPClassUID, sizeof rsp.AffectedSOPClassUID);
    rsp.DimseStatus = status;
    rsp.DataSetType = identifier ? DIMSE_DATASET_PRESENT : DIMSE_DATASET_NULL;
    rsp.NumberOfRemainingSubOperations = count(counts.remaining);
    rsp.NumberOfCompletedSubOperations = count(counts.completed);
    rsp.NumberOfFailedSubOperations = count(counts.failed);
    rsp.NumberOfWarningSubOperations = count(counts.warning);
    rsp.opts = O_MOVE_AFFECTEDSOPCLASSUID | O_MOVE_NUMBEROFCOMPLETEDSUBOPERATIONS | O_MOVE_NUMBEROFFAILEDSUBOPERATIONS |
               O_MOVE_NUMBEROFWARNINGSUBOPERATIONS;
    // Remaining: in pending responses, and in a cancel's (PS3.4 C.4.2.1.5).
    if (status == STATUS_MOVE_Pending_SubOperationsAreContinuing ||
        status == STATUS_MOVE_Cancel_SubOperationsTerminatedDueToCancelIndication)
        rsp.opts |= O_MOVE_NUMBEROFREMAININGSUBOPERATIONS;
    DcmDataset detail;
    if (!comment.empty()) detail.putAndInsertString(DCM_ErrorComment, error_comment_text(comment).c_str());
    return DIMSE_sendMessageUsingMemoryData(move.association, move.context, &message,
                                            comment.empty() ? nullptr : &detail, identifier, nullptr, nullptr);
}

/// Per SOP class: a context of the uncompressed syntaxes (an instance is
/// converted into the one accepted); then one per stored transfer syntax
/// (sent as stored).
std::vector<ProposedContext> contexts_for(const std::set<std::pair<std::string, std::string>>& presentations)
{
    std::vector<ProposedContext> out;
    std::set<std::string> classes;
    for (const auto& [sop_class, syntax] : presentations)
        if (classes.insert(sop_class).second) out.push_back({sop_class, uncompressed_syntaxes(), ASC_SC_ROLE_DEFAULT});
    for (const auto& [sop_class, syntax] : presentations)
        if (!syntax.empty()) out.push_back({sop_class, {syntax}, ASC_SC_ROLE_DEFAULT});
    return out;
}

}  // namespace

OFCondition serve_move(const MoveServices& services, const MoveRequest& move, const IndexQuery* query,
                       std::uint16_t status, const std::string& why)
{
    const auto started = std::chrono::steady_clock::now();
    const std::string destination_ae = trimmed_aetitle(move.request.MoveDestination);
    const std::string operation = "C-MOVE from " + move.peer + " to " + printable(destination_ae);
    if (!query) {
        spdlog::error("{}: refused (status {:04X}): {}", operation, status, printable(why));
        return respond(move, status, {}, nullptr, why);
    }
    if (move.refusal) {
        if (const std::string refused = move.refusal(destination_ae); !refused.empty()) {
            spdlog::error("{}: refused (status 0124): {}", operation, printable(refused));
            return respond(move, STATUS_MOVE_Refused_NotAuthorized, {}, nullptr, refused);
        }
    }
    const Destination* destination = find_destination(services.options.destinations, destination_ae);
    if (!destination) {
        const std::string text = "move destination \"" + destination_ae + "\" unknown (not a --destination)";
        spdlog::error("{}: refused (status A801): {}", operation, printable(text));
        return respond(move, STATUS_MOVE_Refused_MoveDestinationUnknown, {}, nullptr, text);
    }
    std::unique_ptr<Retrieval> retrieval;
    try {
        retrieval =
            std::make_unique<Retrieval>(*services.index, services.session, *query, operation, services.spool_path);
        // Same-host copies sent from the stores' files, as WADO-RS does.
        retrieval->in_place(true);
    } catch (const RetrievalRefused& e) {
        spdlog::error("{}: refused (status {:04X}): the study index failed: {}", operation, e.status, e.what());
        return respond(move, e.status, {}, nullptr, "study index failure (in the gateway's log)");
    }
    RetrievalCounts counts;
    if (retrieval->size() == 0) {
        spdlog::info("{}: {} level, nothing matches", operation, level_name(query->level));
        return respond(move, STATUS_Success, counts, nullptr, {});
    }
    const auto timeout = std::chrono::duration_cast<std::chrono::seconds>(services.options.timeout);
    // The first instances are pulled while the association is negotiated.
    retrieval->prefetch();
    std::unique_ptr<OutgoingAssociation> outgoing;
    try {
        outgoing = std::make_unique<OutgoingAssociation>(
            *destination, services.options.aetitle, contexts_for(retrieval->presentations()), services.options.max_pdu,
            std::max(timeout, std::chrono::seconds(1)));
    } catch (const Error& e) {
        spdlog::error("{}: refused (status A702): {}", operation, e.what());
        counts.failed = retrieval->size();
        retrieval.reset();  // what was pulled ahead dropped (spool files removed) before the answer
        return respond(move, STATUS_MOVE_Refused_OutOfResourcesSubOperations, counts, nullptr,
                       "cannot reach the move destination");
    }
    const MoveOriginator originator{trimmed_aetitle(move.calling_ae), move.request.MessageID};
    Uint16 message_id = 1;
    bool lost = false, cancelled = false;
    OFCondition requestor = EC_Normal;
    PendingPacer pending;
    counts = retrieval->run(
        [&](const RetrievedInstance& instance) {
            return send_instance(outgoing->get(), instance, message_id++, timeout, &originator, lost);
        },
        [&](const RetrievalCounts& now) {
            if (lost) return false;
            if (DIMSE_checkForCancelRQ(move.association, move.context, move.request.MessageID).good()) {
                cancelled = true;
                return false;
            }
            if (now.remaining == 0) return true;
            if (!pending.due()) return true;
            requestor = respond(move, STATUS_MOVE_Pending_SubOperationsAreContinuing, now, nullptr, {});
            return requestor.good();
        });
    if (lost) outgoing->abort();
    outgoing.reset();  // released before the final response: the destination has every instance
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (requestor.bad()) {
        spdlog::error("{}: the requesting association was lost after {} of {} instances: {}", operation,
                      counts.completed + counts.failed + counts.warning, retrieval->size(), requestor.text());
        return requestor;
    }
    if (cancelled) {
        spdlog::info("{}: cancelled after {} of {} instances ({} sent, {} failed, {} warnings) in {:.3f} s", operation,
                     counts.completed + counts.failed + counts.warning, retrieval->size(), counts.completed,
                     counts.failed, counts.warning, seconds);
        return respond(move, STATUS_MOVE_Cancel_SubOperationsTerminatedDueToCancelIndication, counts, nullptr, {});
    }
    if (lost) {
        // The destination's association failed: what was not sent failed too.
        counts.failed += counts.remaining;
        counts.remaining = 0;
    }
    spdlog::info("{}: {} level, {} instances sent, {} failed, {} warnings, in {:.3f} s", operation,
                 level_name(query->level), counts.completed, counts.failed, counts.warning, seconds);
    const Uint16 final_status = retrieval->final_status(counts);
    if (final_status == STATUS_Success) return respond(move, STATUS_Success, counts, nullptr, {});
    DcmDataset failures;
    std::string list;
    for (const std::string& uid : retrieval->failed_uids()) list += (list.empty() ? "" : "\\") + uid;
    failures.putAndInsertString(DCM_FailedSOPInstanceUIDList, list.c_str());
    return respond(move, final_status, counts, &failures, retrieval->first_comment());
}

}  // namespace blobstreaming::dicom
