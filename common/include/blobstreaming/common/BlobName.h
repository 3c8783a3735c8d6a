#pragma once
/// Blob names: a defined character set and length, never a path.
///
/// Allowed: 1 to kMaxBlobNameLength characters of `A-Z a-z 0-9 . _ -`, not
/// starting with '.' (so never ".", "..", or a hidden file). DICOM UIDs
/// ("1.2.840.10008.5.1.4.1.1.2") and "CT.<uid>" fit.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace blobstreaming {

inline constexpr std::size_t kMaxBlobNameLength = 200;

/// Why `name` is not a valid Blob name, or nullopt when it is.
std::optional<std::string> blob_name_problem(std::string_view name);

/// Throws Error(Errc::invalid_name) with the reason and the rule.
void validate_blob_name(std::string_view name);

/// The name in quotes, with control and non-ASCII bytes escaped, for messages.
std::string quote_name(std::string_view name);

}  // namespace blobstreaming
