#include "StorageScp.h"

#include <dcmtk/dcmdata/dcuid.h>
#include <dcmtk/dcmnet/diutil.h>
#include <dcmtk/dcmnet/scp.h>
#include <dcmtk/dcmnet/scppool.h>
#include <dcmtk/dcmnet/scpthrd.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <set>
#include <string>

#include <unistd.h>

namespace blobstreaming::dicom {

namespace {

/// The pool builds its SCPs with their default constructor: they reach the
/// gateway's state through this pointer, set once before listening.
const GatewayOptions* g_options = nullptr;
InstanceStore* g_store = nullptr;
std::atomic<unsigned long> g_spool_counter{0};

class StorageScp : public DcmThreadSCP {
protected:
    OFCondition handleIncomingCommand(T_DIMSE_Message* message, const DcmPresentationContextInfo& context) override
    {
        if (message->CommandField != DIMSE_C_STORE_RQ) return DcmThreadSCP::handleIncomingCommand(message, context);
        T_DIMSE_C_StoreRQ& request = message->msg.CStoreRQ;
        ReceivedInstance instance;
        instance.sop_class_uid = request.AffectedSOPClassUID;
        instance.sop_instance_uid = request.AffectedSOPInstanceUID;
        instance.peer = std::string(getPeerAETitle().c_str()) + "@" + getPeerIP().c_str();
        instance.path = g_options->spool + "/blob-dicomd-" + std::to_string(::getpid()) + "-" +
                        std::to_string(++g_spool_counter) + ".dcm";
        const OFCondition received = receiveSTORERequest(request, context.presentationContextID, instance.path.c_str());
        if (received.bad()) {
            std::remove(instance.path.c_str());
            spdlog::error("instance {} from {}: receiving failed: {}", instance.sop_instance_uid, instance.peer,
                          received.text());
            return received;
        }
        const StoreOutcome outcome = g_store->store(instance);
        std::remove(instance.path.c_str());
        DcmDataset detail;
        DcmDataset* comment = nullptr;
        if (outcome.status != status::success) {
            // Error Comment (0000,0902) is LO: at most 64 characters.
            detail.putAndInsertString(DCM_ErrorComment, outcome.comment.substr(0, 64).c_str());
            comment = &detail;
        }
        return sendSTOREResponse(context.presentationContextID, request.MessageID, request.AffectedSOPClassUID,
                                 request.AffectedSOPInstanceUID, outcome.status, comment);
    }

    void notifyAssociationRequest(const T_ASC_Parameters& params, DcmSCPActionType& action) override
    {
        DcmThreadSCP::notifyAssociationRequest(params, action);
        spdlog::debug("association request from {}@{}", params.DULparams.callingAPTitle,
                      params.DULparams.callingPresentationAddress);
    }
};

void add_contexts(DcmSCPConfig& config)
{
    OFList<OFString> verification;
    verification.push_back(UID_LittleEndianExplicitTransferSyntax);
    verification.push_back(UID_LittleEndianImplicitTransferSyntax);
    config.addPresentationContext(UID_VerificationSOPClass, verification);
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
    // DCMTK's association profile holds at most 128 presentation contexts:
    // the storage classes a storescu proposes by default come first, then
    // the rest of DCMTK's list while there is room (docs/DICOM.md, "Limits").
    std::set<std::string> offered;
    auto offer = [&](const char* uid) {
        if (offered.size() >= 127 || !offered.insert(uid).second) return;
        const OFCondition added = config.addPresentationContext(uid, syntaxes);
        if (added.bad()) spdlog::warn("SOP class {} not offered: {}", uid, added.text());
    };
    for (int i = 0; i < numberOfDcmShortSCUStorageSOPClassUIDs; ++i) offer(dcmShortSCUStorageSOPClassUIDs[i]);
    for (int i = 0; i < numberOfDcmAllStorageSOPClassUIDs; ++i) offer(dcmAllStorageSOPClassUIDs[i]);
    spdlog::debug("{} of DCMTK's {} storage SOP classes offered", offered.size(), numberOfDcmAllStorageSOPClassUIDs);
}

}  // namespace

std::string serve_associations(const GatewayOptions& options, InstanceStore& store)
{
    g_options = &options;
    g_store = &store;
    DcmSCPPool<StorageScp> pool;
    DcmSCPConfig& config = pool.getConfig();
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
    pool.setMaxThreads(static_cast<Uint16>(options.max_associations));
    const OFCondition listened = pool.listen();
    return std::string("listening on port ") + std::to_string(options.port) + " failed: " + listened.text();
}

}  // namespace blobstreaming::dicom
