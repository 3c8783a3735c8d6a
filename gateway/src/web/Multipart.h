#pragma once
/// multipart/related (RFC 2387) as DICOMweb uses it (PS3.18 8.6.1.2): media
/// type parameters, the parts of a request body (STOW-RS), and the
/// delimiters of a response written part by part (WADO-RS).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace blobstreaming::dicom::web {

/// The media type of a Content-Type or Accept element, lower case, without
/// its parameters ("multipart/related").
std::string media_type(std::string_view value);
/// The value of parameter `name` (case-insensitive) of a media type, its
/// quotes removed; "" when absent.
std::string media_parameter(std::string_view value, std::string_view name);

struct Part {
    std::string content_type;  ///< "" when the part has none
    const char* data = nullptr;
    std::size_t size = 0;
};

/// The parts of `body` delimited by `boundary`. Returns "" or why the body
/// is not a multipart body of that boundary (no delimiter, a part without
/// the blank line after its headers, no close delimiter). More than
/// `max_parts` parts: stops and sets `too_many`.
std::string split_parts(const char* body, std::size_t size, const std::string& boundary, std::size_t max_parts,
                        std::vector<Part>& parts, bool& too_many);

/// A boundary no part's bytes are expected to contain (random).
std::string new_boundary();
/// "\r\n--B\r\nContent-Type: T\r\n\r\n" (the first part without the leading CRLF).
std::string part_header(const std::string& boundary, const std::string& content_type, bool first);
/// "\r\n--B--\r\n".
std::string close_delimiter(const std::string& boundary);

}  // namespace blobstreaming::dicom::web
