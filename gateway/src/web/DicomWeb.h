#pragma once
/// DICOMweb (PS3.18) under /dicom-web, answered from the study index and
/// the Blob Stores (docs/DICOM.md, "DICOMweb"):
///  - QIDO-RS: studies, series and instances searched with C-FIND's
///    matching (the identifier is made from the query parameters and goes
///    through parse_identifier() and StudyIndex::find()), application/dicom+json;
///  - WADO-RS: instances as multipart/related; type="application/dicom",
///    pulled from their nearest copy as C-GET does (a batch at a time, never
///    a whole study); metadata (application/dicom+json, Pixel Data as a
///    BulkDataURI) from the first bytes of each Blob; frames and the Pixel
///    Data bulk data (HTTP Range) as byte ranges of the Blob;
///  - STOW-RS: each part stored through InstanceStore, as a C-STORE is.
/// HttpServer calls handle() on a worker thread, several at once.

#include "HttpServer.h"
#include "InstanceStore.h"
#include "PixelData.h"
#include "dicom/NearestCopy.h"
#include "dicom/StudyIndex.h"

#include <blobstreaming/client/Session.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::dicom::web {

/// A request's path below /dicom-web and its query.
struct Target {
    std::vector<std::string> segments;                       ///< percent-decoded
    std::vector<std::pair<std::string, std::string>> query;  ///< decoded, in order
};

/// Splits `target` ("/dicom-web/studies?PatientID=P1"); false (and `why`)
/// when it is not under /dicom-web or is malformed.
bool parse_target(const std::string& target, Target& out, std::string& why);

class DicomWeb {
public:
    DicomWeb(const GatewayOptions& options, InstanceStore& store, StudyIndex& index, client::Session& session);

    /// Answers one request (HttpServer's Handler).
    void handle(const Request& request, Reply& reply);

private:
    /// What a WADO-RS request names: a study, series or instance.
    struct Scope {
        std::string study, series, instance;
    };

    void search(const Request& request, const Target& target, Level level, const Scope& scope, Reply& reply);
    void retrieve(const Request& request, const Scope& scope, Reply& reply);
    void metadata(const Request& request, const Scope& scope, Reply& reply);
    void frames(const Request& request, const Scope& scope, const std::string& list, Reply& reply);
    void bulk_data(const Request& request, const Scope& scope, const std::string& tag, Reply& reply);
    void store(const Request& request, const std::string& study, Reply& reply);

    /// The index's keys of `scope`'s UIDs; Error(invalid_argument) for a
    /// UID with a wildcard or a list.
    static std::vector<Match> scope_matches(const Scope& scope);
    /// The index's instance rows of `scope` (an empty vector: none).
    std::vector<IndexRow> instances_of(const Scope& scope) const;
    /// The one instance `scope` names (frames, bulk data); nullopt once
    /// `reply` has answered why not (400 a bad UID, 404 none, 500 the index).
    std::optional<IndexRow> the_instance(const Request& request, const Scope& scope, Reply& reply) const;
    /// Where `row`'s Pixel Data lies (layout_of); nullopt once `reply` has
    /// answered why not (the layout's status, or 404 without Pixel Data).
    std::optional<PixelLayout> pixel_layout(const IndexRow& row, const Scope& scope, Reply& reply);
    /// An instance's copies, nearest first.
    std::vector<IndexedBlob> copies_of(const IndexRow& row);
    /// The store statuses for nearest-first ordering, asked at most every few seconds.
    std::map<std::string, client::StoreStatus> stores();
    /// Pulls [offset, offset + length) of the instance from its nearest
    /// copy that serves it; "" or why none did. `store` is the one that did.
    std::string pull_range(const std::vector<IndexedBlob>& copies, std::uint64_t offset, std::uint64_t length,
                           std::vector<std::uint8_t>& out, std::string& store);
    /// The Pixel Data layout of an instance (cached by Blob checksum), and
    /// its first bytes up to the Pixel Data element (its whole header when it has none) in `prefix` when asked for.
    /// "" or why it cannot be told; `status` then says how to answer.
    std::string layout_of(const IndexRow& row, PixelLayout& layout, http::status& status,
                          std::vector<std::uint8_t>* prefix = nullptr);
    /// "http(s)://HOST/dicom-web" as the request reached us.
    std::string base_url(const Request& request) const;
    /// A failure of the index, logged with a reference; the response says only that.
    http::response<http::string_body> index_failure(const Request& request, const std::exception& e) const;

    const GatewayOptions& options_;
    InstanceStore& store_;
    StudyIndex& index_;
    client::Session& session_;
    std::mutex mutex_;
    std::map<std::string, client::StoreStatus> stores_;
    std::chrono::steady_clock::time_point stores_at_{};
    std::map<std::string, PixelLayout> layouts_;  ///< by Blob checksum
};

}  // namespace blobstreaming::dicom::web
