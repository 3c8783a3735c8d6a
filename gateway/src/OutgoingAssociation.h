#pragma once
/// An association blob-dicomd requests itself (DCMTK's ASC_requestAssociation):
/// C-MOVE's sub-operations to the move destination, Storage Commitment's
/// N-EVENT-REPORT when the requesting association has ended. The TCP
/// connect and every wait for the peer are bounded by the timeout;
/// TCP_NODELAY is set on the connection (../docs/DICOM.md, "C-MOVE":
/// without it each C-STORE waits for the peer's delayed ACK).

#include "Destinations.h"

#include <dcmtk/dcmnet/assoc.h>

#include <chrono>
#include <string>
#include <vector>

namespace blobstreaming::dicom {

/// One presentation context to propose.
struct ProposedContext {
    std::string abstract_syntax;
    std::vector<std::string> transfer_syntaxes;
    T_ASC_SC_ROLE role = ASC_SC_ROLE_DEFAULT;
};

/// The TCP socket under `association` (-1: none), for socket options DCMTK
/// does not set (TCP_NODELAY here, TCP_CORK while a C-STORE is written).
int socket_of(T_ASC_Association* association);

class OutgoingAssociation {
public:
    /// At most this many contexts in one association (odd IDs 1 to 255).
    static constexpr std::size_t kMaxContexts = 128;

    /// Connects to `to` as `calling_ae` and proposes `contexts` (the first
    /// kMaxContexts). Throws Error(unreachable) saying why: the connection
    /// failed or timed out, the association was rejected (DCMTK's reason),
    /// or no context was accepted.
    OutgoingAssociation(const Destination& to, const std::string& calling_ae,
                        const std::vector<ProposedContext>& contexts, unsigned max_pdu, std::chrono::seconds timeout);
    /// Releases the association (aborts it after abort() or a failed release).
    ~OutgoingAssociation();
    OutgoingAssociation(const OutgoingAssociation&) = delete;
    OutgoingAssociation& operator=(const OutgoingAssociation&) = delete;

    T_ASC_Association* get() const { return association_; }
    /// The association is not usable any more (a send failed): abort it.
    void abort() { abort_ = true; }
    /// "AE@host:port" for log lines.
    const std::string& peer() const { return peer_; }

private:
    T_ASC_Network* network_ = nullptr;
    T_ASC_Association* association_ = nullptr;
    bool abort_ = false;
    std::string peer_;
};

}  // namespace blobstreaming::dicom
