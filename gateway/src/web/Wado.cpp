/// DicomWeb (DicomWeb.h): WADO-RS — instances, metadata, frames, bulk data.
#include "DicomWeb.h"

#include "Multipart.h"
#include "Retrieval.h"
#include "SubOperation.h"
#include "WebSpool.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcjson.h>
#include <dcmtk/dcmdata/dcvrobow.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

namespace blobstreaming::dicom::web {

namespace {

/// The first bytes read of an instance to find its Pixel Data; 8 times
/// more each time the header goes on.
constexpr std::uint64_t kFirstPrefix = 64 * 1024;
/// Bulk data is pulled and sent this much at a time.
constexpr std::uint64_t kBulkPiece = 4 << 20;
/// Store statuses (for nearest-first ordering) are asked again after this.
constexpr std::chrono::seconds kStoresAge{5};
/// Layouts kept (by Blob checksum); the cache is emptied when full.
constexpr std::size_t kMaxLayouts = 100000;
/// Frames in one request.
constexpr std::size_t kMaxFrames = 10000;

std::string column(const IndexRow& row, const char* name)
{
    for (const auto& [c, v] : row)
        if (c == name) return v;
    return {};
}

/// Another copy may succeed where this one failed (NearestCopy.cpp's rule).
bool another_copy_may_serve(Errc errc) noexcept { return errc != Errc::io_error && errc != Errc::cancelled; }

/// One media range of a request's Accept header: its media type, the type
/// of the parts (of multipart/related) and its transfer-syntax parameter.
struct AcceptElement {
    std::string type;
    std::string part;
    std::string syntax;
};

/// The Accept header's media ranges, in order (none when it is absent).
std::vector<AcceptElement> accept_elements(const Request& request)
{
    const std::string accept(request.header[http::field::accept]);
    std::vector<AcceptElement> out;
    if (accept.empty()) return out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = accept.find(',', start);
        const std::string element = accept.substr(start, comma == std::string::npos ? comma : comma - start);
        out.push_back({media_type(element), media_type(media_parameter(element, "type")),
                       media_parameter(element, "transfer-syntax")});
        if (comma == std::string::npos) return out;
        start = comma + 1;
    }
}

/// Whether the request's Accept allows `part_type` in a multipart/related
/// response (or as the whole body when `single` is allowed), and in the
/// stored transfer syntax `syntax` when it names one.
bool acceptable(const Request& request, const std::string& part_type, const std::string& syntax, bool single = false)
{
    const std::vector<AcceptElement> elements = accept_elements(request);
    if (elements.empty()) return true;
    for (const AcceptElement& e : elements) {
        const bool syntax_ok = e.syntax.empty() || e.syntax == "*" || syntax.empty() || e.syntax == syntax;
        if (!syntax_ok) continue;
        if (e.type == "*/*") return true;
        if (e.type == "multipart/related" && (e.part.empty() || e.part == part_type || e.part == "*/*")) return true;
        if (e.type == part_type && (single || part_type == "application/dicom")) return true;
    }
    return false;
}

/// How the instances stored in `stored` are sent under the request's Accept
/// (PS3.18 8.7.3.5): "" as stored (no Accept, `*/*`, `transfer-syntax=*`
/// or the stored one); else the uncompressed syntax to convert them to (an
/// `application/dicom` part without a transfer-syntax means explicit VR
/// little endian, the default; another uncompressed one when named); nullopt
/// when neither is possible (a syntax DCMTK cannot decode, a compressed
/// target). An element that takes them as stored is preferred.
std::optional<std::string> part_syntax(const Request& request, const std::string& stored)
{
    const std::vector<AcceptElement> elements = accept_elements(request);
    if (elements.empty()) return std::string();
    std::optional<std::string> converted;
    for (const AcceptElement& e : elements) {
        const bool dicom = e.type == "*/*" || e.type == "application/dicom" ||
                           (e.type == "multipart/related" &&
                            (e.part.empty() || e.part == "application/dicom" || e.part == "*/*"));
        if (!dicom) continue;
        std::string ts = e.syntax;
        if (ts.empty() && e.type == "*/*") ts = "*";
        if (ts.empty()) ts = UID_LittleEndianExplicitTransferSyntax;
        if (ts == "*" || ts == stored) return std::string();
        const auto& targets = uncompressed_syntaxes();
        if (!converted && std::find(targets.begin(), targets.end(), ts) != targets.end() && convertible(stored))
            converted = ts;
    }
    return converted;
}

bool wants_multipart(const Request& request)
{
    return std::string(request.header[http::field::accept]).find("multipart/related") != std::string::npos;
}

/// DICOM JSON with Pixel Data as a BulkDataURI (PS3.18 F.2.6).
class BulkDataJson : public DcmJsonFormatCompact {
public:
    explicit BulkDataJson(std::string uri) : uri_(std::move(uri)) {}
    OFBool asBulkDataURI(const DcmTagKey& tag, OFString& uri) override
    {
        if (tag != DCM_PixelData) return OFFalse;
        uri = uri_.c_str();
        return OFTrue;
    }

private:
    std::string uri_;
};

}  // namespace

