#pragma once
/// The move destinations (docs/DICOM.md, "C-MOVE"): the AE titles that
/// C-MOVE may send to and where each listens (`--destination AET=HOST:PORT`,
/// repeatable, the same key on several lines of --config). A C-MOVE to an
/// AE title the table lacks is refused (A801); Storage Commitment sends a
/// result whose association has ended to the requesting AE's entry.

#include <string>
#include <vector>

namespace blobstreaming::dicom {

struct Destination {
    std::string aetitle;  ///< without leading or trailing spaces
    std::string host;     ///< a host name or an IPv4 address
    unsigned port = 0;    ///< 1 to 65535
};

/// Parses `AET=HOST:PORT`. Throws Error(invalid_argument) naming the value
/// and what is allowed: an AE title of 1 to 16 characters of the default
/// repertoire (printable ASCII), not only spaces, no backslash; a host name
/// or IPv4 address; a port 1 to 65535.
Destination parse_destination(const std::string& value);

/// Parses each value; an AE title given twice is refused (naming both).
std::vector<Destination> parse_destinations(const std::vector<std::string>& values);

/// The entry of `aetitle` (leading and trailing spaces ignored, as DICOM
/// ignores them), or null.
const Destination* find_destination(const std::vector<Destination>& table, const std::string& aetitle);

/// `aetitle` without leading and trailing spaces.
std::string trimmed_aetitle(const std::string& aetitle);

}  // namespace blobstreaming::dicom
