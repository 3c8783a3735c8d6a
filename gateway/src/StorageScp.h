#pragma once
/// blob-dicomd's DICOM side: DCMTK's DcmThreadSCP on the threads of
/// AssociationGate (a thread per association, at most --max-associations,
/// --max-associations-per-peer from one address; more are rejected "local
/// limit exceeded"),
/// accepting storage SOP classes of DCMTK's list with the common transfer
/// syntaxes, Verification (C-ECHO), Query/Retrieve (C-FIND, C-GET, C-MOVE:
/// MoveScp) in the Patient Root and Study Root models, and Storage
/// Commitment (StorageCommitment).

#include "DicomSecurity.h"
#include "InstanceStore.h"

#include <cstdint>
#include <string>

namespace blobstreaming::dicom {

/// Listens on options.port and serves associations until the process ends;
/// each C-STORE goes through `store`, C-FIND, C-GET, C-MOVE and Storage
/// Commitment through `index` (null: refused, no --index) and `session`
/// (they pull the instances); `security` admits associations and each
/// operation needs its right (refused with status 0124, Refused: not
/// authorized).
/// Returns only when listening fails (e.g. the port is taken), with why.
std::string serve_associations(const GatewayOptions& options, InstanceStore& store, StudyIndex* index,
                               client::Session& session, const DicomSecurity& security);

}  // namespace blobstreaming::dicom