std::vector<Match> DicomWeb::scope_matches(const Scope& scope)
{
    std::vector<std::string> terms{"StudyInstanceUID=" + scope.study};
    if (!scope.series.empty()) terms.push_back("SeriesInstanceUID=" + scope.series);
    if (!scope.instance.empty()) terms.push_back("SOPInstanceUID=" + scope.instance);
    for (const std::string& t : terms)
        if (t.find_first_of("*?\\") != std::string::npos)
            throw Error(Errc::invalid_argument, "\"" + utf8_escaped(t.substr(t.find('=') + 1)) +
                                                    "\" in the path is not a UID (no wildcards or lists)");
    return parse_matches(terms);
}

std::vector<IndexRow> DicomWeb::instances_of(const Scope& scope) const
{
    return index_.find(Level::instance, scope_matches(scope));
}

std::map<std::string, client::StoreStatus> DicomWeb::stores()
{
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (stores_.empty() || now - stores_at_ > kStoresAge) {
        stores_ = store_statuses(session_);
        stores_at_ = now;
    }
    return stores_;
}

std::vector<IndexedBlob> DicomWeb::copies_of(const IndexRow& row)
{
    const std::string sop = column(row, "SOPInstanceUID");
    std::vector<IndexedBlob> copies;
    try {
        copies = index_.copies_of({sop})[sop];
    } catch (const std::exception& e) {
        spdlog::warn("DICOMweb: the copies of instance {}: {}; from the store the index names", printable(sop),
                     e.what());
    }
    return nearest_first(std::move(copies), {column(row, "blob"), column(row, "store"), column(row, "checksum")},
                         stores());
}

std::string DicomWeb::pull_range(const std::vector<IndexedBlob>& copies, std::uint64_t offset, std::uint64_t length,
                                 std::vector<std::uint8_t>& out, std::string& store)
{
    std::string why;
    for (const IndexedBlob& copy : copies) {
        client::PullOptions o;
        o.store = copy.store;
        o.offset = offset;
        o.length = length;
        client::Result result;
        out.clear();
        session_.pull(copy.blob, client::PullSink::memory(&out), o, client::Mode::Sync,
                      [&result](const client::Result& r) { result = r; });
        if (result.ok()) {
            store = copy.store;
            return "";
        }
        why += (why.empty() ? "" : "; ") + std::string("store \"") + copy.store + "\": " + result.message;
        if (!another_copy_may_serve(result.errc())) break;
    }
    return why.empty() ? "the index lists no copy" : why;
}

