#include "SubOperation.h"

#include "OutgoingAssociation.h"

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dccodec.h>
#include <dcmtk/dcmdata/dcistrmb.h>
#include <dcmtk/dcmdata/dcostrmb.h>
#include <dcmtk/dcmdata/dcrledrg.h>
#include <dcmtk/dcmdata/dcuid.h>
#include <dcmtk/dcmdata/dcxfer.h>
#include <dcmtk/dcmjpeg/djdecode.h>
#include <dcmtk/dcmjpls/djdecode.h>

#include <dcmtk/dcmnet/dul.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

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

/// The whole object parsed (DCMTK), from memory or its spool file.
std::unique_ptr<DcmFileFormat> parse(const RetrievedInstance& instance, std::string& why)
{
    auto object = std::make_unique<DcmFileFormat>();
    OFCondition read;
    if (instance.bytes) {
        DcmInputBufferStream stream;
        stream.setBuffer(instance.bytes, static_cast<offile_off_t>(instance.size));
        stream.setEos();
        object->transferInit();
        read = object->read(stream, EXS_Unknown, EGL_noChange, DCM_MaxReadLength);
        object->transferEnd();
    } else {
        read = object->loadFile(instance.path.c_str());
    }
    if (read.bad()) {
        why = std::string("the object does not parse: ") + read.text();
        return nullptr;
    }
    return object;
}

/// The whole object parsed and its pixel data put in the transfer syntax
/// `target` (DCMTK's decoders); null with `why` ("cannot convert from
/// STORED to TARGET`context`: the reason") when it cannot be.
std::unique_ptr<DcmFileFormat> convert_object(const RetrievedInstance& instance, const std::string& target,
                                              const std::string& context, std::string& why)
{
    register_decoders();
    std::string unparsed;
    std::unique_ptr<DcmFileFormat> object = parse(instance, unparsed);
    OFCondition cond = object ? EC_Normal : makeOFCondition(OFM_dcmdata, 1, OF_error, unparsed.c_str());
    const E_TransferSyntax to = DcmXfer(target.c_str()).getXfer();
    DcmDataset* data = object ? object->getDataset() : nullptr;
    if (cond.good()) cond = data->chooseRepresentation(to, nullptr);
    if (cond.bad() || !data->canWriteXfer(to)) {
        why = "cannot convert from " + instance.transfer_syntax + " to " + target + context + ": " +
              (cond.bad() ? std::string(cond.text()) : std::string("DCMTK has no decoder for it"));
        return nullptr;
    }
    return object;
}

void put16(std::vector<std::uint8_t>& out, std::uint16_t v)
{
    out.push_back(static_cast<std::uint8_t>(v & 0xFF));
    out.push_back(static_cast<std::uint8_t>(v >> 8));
}

void put32(std::vector<std::uint8_t>& out, std::uint32_t v)
{
    for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<std::uint8_t>((v >> shift) & 0xFF));
}

/// One command element, implicit VR little endian (PS3.7 6.3.1); a text
/// value padded to an even length (UI with NUL, AE with a space).
void element(std::vector<std::uint8_t>& out, std::uint16_t tag, const std::string& text, char pad)
{
    std::string value = text;
    if (value.size() % 2) value += pad;
    put16(out, 0x0000);
    put16(out, tag);
    put32(out, static_cast<std::uint32_t>(value.size()));
    out.insert(out.end(), value.begin(), value.end());
}

void element(std::vector<std::uint8_t>& out, std::uint16_t tag, std::uint16_t value)
{
    put16(out, 0x0000);
    put16(out, tag);
    put32(out, 2);
    put16(out, value);
}

/// The command set of a C-STORE request (PS3.7 9.3.1.1), group length first.
std::vector<std::uint8_t> store_command(const RetrievedInstance& instance, Uint16 message_id,
                                        const MoveOriginator* originator)
{
    std::vector<std::uint8_t> body;
    element(body, 0x0002, instance.sop_class, '\0');  // Affected SOP Class UID
    element(body, 0x0100, std::uint16_t{0x0001});     // Command Field: C-STORE-RQ
    element(body, 0x0110, message_id);                // Message ID
    element(body, 0x0700, std::uint16_t{0x0000});     // Priority: medium
    element(body, 0x0800, std::uint16_t{0x0000});     // Command Data Set Type: present
    element(body, 0x1000, instance.sop, '\0');        // Affected SOP Instance UID
    if (originator) {
        element(body, 0x1030, originator->aetitle, ' ');  // Move Originator Application Entity Title
        element(body, 0x1031, originator->message_id);    // Move Originator Message ID
    }
    std::vector<std::uint8_t> out;
    put16(out, 0x0000);
    put16(out, 0x0000);  // Command Group Length
    put32(out, 4);
    put32(out, static_cast<std::uint32_t>(body.size()));
    out.insert(out.end(), body.begin(), body.end());
    return out;
}

/// `data` as PDVs of the association's largest size, the last one marked.
OFCondition send_pdvs(T_ASC_Association* association, T_ASC_PresentationContextID context, DUL_DATAPDV type,
                      const std::uint8_t* data, std::size_t size)
{
    const std::size_t most = std::max<unsigned long>(association->sendPDVLength, 1024);
    std::size_t offset = 0;
    do {
        const std::size_t n = std::min(most, size - offset);
        DUL_PDV pdv{};
        pdv.fragmentLength = n;
        pdv.presentationContextID = context;
        pdv.pdvType = type;
        pdv.lastPDV = offset + n == size;
        pdv.data = const_cast<std::uint8_t*>(data + offset);
        DUL_PDVLIST list{};
        list.count = 1;
        list.pdv = &pdv;
        const OFCondition cond = DUL_WritePDVs(&association->DULassociation, &list);
        if (cond.bad()) return cond;
        offset += n;
    } while (offset < size);
    return EC_Normal;
}

