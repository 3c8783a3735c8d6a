#pragma once
/// blob-dicomd's command line and configuration file (docs/CLI.md,
/// "blob-dicomd"): the conventions of blobstored (long options, `--config
/// FILE` of `option = value` lines where the command line wins, the shared
/// logging flags, --help, --version).

#include "DicomSecurity.h"

#include <blobstreaming/common/TlsFiles.h>
#include "Destinations.h"

#include <spdlog/common.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::dicom {

/// What to do when an instance arrives whose Blob exists with another data set.
enum class OnConflict { refuse, replace };

struct GatewayOptions {
    std::string aetitle;
    unsigned port = 0;
    /// --address: the IPv4 address the DICOM port listens on ("" : every interface).
    std::string address;
    /// --callback-address: where the gateway's ORB listens (client::SessionOptions::callback_address).
    std::string callback_address;
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
    /// --kept-mappings, --kept-mapping-bytes (client::SessionOptions::kept_mappings).
    unsigned kept_mappings = 256;
    std::uint64_t kept_mapping_bytes = 1ull << 30;
    /// No new instance of a study for this long: the study is stable.
    std::chrono::milliseconds stable_after{60000};
    /// How often the indexer compares every store's Blobs with the index
    /// (EventIndexer); 0: only at start.
    std::chrono::milliseconds rescan{300000};
    std::string log_file;  ///< "" : standard error
    spdlog::level::level_enum log_level = spdlog::level::info;

    // Security: who may use the DICOM port, DICOM TLS on
    // it, and TLS to the Blob stores (docs/DICOM.md, "Security").
    std::vector<PeerRule> peers;            ///< --peer AE@HOST=RIGHTS
    std::vector<SubjectRule> peer_subjects;  ///< --peer-subject SUBJECT=RIGHTS
    TlsFiles tls;                            ///< --tls-*: the DICOM port speaks TLS only
    TlsFiles store_tls;                      ///< --store-tls-*: this gateway's identity to TLS stores

    // ---- DICOMweb (gateway/src/web/, docs/DICOM.md "DICOMweb") -------------
    std::string http_host;  ///< --http-address's host; "" : no DICOMweb server
    unsigned http_port = 0;
    unsigned http_max_connections = 64;
    unsigned http_max_connections_per_peer = 8;
    /// The most time from a connection's accept (or its previous response)
    /// to the end of the next whole request, TLS handshake included; also
    /// how long one write of a response may wait for the peer.
    std::chrono::milliseconds http_timeout{30000};
    std::uint64_t http_max_body = 256ull << 20;  ///< a request's body (STOW-RS), bytes
    unsigned http_max_parts = 1000;              ///< parts of one STOW-RS request
    std::string http_tls_cert, http_tls_key;
    std::string http_tls_ca;     ///< "" : no client certificate asked for
    std::string http_token_file; ///< "" : no bearer token required
    std::string http_cors_origin;  ///< "" : no CORS headers

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