std::string DicomWeb::layout_of(const IndexRow& row, PixelLayout& layout, http::status& status,
                                std::vector<std::uint8_t>* prefix)
{
    const std::string key = column(row, "checksum") + "/" + column(row, "size");
    if (!prefix) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (const auto it = layouts_.find(key); it != layouts_.end()) {
            layout = it->second;
            return "";
        }
    }
    std::uint64_t size = 0;
    try {
        size = std::stoull(column(row, "size"));
    } catch (const std::exception&) {
    }
    const std::string sop = column(row, "SOPInstanceUID");
    const std::vector<IndexedBlob> copies = copies_of(row);
    std::vector<std::uint8_t> bytes;
    for (std::uint64_t length = std::min(size, kFirstPrefix);; length = std::min(size, length * 8)) {
        std::string store, why;
        why = pull_range(copies, 0, length, bytes, store);
        if (!why.empty()) {
            status = http::status::bad_gateway;
            return "instance " + sop + ": no store served its first " + std::to_string(length) + " bytes: " + why;
        }
        layout = PixelLayout{};
        const Scan scan = locate_pixel_data(bytes.data(), bytes.size(), length >= size, layout, why);
        if (scan == Scan::need_more && length < size) continue;
        if (scan == Scan::malformed || scan == Scan::need_more) {
            status = http::status::not_acceptable;
            return "instance " + sop + ": " + why;
        }
        if (scan == Scan::no_pixel_data) layout.value_offset = 0;
        if (prefix) {
            if (scan == Scan::found) bytes.resize(layout.element_offset);
            *prefix = std::move(bytes);
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (layouts_.size() >= kMaxLayouts) layouts_.clear();
        layouts_[key] = layout;
        return "";
    }
}

// ---- instances -------------------------------------------------------------

void DicomWeb::retrieve(const Request& request, const Scope& scope, Reply& reply)
{
    // The instances C-GET and C-MOVE would send (Retrieval: the index's
    // list, each from its nearest copy, checked to be the instance listed,
    // pulled into reused memory ahead of the one being written).
    std::unique_ptr<Retrieval> retrieval;
    try {
        const std::string dir = options_.spool;
        retrieval = std::make_unique<Retrieval>(
            index_, session_, IndexQuery{Level::instance, scope_matches(scope), {}, {}, {}},
            "DICOMweb WADO-RS to " + request.peer, [dir] { return SpoolFile::next_path(dir); });
        retrieval->in_place(true);
    } catch (const Error& e) {
        if (e.code() == make_error_code(Errc::invalid_argument))
            return void(reply.respond(text_response(http::status::bad_request, e.what())));
        return void(reply.respond(index_failure(request, e)));
    } catch (const RetrievalRefused& e) {
        return void(reply.respond(index_failure(request, Error(Errc::io_error, e.what()))));
    }
    if (retrieval->size() == 0)
        return void(reply.respond(text_response(http::status::not_found, "the index lists no instance of " +
                                                                             utf8_escaped(std::string(request.header.target())))));
    // Each stored syntax as stored, or converted to the uncompressed one the request asks for.
    std::map<std::string, std::string> convert_to;
    for (const auto& presentation : retrieval->presentations()) {
        const std::string& syntax = presentation.second;
        if (convert_to.count(syntax)) continue;
        const std::optional<std::string> target = part_syntax(request, syntax);
        if (!target)
            return void(reply.respond(text_response(
                http::status::not_acceptable,
                "instances stored in transfer syntax " + syntax + " are served as stored" +
                    (convertible(syntax) ? " or converted to an uncompressed syntax (explicit VR little endian, the "
                                           "default; implicit VR little endian; explicit VR big endian)"
                                         : " only (DCMTK has no decoder for it)") +
                    "; the request accepts " + utf8_escaped(std::string(request.header[http::field::accept])))));
        convert_to[syntax] = *target;
    }
    const auto started = std::chrono::steady_clock::now();
    const std::string boundary = new_boundary();
    http::response<http::empty_body> header{http::status::ok, 11};
    header.set(http::field::content_type,
               "multipart/related; type=\"application/dicom\"; boundary=" + boundary);
    std::size_t refused = 0;
    for (const auto& [sop, why] : retrieval->refused()) {
        ++refused;
        header.insert(http::field::warning, "299 blob-dicomd \"instance " + utf8_escaped(sop) + ": " +
                                                utf8_escaped(why) + "; not sent\"");
    }
    if (!reply.begin(std::move(header))) return;
    std::size_t sent = 0;
    std::uint64_t bytes = 0;
    bool lost = false;
    std::size_t converted = 0;
    std::vector<char> buffer;
    const RetrievalCounts counts = retrieval->run(
        [&](const RetrievedInstance& instance) -> SubOutcome {
            const auto target = convert_to.find(instance.transfer_syntax);
            const bool convert = target != convert_to.end() && !target->second.empty();
            const std::string head =
                part_header(boundary,
                            "application/dicom; transfer-syntax=" + (convert ? target->second : instance.transfer_syntax),
                            sent == 0);
            bool ok = true;
            std::size_t size = instance.size;
            if (convert) {
                std::string why;
                const std::vector<std::uint8_t> object = converted_part10(instance, target->second, why);
                if (object.empty()) {
                    spdlog::warn("DICOMweb WADO-RS to {}: instance {} not sent: {}", request.peer, instance.sop, why);
                    return {SubStatus::failed, why, {}};
                }
                ok = reply.write_part(head, object.data(), object.size());
                size = object.size();
                ++converted;
            } else if (instance.bytes) {
                // One chunk; from the store's file itself when it is on this host.
                ok = reply.write_part(head, instance.bytes, instance.size, instance.fd, instance.file_offset);
            } else if ((ok = reply.write(head.data(), head.size()))) {
                std::ifstream in(instance.path, std::ios::binary);
                buffer.resize(1 << 20);
                while (ok && in) {
                    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
                    const auto n = static_cast<std::size_t>(in.gcount());
                    if (n == 0) break;
                    ok = reply.write(buffer.data(), n);
                }
            }
            if (!ok) {
                lost = true;
                return {SubStatus::failed, "the client went away", {}};
            }
            bytes += size;
            ++sent;
            return {};
        },
        [&](const RetrievalCounts&) { return !lost; });
    if (lost) return;
    if (sent == 0) {
        // A multipart body needs a part before its close delimiter: an empty one.
        const std::string head = "--" + boundary;
        if (!reply.write(head.data(), head.size())) return;
        const std::string close = "--\r\n";
        if (!reply.write(close.data(), close.size())) return;
    } else {
        const std::string close = close_delimiter(boundary);
        if (!reply.write(close.data(), close.size())) return;
    }
    reply.end();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    spdlog::info("DICOMweb WADO-RS to {}: {} instances sent ({} bytes{}), {} failed, {} in conflict not sent, in "
                 "{:.3f} s ({:.1f} MB/s; {:.3f} s waiting for the stores)",
                 request.peer, sent, bytes,
                 converted ? fmt::format("; {} converted to an uncompressed syntax", converted) : std::string(),
                 counts.failed - refused, refused, seconds,
                 seconds > 0 ? bytes / seconds / 1e6 : 0.0, retrieval->waited());
}