/// TCP_CORK on the association's socket while one C-STORE request is
/// written. DCMTK writes each P-DATA-TF PDU as two writes, its 12-byte
/// header then the PDV's data; with TCP_NODELAY on (as it must be, or each
/// response waits for a delayed ACK) every header leaves in a segment of its
/// own, one more packet and one more wake-up of the receiver per PDU. Corked,
/// the headers and the command go out in the data's full segments; the
/// destructor uncorks, which sends what is left before the response is
/// awaited. Nothing is held past the request: a failure to set it only
/// costs the packets.
class Corked {
public:
    explicit Corked(T_ASC_Association* association) : fd_(socket_of(association)) { set(1); }
    ~Corked() { set(0); }
    Corked(const Corked&) = delete;
    Corked& operator=(const Corked&) = delete;

private:
    void set(int on)
    {
        if (fd_ >= 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
    }
    int fd_;
};

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

bool convertible(const std::string& syntax)
{
    register_decoders();
    const DcmXfer xfer(syntax.c_str());
    if (xfer.getXfer() == EXS_Unknown) return false;
    return !xfer.isEncapsulated() || DcmCodecList::canChangeCoding(xfer.getXfer(), EXS_LittleEndianExplicit);
}

std::vector<std::uint8_t> converted_part10(const RetrievedInstance& instance, const std::string& target,
                                           std::string& why)
{
    const std::unique_ptr<DcmFileFormat> object = convert_object(instance, target, "", why);
    if (!object) return {};
    const E_TransferSyntax to = DcmXfer(target.c_str()).getXfer();
    OFCondition cond;
    std::vector<std::uint8_t> out;
    out.reserve(instance.size + instance.size / 2);
    std::vector<std::uint8_t> piece(std::size_t{1} << 20);
    DcmOutputBufferStream stream(piece.data(), static_cast<offile_off_t>(piece.size()));
    object->transferInit();
    do {
        cond = object->write(stream, to, EET_ExplicitLength, nullptr, EGL_recalcGL, EPD_noChange, 0, 0, 0,
                             EWM_updateMeta);
        void* written = nullptr;
        offile_off_t length = 0;
        stream.flushBuffer(written, length);
        const auto* bytes = static_cast<const std::uint8_t*>(written);
        out.insert(out.end(), bytes, bytes + length);
    } while (cond == EC_StreamNotifyClient);
    object->transferEnd();
    if (cond.bad()) {
        why = "cannot write it in " + target + ": " + std::string(cond.text());
        return {};
    }
    return out;
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
                         std::chrono::seconds timeout, const MoveOriginator* originator, bool& lost, bool* cancel)
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
    std::unique_ptr<DcmFileFormat> object;
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
            // No context of its SOP class at all is not a matter of transfer syntax.
            if (contexts.empty()) return {SubStatus::failed, why, "not accepted: its SOP class " + instance.sop_class};
            return {SubStatus::failed, why, "not accepted: its transfer syntax " + instance.transfer_syntax, true};
        }
        std::string why;
        object = convert_object(instance, target, " (the receiver accepted " + accepted + ")", why);
        if (!object) {
            return {SubStatus::failed, why,
                    (uncompressed(instance.transfer_syntax) ? "cannot convert from its transfer syntax "
                                                            : "no decoder for its transfer syntax ") +
                        instance.transfer_syntax,
                    true};
        }
        converted = true;
    }
    OFCondition cond;
    std::optional<Corked> corked(association);
    if (!object && instance.bytes && instance.data_set_offset > 0) {
        // As stored: the command, then the data set's bytes as they are in
        // the Blob (never parsed nor written again), bit for bit.
        const std::vector<std::uint8_t> command = store_command(instance, message_id, originator);
        cond = send_pdvs(association, context, DUL_COMMANDPDV, command.data(), command.size());
        if (cond.good())
            cond = send_pdvs(association, context, DUL_DATASETPDV, instance.bytes + instance.data_set_offset,
                             instance.size - instance.data_set_offset);
    } else {
        std::string why;
        if (!object && !(object = parse(instance, why))) return {SubStatus::failed, why, "the object does not parse"};
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
        // Converted, or an instance in a spool file: the data set as parsed,
        // written in the context's transfer syntax.
        cond = DIMSE_sendMessageUsingMemoryData(association, context, &message, nullptr, object->getDataset(), nullptr,
                                                nullptr);
    }
    corked.reset();  // the request's last bytes leave now
    if (cond.bad()) {
        lost = true;
        return {SubStatus::failed, std::string("sending the C-STORE failed: ") + cond.text(), "sending failed"};
    }
    T_DIMSE_Message response{};
    // A C-GET's requestor may send its C-CANCEL before this response (at
    // most once): noted for the caller, then the response is read.
    for (int commands = 0;; ++commands) {
        response = T_DIMSE_Message{};
        T_ASC_PresentationContextID response_context = 0;
        DcmDataset* detail = nullptr;
        cond = DIMSE_receiveCommand(association, DIMSE_NONBLOCKING, static_cast<int>(timeout.count()),
                                    &response_context, &response, &detail);
        delete detail;
        if (cond.bad()) {
            lost = true;
            return {SubStatus::failed, std::string("no C-STORE response: ") + cond.text(), "no C-STORE response"};
        }
        if (response.CommandField == DIMSE_C_CANCEL_RQ && cancel && commands == 0) {
            *cancel = true;
            continue;
        }
        break;
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
