#include "SubOperation.h"

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcrledrg.h>
#include <dcmtk/dcmdata/dcuid.h>
#include <dcmtk/dcmdata/dcxfer.h>
#include <dcmtk/dcmjpeg/djdecode.h>
#include <dcmtk/dcmjpls/djdecode.h>

#include <cstdio>
#include <mutex>

namespace blobstreaming::dicom {

namespace {

std::string hex4(Uint16 value)
{
    char text[8];
    std::snprintf(text, sizeof text, "%04X", value);
    return text;
}

/// The accepted contexts of `sop_class`: (ID, transfer syntax), in the order proposed.
std::vector<std::pair<T_ASC_PresentationContextID, std::string>> accepted_contexts(T_ASC_Association* association,
                                                                                   const std::string& sop_class)
{
    std::vector<std::pair<T_ASC_PresentationContextID, std::string>> out;
    const int n = ASC_countPresentationContexts(association->params);
    for (int i = 0; i < n; ++i) {
        T_ASC_PresentationContext pc;
        if (ASC_getPresentationContext(association->params, i, &pc).bad()) continue;
        if (pc.resultReason == ASC_P_ACCEPTANCE && sop_class == pc.abstractSyntax)
            out.emplace_back(pc.presentationContextID, pc.acceptedTransferSyntax);
    }
    return out;
}

bool uncompressed(const std::string& syntax)
{
    for (const std::string& s : uncompressed_syntaxes())
        if (s == syntax) return true;
    return false;
}

}  // namespace

void register_decoders()
{
    static std::once_flag once;
    std::call_once(once, [] {
        DJDecoderRegistration::registerCodecs();
        DJLSDecoderRegistration::registerCodecs();
        DcmRLEDecoderRegistration::registerCodecs();
    });
}

const std::vector<std::string>& uncompressed_syntaxes()
{
    static const std::vector<std::string> syntaxes = {UID_LittleEndianExplicitTransferSyntax,
                                                      UID_LittleEndianImplicitTransferSyntax,
                                                      UID_BigEndianExplicitTransferSyntax};
    return syntaxes;
}

std::string error_comment_text(const std::string& text)
{
    std::string ascii;
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\\') {
            ascii += '/';
        } else if (u >= 0x20 && u < 0x7F) {
            ascii += c;
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", u);
            ascii += buf;
        }
    }
    return ascii.substr(0, 64);
}

SubOutcome send_instance(T_ASC_Association* association, const RetrievedInstance& instance, Uint16 message_id,
                         std::chrono::seconds timeout, const MoveOriginator* originator, bool& lost)
{
    const auto contexts = accepted_contexts(association, instance.sop_class);
    T_ASC_PresentationContextID context = 0;
    std::string target;
    for (const auto& [id, syntax] : contexts) {
        if (syntax == instance.transfer_syntax) {
            context = id;
            target = syntax;
            break;
        }
    }
    // Not accepted as stored: the receiver's preferred uncompressed syntax
    // (an instance stored compressed is decoded when DCMTK can).
    bool converted = false;
    if (context == 0) {
        std::string accepted;
        for (const std::string& preferred : uncompressed_syntaxes())
            for (const auto& [id, syntax] : contexts)
                if (context == 0 && syntax == preferred) {
                    context = id;
                    target = syntax;
                }
        for (const auto& c : contexts) accepted += (accepted.empty() ? "" : ", ") + c.second;
        if (context == 0) {
            const std::string why = "the receiver accepted SOP class " + instance.sop_class + " in " +
                                    (accepted.empty() ? std::string("no transfer syntax") : accepted) +
                                    ", not in its stored " + instance.transfer_syntax +
                                    " nor in an uncompressed one it could be converted to";
            return {SubStatus::failed, why, "no accepted transfer syntax for its SOP class"};
        }
        const E_TransferSyntax to = DcmXfer(target.c_str()).getXfer();
        DcmDataset* data = instance.object.getDataset();
        const OFCondition cond = data->chooseRepresentation(to, nullptr);
        if (cond.bad() || !data->canWriteXfer(to)) {
            const std::string why = "cannot convert from " + instance.transfer_syntax + " to " + target +
                                    " (the receiver accepted " + accepted + "): " +
                                    (cond.bad() ? cond.text() : "DCMTK has no decoder for it");
            return {SubStatus::failed, why,
                    uncompressed(instance.transfer_syntax) ? "conversion failed"
                                                           : "no decoder for its stored transfer syntax"};
        }
        converted = true;
    }
    T_DIMSE_Message message{};
    message.CommandField = DIMSE_C_STORE_RQ;
    T_DIMSE_C_StoreRQ& rq = message.msg.CStoreRQ;
    rq.MessageID = message_id;
    OFStandard::strlcpy(rq.AffectedSOPClassUID, instance.sop_class.c_str(), sizeof rq.AffectedSOPClassUID);
    OFStandard::strlcpy(rq.AffectedSOPInstanceUID, instance.sop.c_str(), sizeof rq.AffectedSOPInstanceUID);
    rq.DataSetType = DIMSE_DATASET_PRESENT;
    rq.Priority = DIMSE_PRIORITY_MEDIUM;
    if (originator) {
        OFStandard::strlcpy(rq.MoveOriginatorApplicationEntityTitle, originator->aetitle.c_str(),
                            sizeof rq.MoveOriginatorApplicationEntityTitle);
        rq.MoveOriginatorID = originator->message_id;
        rq.opts = O_STORE_MOVEORIGINATORAETITLE | O_STORE_MOVEORIGINATORID;
    }
    // The data set as parsed, written in the context's transfer syntax (as
    // DIMSE_sendMessageUsingFileData does with a file).
    OFCondition cond = DIMSE_sendMessageUsingMemoryData(association, context, &message, nullptr,
                                                        instance.object.getDataset(), nullptr, nullptr);
    if (cond.bad()) {
        lost = true;
        return {SubStatus::failed, std::string("sending the C-STORE failed: ") + cond.text(), "sending failed"};
    }
    T_DIMSE_Message response{};
    T_ASC_PresentationContextID response_context = 0;
    DcmDataset* detail = nullptr;
    cond = DIMSE_receiveCommand(association, DIMSE_NONBLOCKING, static_cast<int>(timeout.count()), &response_context,
                                &response, &detail);
    delete detail;
    if (cond.bad()) {
        lost = true;
        return {SubStatus::failed, std::string("no C-STORE response: ") + cond.text(), "no C-STORE response"};
    }
    if (response.CommandField != DIMSE_C_STORE_RSP) {
        lost = true;
        return {SubStatus::failed, "expected a C-STORE response, got command " + std::to_string(response.CommandField),
                "unexpected response"};
    }
    const Uint16 status = response.msg.CStoreRSP.DimseStatus;
    const std::string sent = converted ? " (converted from " + instance.transfer_syntax + " to " + target + ")" : "";
    if (status == STATUS_Success) return {SubStatus::completed, {}, {}};
    if ((status & 0xF000) == 0xB000)
        return {SubStatus::warning, "the receiver answered the C-STORE" + sent + " with warning " + hex4(status),
                "warning " + hex4(status)};
    return {SubStatus::failed, "the receiver answered the C-STORE" + sent + " with status " + hex4(status),
            "the receiver answered " + hex4(status)};
}

}  // namespace blobstreaming::dicom
