#pragma once
/// The text values of one DICOM data set in UTF-8, decoded by its Specific
/// Character Set (0008,0005) with DCMTK's character set support (iconv in
/// Debian's build): ISO_IR 100, 101, 144, 192, GB18030, the ISO 2022 sets
/// with their escape sequences (ISO 2022 IR 87 ...) and the others DCMTK
/// knows (docs/DICOM.md, "Character sets"). DCMTK over glibc's iconv lacks
/// the Japanese ISO 2022 IR 87 and IR 159: those (with the default set or
/// ISO 2022 IR 13, no other) are read here, their two-byte runs by glibc's
/// ISO-2022-JP-2 decoder, which knows their escape sequences. No Specific
/// Character Set: the default repertoire (ASCII).

#include <dcmtk/dcmdata/dcelem.h>
#include <dcmtk/dcmdata/dcitem.h>
#include <dcmtk/dcmdata/dcspchrs.h>

#include <string>

namespace blobstreaming::dicom {

class TextDecoder {
public:
    /// Selects the conversion of `data_set`'s Specific Character Set to UTF-8.
    explicit TextDecoder(DcmItem& data_set);

    /// `element`'s value (values joined by `\`, padding removed) in UTF-8.
    /// A value that cannot be decoded (a byte sequence the character set
    /// lacks, an unknown character set) is written with those bytes
    /// escaped (`\xNN`, Text.h's utf8_escaped()) and false is returned.
    bool decode(DcmElement& element, std::string& out);

    /// The Specific Character Set as the data set has it ("": none).
    const std::string& charset() const { return charset_; }
    /// Why the last decode() failed.
    const std::string& problem() const { return problem_; }

    /// Whether `element`'s value holds a NUL byte before its end (a NUL
    /// pads a UID to an even length: trailing NULs are padding).
    static bool has_inner_nul(DcmElement& element);

private:
    DcmSpecificCharacterSet converter_;
    std::string charset_;
    bool japanese_ = false;       ///< ISO 2022 IR 87 / IR 159: decode_japanese()
    bool katakana_ = false;       ///< with ISO 2022 IR 13 (JIS X 0201 half-width katakana)
    std::string select_problem_;  ///< "" when DCMTK's conversion is selected
    std::string problem_;
};

}  // namespace blobstreaming::dicom