// ---- metadata --------------------------------------------------------------

void DicomWeb::metadata(const Request& request, const Scope& scope, Reply& reply)
{
    std::vector<IndexRow> rows;
    try {
        rows = instances_of(scope);
    } catch (const Error& e) {
        if (e.code() == make_error_code(Errc::invalid_argument))
            return void(reply.respond(text_response(http::status::bad_request, e.what())));
        return void(reply.respond(index_failure(request, e)));
    }
    if (rows.empty())
        return void(reply.respond(text_response(http::status::not_found, "the index lists no instance of " +
                                                                             utf8_escaped(std::string(request.header.target())))));
    if (!acceptable(request, "application/dicom+json", "", true) && !acceptable(request, "application/json", "", true))
        return void(reply.respond(text_response(http::status::not_acceptable,
                                                "metadata is served as application/dicom+json (or application/json)")));
    const std::string base = base_url(request);
    bool begun = false;
    std::size_t written = 0;
    for (const IndexRow& row : rows) {
        const std::string sop = column(row, "SOPInstanceUID");
        PixelLayout layout;
        http::status status = http::status::ok;
        std::vector<std::uint8_t> prefix;
        const std::string why = layout_of(row, layout, status, &prefix);
        if (!why.empty()) {
            spdlog::error("DICOMweb metadata to {}: {}", request.peer, printable(why));
            if (!begun) return void(reply.respond(text_response(status, why)));
            continue;
        }
        SpoolFile file(options_.spool);
        {
            std::ofstream out(file.path(), std::ios::binary);
            out.write(reinterpret_cast<const char*>(prefix.data()), static_cast<std::streamsize>(prefix.size()));
        }
        DcmFileFormat format;
        const OFCondition loaded = format.loadFile(file.path().c_str());
        DcmDataset* data_set = format.getDataset();
        if (loaded.bad() && data_set->card() == 0) {
            spdlog::error("DICOMweb metadata to {}: instance {}: its header does not parse: {}", request.peer,
                          printable(sop), loaded.text());
            if (!begun)
                return void(reply.respond(text_response(http::status::internal_server_error,
                                                        "instance " + sop + ": its header does not parse: " +
                                                            loaded.text())));
            continue;
        }
        if (layout.value_offset != 0) {
            data_set->findAndDeleteElement(DCM_PixelData);
            // A stand-in of two bytes: DCMTK asks asBulkDataURI() only of a value that is not empty.
            const bool bytes = layout.encapsulated || layout.bits_allocated <= 8;
            auto* stand_in = new DcmOtherByteOtherWord(DcmTag(DCM_PixelData, bytes ? EVR_OB : EVR_OW));
            const Uint8 two[2] = {0, 0};
            const Uint16 word[1] = {0};
            if (bytes) stand_in->putUint8Array(two, 2);
            else stand_in->putUint16Array(word, 1);
            data_set->insert(stand_in, true);
        }
        BulkDataJson json(base + "/studies/" + column(row, "StudyInstanceUID") + "/series/" +
                          column(row, "SeriesInstanceUID") + "/instances/" + sop + "/bulkdata/7FE00010");
        std::ostringstream text;
        if (data_set->writeJson(text, json).bad()) {
            spdlog::error("DICOMweb metadata to {}: instance {}: not written as JSON", request.peer, printable(sop));
            continue;
        }
        if (!begun) {
            http::response<http::empty_body> header{http::status::ok, 11};
            header.set(http::field::content_type, "application/dicom+json");
            if (!reply.begin(std::move(header)) || !reply.write("[", 1)) return;
            begun = true;
        }
        // DCMTK writes the attributes without the object's braces.
        const std::string item = (written++ ? ",{" : "{") + text.str() + "}";
        if (!reply.write(item.data(), item.size())) return;
    }
    if (!begun)
        return void(reply.respond(text_response(http::status::internal_server_error,
                                                "no instance's metadata could be read (see the gateway's log)")));
    if (reply.write("]", 1)) reply.end();
    spdlog::info("DICOMweb metadata to {}: {} of {} instances", request.peer, written, rows.size());
}

