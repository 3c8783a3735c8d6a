#include "OutgoingAssociation.h"

#include <blobstreaming/common/Error.h>

#include <dcmtk/dcmnet/dcmtrans.h>
#include <dcmtk/dcmnet/dul.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace blobstreaming::dicom {

namespace {

/// The connection's socket: DCMTK keeps getSocket() protected; a pointer to
/// the member taken through a derived class reaches it without a cast.
struct SocketOf : DcmTransportConnection {
    static DcmNativeSocketType of(DcmTransportConnection& connection)
    {
        DcmNativeSocketType (DcmTransportConnection::*get)() = &SocketOf::getSocket;
        return (connection.*get)();
    }
};

}  // namespace

int socket_of(T_ASC_Association* association)
{
    DcmTransportConnection* connection =
        association ? DUL_getTransportConnection(association->DULassociation) : nullptr;
    return connection ? static_cast<int>(SocketOf::of(*connection)) : -1;
}

OutgoingAssociation::OutgoingAssociation(const Destination& to, const std::string& calling_ae,
                                         const std::vector<ProposedContext>& contexts, unsigned max_pdu,
                                         std::chrono::seconds timeout)
    : peer_(to.aetitle + "@" + to.host + ":" + std::to_string(to.port))
{
    const int seconds = static_cast<int>(timeout.count());
    // The TCP connect's bound (DCMTK's global: the same value everywhere).
    dcmConnectionTimeout.set(seconds);
    auto fail = [this](const std::string& why) {
        if (association_) ASC_destroyAssociation(&association_);
        if (network_) ASC_dropNetwork(&network_);
        throw Error(Errc::unreachable, "association to " + peer_ + ": " + why);
    };
    OFCondition cond = ASC_initializeNetwork(NET_REQUESTOR, 0, seconds, &network_);
    if (cond.bad()) fail(std::string("cannot initialise the network: ") + cond.text());
    T_ASC_Parameters* params = nullptr;
    cond = ASC_createAssociationParameters(&params, static_cast<long>(max_pdu));
    if (cond.bad()) fail(cond.text());
    ASC_setAPTitles(params, calling_ae.c_str(), to.aetitle.c_str(), nullptr);
    const std::string address = to.host + ":" + std::to_string(to.port);
    ASC_setPresentationAddresses(params, "localhost", address.c_str());
    T_ASC_PresentationContextID id = 1;
    for (std::size_t i = 0; i < contexts.size() && i < kMaxContexts;
         ++i, id = static_cast<T_ASC_PresentationContextID>(id + 2)) {
        std::vector<const char*> syntaxes;
        for (const std::string& s : contexts[i].transfer_syntaxes) syntaxes.push_back(s.c_str());
        cond = ASC_addPresentationContext(params, id, contexts[i].abstract_syntax.c_str(), syntaxes.data(),
                                          static_cast<int>(syntaxes.size()), contexts[i].role);
        if (cond.bad()) {
            ASC_destroyAssociationParameters(&params);
            fail("proposing SOP class " + contexts[i].abstract_syntax + ": " + cond.text());
        }
    }
    if (contexts.size() > kMaxContexts)
        spdlog::warn("association to {}: {} presentation contexts wanted, {} proposed (the most one association holds)",
                     peer_, contexts.size(), kMaxContexts);
    cond = ASC_requestAssociation(network_, params, &association_);
    if (cond.bad()) {
        if (cond == DUL_ASSOCIATIONREJECTED && association_) {
            T_ASC_RejectParameters rej;
            ASC_getRejectParameters(association_->params, &rej);
            OFString text;
            ASC_printRejectParameters(text, &rej);
            std::string why = text.c_str();
            for (char& c : why)
                if (c == '\n') c = ';';
            fail("rejected: " + why);
        }
        if (!association_) ASC_destroyAssociationParameters(&params);
        fail(cond.text());
    }
    if (ASC_countAcceptedPresentationContexts(association_->params) == 0) {
        ASC_abortAssociation(association_);
        fail("no presentation context accepted");
    }
    // DCMTK leaves Nagle on unless TCP_NODELAY=1 is in the environment:
    // each C-STORE would then wait for the peer's delayed ACK.
    if (const int fd = socket_of(association_); fd >= 0) {
        const int on = 1;
        if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0)
            spdlog::warn("association to {}: TCP_NODELAY not set: {}", peer_, std::strerror(errno));
    }
}

OutgoingAssociation::~OutgoingAssociation()
{
    if (!association_) return;
    if (abort_ || ASC_releaseAssociation(association_).bad()) ASC_abortAssociation(association_);
    ASC_destroyAssociation(&association_);
    ASC_dropNetwork(&network_);
}

}  // namespace blobstreaming::dicom
