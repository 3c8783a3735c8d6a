#pragma once
/// Storage Commitment Push Model SCP (PS3.4 J; docs/DICOM.md, "Storage
/// Commitment"): an N-ACTION (Request Storage Commitment, action 1) on the
/// well-known instance 1.2.840.10008.1.20.1.1 lists instances; the gateway
/// answers it, then confirms only those it holds durably and verified: the
/// study index lists the instance, and a copy of it pulls whole from its
/// store (the checksum verified, nearest copy first) with the SOP Instance
/// UID and SOP Class UID referenced. The others go in the Failed SOP
/// Sequence: 0112 (no such object instance: not indexed, or an invalid
/// UID), 0119 (class/instance conflict: stored with another SOP class) or
/// 0110 (processing failure: no copy could be read, or it is another
/// instance). The N-EVENT-REPORT (event 1: all committed, 2: failures)
/// goes on the same association; when that has ended (the modality
/// released it, or did not answer), on an association of its own to the
/// requesting AE's --destination (deliver()).

#include "GatewayOptions.h"

#include "dicom/StudyIndex.h"

#include <blobstreaming/client/Session.h>

#include <dcmtk/dcmdata/dcdatset.h>
#include <dcmtk/dcmnet/assoc.h>
#include <dcmtk/dcmnet/dimse.h>

#include <functional>
#include <memory>
#include <string>

namespace blobstreaming::dicom {

struct CommitmentServices {
    const GatewayOptions& options;
    StudyIndex* index;  ///< null: no --index (the request is refused)
    client::Session& session;
    std::function<std::string()> spool_path;
};

/// A result that could not go on its association: for deliver().
struct CommitmentReport {
    std::string requestor;  ///< the calling AE title of the N-ACTION
    std::string transaction_uid;
    Uint16 event_type = 1;
    std::shared_ptr<DcmDataset> event;
};

/// Serves one N-ACTION: receives its data set, answers it, checks each
/// instance and sends the N-EVENT-REPORT on `association`. When that
/// association has ended or failed meanwhile, `later` holds the report and
/// the condition returned is the association's (e.g. the peer's release
/// request, which the caller acknowledges before deliver()). `refusal`:
/// why the requestor may not ask (the DICOM port's access control; it needs
/// the store right), answered with status 0124 before anything is checked;
/// "" : it may.
OFCondition serve_commitment(const CommitmentServices& services, T_ASC_Association* association,
                             T_ASC_PresentationContextID context, T_DIMSE_N_ActionRQ& request, const std::string& peer,
                             const std::string& calling_ae, std::unique_ptr<CommitmentReport>& later,
                             const std::string& refusal = {});

/// Sends `report` on an association of its own to the requestor's
/// --destination (proposing the Storage Commitment Push Model SOP class in
/// the SCP role); logs the outcome (no --destination for it: an error).
void deliver(const CommitmentServices& services, const CommitmentReport& report);

}  // namespace blobstreaming::dicom