// ---- frames and bulk data ----------------------------------------------------

std::optional<PixelLayout> DicomWeb::pixel_layout(const IndexRow& row, const Scope& scope, Reply& reply)
{
    PixelLayout layout;
    http::status status = http::status::ok;
    if (const std::string why = layout_of(row, layout, status); !why.empty()) {
        reply.respond(text_response(status, why));
        return std::nullopt;
    }
    if (layout.value_offset != 0) return layout;
    reply.respond(text_response(http::status::not_found, "instance " + scope.instance + " has no Pixel Data"));
    return std::nullopt;
}

std::optional<IndexRow> DicomWeb::the_instance(const Request& request, const Scope& scope, Reply& reply) const
{
    std::vector<IndexRow> rows;
    try {
        rows = instances_of(scope);
    } catch (const Error& e) {
        if (e.code() == make_error_code(Errc::invalid_argument))
            reply.respond(text_response(http::status::bad_request, e.what()));
        else reply.respond(index_failure(request, e));
        return std::nullopt;
    }
    if (rows.size() == 1) return std::move(rows.front());
    reply.respond(text_response(http::status::not_found, "the index lists no instance " + utf8_escaped(scope.instance) +
                                                             " in series " + utf8_escaped(scope.series)));
    return std::nullopt;
}

