#pragma once
/// blob-dicomd's command line and configuration file (docs/CLI.md,
/// "blob-dicomd"): the conventions of blobstored (long options, `--config
/// FILE` of `option = value` lines where the command line wins, the shared
/// logging flags, --help, --version).

#include "Destinations.h"

#include <spdlog/common.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::dicom {

/// What to do when an instance arrives whose Blob exists with another data set.
enum class OnConflict { refuse, replace };

struct GatewayOptions {
    std::string aetitle;
    unsigned port = 0;
    std::string store;
    std::string naming;
    std::string index;  ///< "" : no index
    std::string name_pattern = "{SOPInstanceUID}.dcm";
    unsigned max_associations = 8;
    /// Associations (and connections still sending their request) from one
    /// IP address at once; default half of max_associations, at least 1.
    unsigned max_associations_per_peer = 4;
    unsigned max_pdu = 131072;
    OnConflict on_conflict = OnConflict::refuse;
    std::string spool;  ///< directory of received files until their push ends
    /// Network and store inactivity timeout; also the deadline of each
    /// whole PDU and DIMSE command a peer sends (the association request
    /// from the accept on).
    std::chrono::milliseconds timeout{30000};
    /// No new instance of a study for this long: the study is stable.
    std::chrono::milliseconds stable_after{60000};
    /// How often the indexer compares every store's Blobs with the index
    /// (EventIndexer); 0: only at start.
    std::chrono::milliseconds rescan{300000};
    std::string log_file;  ///< "" : standard error
    spdlog::level::level_enum log_level = spdlog::level::info;

    // C-MOVE and Storage Commitment (MoveScp, StorageCommitment):
    /// The move destinations (--destination AET=HOST:PORT), in the order given.
    std::vector<Destination> destinations;
};

/// The options to run with, or (nullopt) the text to print for --help or
/// --version in `text`. Throws Error(Errc::invalid_argument) with the
/// option, the value and what is allowed.
std::optional<GatewayOptions> parse_gateway_options(int argc, char** argv, std::string& text);

/// The Blob name of an instance: `pattern` with {SOPInstanceUID},
/// {SOPClassUID}, {StudyInstanceUID}, {SeriesInstanceUID} and {Modality}
/// replaced by `value(keyword)`.
template <class Lookup>
std::string expand_name_pattern(const std::string& pattern, Lookup value)
{
    std::string out;
    for (std::size_t i = 0; i < pattern.size();) {
        const auto close = pattern[i] == '{' ? pattern.find('}', i) : std::string::npos;
        if (close == std::string::npos) {
            out += pattern[i++];
            continue;
        }
        out += value(pattern.substr(i + 1, close - i - 1));
        i = close + 1;
    }
    return out;
}

}  // namespace blobstreaming::dicom
