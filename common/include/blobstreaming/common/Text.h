#pragma once
/// Text read from data (DICOM attributes, index values) on its way to a
/// terminal, a log or a JSON document: what passes as it is and what is
/// escaped, so that no value forges a line, moves a terminal's cursor or
/// makes a JSON writer throw.

#include <string>
#include <string_view>

namespace blobstreaming {

/// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or
/// code points above U+10FFFF).
bool valid_utf8(std::string_view text);

/// `text` with every byte that is not part of a well-formed UTF-8 sequence
/// written `\xNN` (uppercase hex): valid UTF-8 always. Valid text is
/// returned unchanged.
std::string utf8_escaped(std::string_view text);

/// `text` for a terminal or a log line: utf8_escaped(), and control
/// characters (C0, DEL, C1) shown visibly: `\n`, `\r`, `\t`, others `\xNN`
/// (a C1 control U+0080..U+009F as `\u0080`..`\u009f`). `\` is kept (DICOM's
/// value separator): a value never ends a line nor sends an escape sequence.
std::string printable(std::string_view text);

}  // namespace blobstreaming