void DicomWeb::frames(const Request& request, const Scope& scope, const std::string& list, Reply& reply)
{
    const auto started = std::chrono::steady_clock::now();
    const auto found = the_instance(request, scope, reply);
    if (!found) return;
    const IndexRow& row = *found;
    const auto found_layout = pixel_layout(row, scope, reply);
    if (!found_layout) return;
    const PixelLayout& layout = *found_layout;
    if (layout.encapsulated || !native_little_endian(layout.transfer_syntax))
        return void(reply.respond(text_response(
            http::status::not_acceptable,
            "instance " + scope.instance + " holds compressed (encapsulated) pixel data in transfer syntax " +
                layout.transfer_syntax +
                ": frames are served of uncompressed pixel data only; retrieve the instance instead")));
    const std::uint64_t frame = layout.frame_bytes();
    if (frame == 0 || layout.frames == 0 || layout.value_length / frame < layout.frames)
        return void(reply.respond(text_response(
            http::status::internal_server_error,
            "instance " + scope.instance + ": its Pixel Data (" + std::to_string(layout.value_length) +
                " bytes) does not hold " + std::to_string(layout.frames) + " frames of Rows " +
                std::to_string(layout.rows) + " x Columns " + std::to_string(layout.columns) + " x Samples " +
                std::to_string(layout.samples_per_pixel) + " x Bits Allocated " + std::to_string(layout.bits_allocated))));
    std::vector<std::uint64_t> numbers;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = list.find(',', start);
        const std::string n = list.substr(start, comma == std::string::npos ? comma : comma - start);
        if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos || std::stoull(n) == 0)
            return void(reply.respond(text_response(http::status::bad_request,
                                                    "frame list \"" + utf8_escaped(list) +
                                                        "\": expected frame numbers from 1, separated by commas")));
        if (std::stoull(n) > layout.frames)
            return void(reply.respond(text_response(http::status::not_found,
                                                    "frame " + n + ": instance " + scope.instance + " has " +
                                                        std::to_string(layout.frames) + " frames")));
        numbers.push_back(std::stoull(n));
        if (numbers.size() > kMaxFrames)
            return void(reply.respond(text_response(http::status::bad_request,
                                                    "more than " + std::to_string(kMaxFrames) + " frames in one request")));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (!acceptable(request, "application/octet-stream", layout.transfer_syntax))
        return void(reply.respond(text_response(
            http::status::not_acceptable,
            "frames are served as multipart/related; type=\"application/octet-stream\"; transfer-syntax=" +
                layout.transfer_syntax)));
    const std::vector<IndexedBlob> copies = copies_of(row);
    const std::string boundary = new_boundary();
    std::vector<std::uint8_t> bytes;
    std::string store;
    std::uint64_t pulled = 0;
    for (std::size_t i = 0; i < numbers.size(); ++i) {
        const std::uint64_t offset = layout.value_offset + (numbers[i] - 1) * frame;
        if (const std::string why = pull_range(copies, offset, frame, bytes, store); !why.empty()) {
            spdlog::error("DICOMweb frames to {}: instance {} frame {}: {}", request.peer, printable(scope.instance),
                          numbers[i], why);
            if (i == 0)
                return void(reply.respond(text_response(http::status::bad_gateway,
                                                        "frame " + std::to_string(numbers[i]) + ": " + why)));
            return;  // the response ends cut short: the client sees no close delimiter
        }
        pulled += bytes.size();
        if (i == 0) {
            http::response<http::empty_body> header{http::status::ok, 11};
            header.set(http::field::content_type, "multipart/related; type=\"application/octet-stream\"; "
                                                  "transfer-syntax=" +
                                                      layout.transfer_syntax + "; boundary=" + boundary);
            if (!reply.begin(std::move(header))) return;
        }
        const std::string head = part_header(boundary, "application/octet-stream; transfer-syntax=" +
                                                           layout.transfer_syntax, i == 0);
        if (!reply.write_part(head, bytes.data(), bytes.size())) return;
    }
    const std::string close = close_delimiter(boundary);
    if (reply.write(close.data(), close.size())) reply.end();
    spdlog::info("DICOMweb frames to {}: instance {} frames {}: {} bytes pulled in {} ranges of {} bytes from store "
                 "\"{}\" (Blob of {} bytes), in {:.3f} ms",
                 request.peer, printable(scope.instance), list, pulled, numbers.size(), frame, store,
                 column(row, "size"),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
}

