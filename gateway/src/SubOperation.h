#pragma once
/// One C-STORE sub-operation of a C-GET or C-MOVE (docs/DICOM.md,
/// "Transfer syntaxes of a retrieval"): the instance goes out in its stored
/// transfer syntax when the receiver accepted a context of its SOP class in
/// that syntax: the C-STORE command set written here, then the data set's
/// bytes as the Blob holds them (never parsed nor encoded again). An
/// instance over 8 MiB, in a spool file, is parsed and written by DCMTK in
/// that syntax. Otherwise it is
/// converted with DCMTK into the syntax of a context the receiver accepted
/// for its SOP class: between the uncompressed syntaxes (explicit and
/// implicit VR little endian, explicit VR big endian), from deflated, and
/// from JPEG, JPEG-LS and RLE to uncompressed (DCMTK's decoders). Nothing
/// is compressed, and JPEG 2000 (DCMTK has no decoder for it) nor MPEG is
/// converted: such a sub-operation fails, naming what the receiver accepted.

#include "Retrieval.h"

#include <dcmtk/dcmnet/assoc.h>
#include <dcmtk/dcmnet/dimse.h>

#include <chrono>
#include <string>
#include <vector>

namespace blobstreaming::dicom {

/// Registers DCMTK's JPEG, JPEG-LS and RLE decoders; once, before the first
/// association.
void register_decoders();

/// The uncompressed transfer syntaxes an instance may be converted to,
/// preferred first (explicit VR little endian, implicit, big endian).
const std::vector<std::string>& uncompressed_syntaxes();

/// Whether an instance stored in `syntax` can be converted here to an
/// uncompressed one: it is uncompressed (or deflated), or one of DCMTK's
/// decoders reads it (JPEG, JPEG-LS, RLE; not JPEG 2000 nor MPEG).
bool convertible(const std::string& syntax);

/// `instance` as a Part 10 object in the uncompressed transfer syntax
/// `target` (its pixel data decoded with DCMTK where stored compressed; the
/// meta group updated to name `target`). Empty, with `why`, when it cannot
/// be converted.
std::vector<std::uint8_t> converted_part10(const RetrievedInstance& instance, const std::string& target,
                                           std::string& why);

/// A C-MOVE's originator, carried in each C-STORE request.
struct MoveOriginator {
    std::string aetitle;
    Uint16 message_id = 0;
};

/// Sends `instance` on `association` as a C-STORE request (`message_id`;
/// `originator` when not null) and waits up to `timeout` for its response:
/// 0000 completed, Bxxx warning, anything else failed (with the status).
/// A failure to send or receive is failed too; `lost` is then set (the
/// association cannot be used any more). `cancel` (C-GET, whose requestor
/// is the receiver): set when a C-CANCEL came before the response.
SubOutcome send_instance(T_ASC_Association* association, const RetrievedInstance& instance, Uint16 message_id,
                         std::chrono::seconds timeout, const MoveOriginator* originator, bool& lost,
                         bool* cancel = nullptr);

/// `text` as the default character set allows (an Error Comment, LO: at
/// most 64 characters): other bytes as \xNN, a backslash as '/'.
std::string error_comment_text(const std::string& text);

}  // namespace blobstreaming::dicom
