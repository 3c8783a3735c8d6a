#pragma once
/// C-MOVE (Patient Root and Study Root, every level; PS3.4 C.4.2;
/// docs/DICOM.md, "C-MOVE"): the instances the study index lists for the
/// identifier are retrieved as C-GET retrieves them (Retrieval: the nearest
/// copy, verified) and sent to the move destination (Destinations.h) on an
/// association of their own (OutgoingAssociation), one C-STORE
/// sub-operation each (send_instance: as stored, else converted). A pending
/// response with the remaining, completed, failed and warning counts follows
/// the first sub-operation, then at most one per 50 ms; C-CANCEL, looked for
/// after each sub-operation, stops the move after the current one (FE00
/// with the counts); the final response is 0000, B000 with the Failed SOP
/// Instance UID List, or A702 when none was sent.

#include "GatewayOptions.h"
#include "QueryRetrieve.h"

#include <blobstreaming/client/Session.h>

#include <dcmtk/dcmnet/assoc.h>
#include <dcmtk/dcmnet/dimse.h>

#include <cstdint>
#include <functional>
#include <string>

namespace blobstreaming::dicom {

/// What the gateway's C-MOVE needs of it.
struct MoveServices {
    const GatewayOptions& options;
    StudyIndex* index;  ///< null: no --index (refused)
    client::Session& session;
    std::function<std::string()> spool_path;
};

/// The C-MOVE request being served, on the requesting association.
struct MoveRequest {
    T_ASC_Association* association;
    T_ASC_PresentationContextID context;
    T_DIMSE_C_MoveRQ& request;
    std::string peer;        ///< "AE@host", printable, for log lines
    std::string calling_ae;  ///< the requestor's AE title (the sub-operations' Move Originator)
    /// Why the requestor may not move to the destination AE title it names
    /// ("" : it may), asked before anything else: the association's rights
    /// as the caller holds them (the DICOM port's access control decides,
    /// not this code). Null: no check.
    std::function<std::string(const std::string& destination)> refusal;
};

/// Serves one C-MOVE whose identifier was parsed into `query` (null: it was
/// refused with `status` and `why`). Returns the condition of the
/// requesting association (bad: it is lost).
OFCondition serve_move(const MoveServices& services, const MoveRequest& move, const IndexQuery* query,
                       std::uint16_t status, const std::string& why);

}  // namespace blobstreaming::dicom
