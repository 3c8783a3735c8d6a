#pragma once
/// blob-dicomd's acceptance of associations: no peer, with or without
/// credentials, keeps the gateway from others (docs/SECURITY.md, "Lock-out").
///
/// DCMTK's SCP pool accepts on one thread and reads each association
/// request there, the request's body with no deadline: one connection that
/// sends a few bytes stopped every other peer. Here the listener thread only
/// accepts; each connection gets a slot at once (at most --max-associations
/// in all, --max-associations-per-peer from one IP address; beyond those it
/// is rejected, transient, "local limit exceeded") and a thread of its own
/// that reads the whole A-ASSOCIATE-RQ PDU by --timeout from the accept,
/// then lets DCMTK take the association from that socket with the bytes
/// read. Every later PDU must arrive whole within --timeout of its first
/// byte, and every DIMSE command within --timeout of its first fragment (a
/// peer trickling a message loses its association and its slot); between
/// PDUs DCMTK's DIMSE timeout (--timeout) applies.

#include "DicomSecurity.h"
#include "GatewayOptions.h"

#include <dcmtk/dcmnet/assoc.h>

#include <functional>
#include <string>

namespace blobstreaming::dicom {

/// An admitted association's peer: what DicomSecurity::rights_of was asked
/// with (the calling AE title is in the association's parameters) and its answer.
struct AssociationPeer {
    std::string address;      ///< IPv4, dotted
    std::string tls_subject;  ///< the verified client certificate's subject; "" without TLS
    Rights rights;
};

/// Listens on options.port (IPv4, every interface) and serves associations
/// until the process ends: `serve` runs one admitted association to its end
/// on the connection's thread (it owns the association: DcmThreadSCP::run
/// drops and destroys it). Returns only when listening fails, with why.
std::string accept_associations(const GatewayOptions& options, const DicomSecurity& security,
                                const std::function<void(T_ASC_Association*, const AssociationPeer&)>& serve);

}  // namespace blobstreaming::dicom