void DicomWeb::bulk_data(const Request& request, const Scope& scope, const std::string& tag, Reply& reply)
{
    std::string upper = tag;
    std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
    if (upper != "7FE00010")
        return void(reply.respond(text_response(http::status::not_found,
                                                "bulk data of tag " + utf8_escaped(tag) +
                                                    ": only 7FE00010 (Pixel Data) is served as bulk data")));
    const auto found = the_instance(request, scope, reply);
    if (!found) return;
    const IndexRow& row = *found;
    const auto found_layout = pixel_layout(row, scope, reply);
    if (!found_layout) return;
    const PixelLayout& layout = *found_layout;
    if (layout.encapsulated)
        return void(reply.respond(text_response(
            http::status::not_acceptable,
            "instance " + scope.instance + " holds encapsulated pixel data (transfer syntax " +
                layout.transfer_syntax + "): its bulk data is not served; retrieve the instance instead")));
    const std::uint64_t total = layout.value_length;
    std::uint64_t first = 0, last = total == 0 ? 0 : total - 1;
    bool ranged = false;
    const std::string range(request.header[http::field::range]);
    // One byte range (RFC 9110 14.1.2); several ranges or another unit: the whole value (a server may ignore Range).
    if (range.rfind("bytes=", 0) == 0 && range.find(',') == std::string::npos) {
        const std::string spec = range.substr(6);
        const std::size_t dash = spec.find('-');
        const std::string a = spec.substr(0, dash), b = dash == std::string::npos ? "" : spec.substr(dash + 1);
        const auto digits = [](const std::string& s) {
            return !s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos;
        };
        bool valid = dash != std::string::npos && (digits(a) || digits(b)) && (a.empty() || digits(a)) &&
                     (b.empty() || digits(b));
        if (valid) {
            ranged = true;
            bool satisfiable = true;
            if (a.empty()) {  // the last N bytes
                const std::uint64_t n = std::stoull(b);
                satisfiable = n > 0 && total > 0;
                first = n >= total ? 0 : total - n;
            } else {
                first = std::stoull(a);
                if (!b.empty()) last = std::min<std::uint64_t>(std::stoull(b), total - 1);
                satisfiable = first < total && (b.empty() || std::stoull(b) >= first);
            }
            if (!satisfiable) {
                auto r = text_response(http::status::range_not_satisfiable,
                                       "range \"" + utf8_escaped(range) + "\" is outside the Pixel Data's " +
                                           std::to_string(total) + " bytes");
                r.set(http::field::content_range, "bytes */" + std::to_string(total));
                return void(reply.respond(std::move(r)));
            }
        }
    }
    const std::vector<IndexedBlob> copies = copies_of(row);
    const bool multipart = !ranged && wants_multipart(request);
    const std::string boundary = new_boundary();
    http::response<http::empty_body> header{ranged ? http::status::partial_content : http::status::ok, 11};
    header.set(http::field::accept_ranges, "bytes");
    if (ranged)
        header.set(http::field::content_range, "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
                                                   std::to_string(total));
    header.set(http::field::content_type, multipart ? "multipart/related; type=\"application/octet-stream\"; boundary=" +
                                                          boundary
                                                    : "application/octet-stream");
    std::vector<std::uint8_t> bytes;
    std::string store;
    bool begun = false;
    for (std::uint64_t at = first; at <= last && total > 0;) {
        const std::uint64_t length = std::min(kBulkPiece, last - at + 1);
        if (const std::string why = pull_range(copies, layout.value_offset + at, length, bytes, store); !why.empty()) {
            spdlog::error("DICOMweb bulk data to {}: instance {}: {}", request.peer, printable(scope.instance), why);
            if (!begun) return void(reply.respond(text_response(http::status::bad_gateway, why)));
            return;
        }
        if (!begun) {
            if (!reply.begin(std::move(header))) return;
            begun = true;
            if (multipart) {
                const std::string head = part_header(boundary, "application/octet-stream", true);
                if (!reply.write(head.data(), head.size())) return;
            }
        }
        if (!reply.write(bytes.data(), bytes.size())) return;
        at += length;
    }
    if (!begun && !reply.begin(std::move(header))) return;
    if (multipart) {
        const std::string close = close_delimiter(boundary);
        if (!reply.write(close.data(), close.size())) return;
    }
    reply.end();
    spdlog::info("DICOMweb bulk data to {}: instance {} Pixel Data bytes {}-{} of {}, from store \"{}\"", request.peer,
                 printable(scope.instance), first, last, total, store);
}

}  // namespace blobstreaming::dicom::web
