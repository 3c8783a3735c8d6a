/// DicomWeb (DicomWeb.h): the routes, QIDO-RS and STOW-RS. WADO-RS is in Wado.cpp.
#include "DicomWeb.h"

#include "Multipart.h"
#include "QueryRetrieve.h"
#include "Spool.h"
#include "WebSpool.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>

#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dctag.h>
#include <dcmtk/dcmdata/dcvr.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <set>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace blobstreaming::dicom::web {

namespace {

using json = nlohmann::json;

std::atomic<unsigned long> g_failures{0};

int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/// Percent-decoding (and '+' as a space in a query); false on a bad escape.
bool decode(std::string_view in, bool query, std::string& out)
{
    out.clear();
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] == '%') {
            if (i + 2 >= in.size()) return false;
            const int h = hex_digit(in[i + 1]), l = hex_digit(in[i + 2]);
            if (h < 0 || l < 0) return false;
            out += static_cast<char>(h * 16 + l);
            i += 2;
        } else {
            out += query && in[i] == '+' ? ' ' : in[i];
        }
    }
    return true;
}

/// "00100010" of a tag.
std::string tag_key(const DcmTagKey& tag)
{
    char b[9];
    std::snprintf(b, sizeof b, "%04X%04X", tag.getGroup(), tag.getElement());
    return b;
}

/// The tag that a query parameter's name says: a keyword (PS3.6) or eight
/// hexadecimal digits. False when it is neither.
bool resolve(const std::string& name, DcmTag& tag)
{
    if (name.size() == 8 && name.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos) {
        tag = DcmTag(static_cast<Uint16>(std::stoul(name.substr(0, 4), nullptr, 16)),
                     static_cast<Uint16>(std::stoul(name.substr(4), nullptr, 16)));
        return true;
    }
    return !name.empty() && DcmTag::findTagFromName(name.c_str(), tag).good();
}

/// One attribute of the DICOM JSON model (PS3.18 F.2): "vr" and "Value",
/// PN as {"Alphabetic": ...}, numbers as numbers; an empty value has no "Value".
json attribute(const DcmTag& tag, const std::string& text)
{
    const DcmVR vr(tag.getEVR());
    json a;
    a["vr"] = vr.getValidVRName();
    if (text.empty()) return a;
    json values = json::array();
    std::size_t start = 0;
    for (;;) {
        const std::size_t end = text.find('\\', start);
        const std::string v = utf8_escaped(text.substr(start, end == std::string::npos ? end : end - start));
        const DcmEVR e = vr.getValidEVR();
        try {
            if (e == EVR_PN) values.push_back(json{{"Alphabetic", v}});
            else if (e == EVR_IS || e == EVR_SS || e == EVR_SL || e == EVR_SV) values.push_back(std::stoll(v));
            else if (e == EVR_US || e == EVR_UL || e == EVR_UV) values.push_back(std::stoull(v));
            else if (e == EVR_DS || e == EVR_FL || e == EVR_FD) values.push_back(std::stod(v));
            else values.push_back(v);
        } catch (const std::exception&) {
            values.push_back(nullptr);  // not a number: an empty value of the multi-valued attribute
        }
        if (end == std::string::npos) break;
        start = end + 1;
    }
    a["Value"] = std::move(values);
    return a;
}

http::response<http::string_body> json_response(http::status status, const json& body)
{
    http::response<http::string_body> r{status, 11};
    r.set(http::field::content_type, "application/dicom+json");
    r.body() = body.dump();
    return r;
}

/// A read-only map of a spooled request body.
class MappedFile {
public:
    explicit MappedFile(const std::string& path)
    {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw Error(Errc::io_error, "cannot open the spooled body " + path);
        struct stat st {};
        ::fstat(fd, &st);
        size_ = static_cast<std::size_t>(st.st_size);
        if (size_ > 0) {
            void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
            if (p == MAP_FAILED) {
                ::close(fd);
                throw Error(Errc::io_error, "cannot map the spooled body " + path);
            }
            data_ = static_cast<const char*>(p);
        }
        ::close(fd);
    }
    ~MappedFile()
    {
        if (data_) ::munmap(const_cast<char*>(data_), size_);
    }
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    const char* data() const { return data_ ? data_ : ""; }
    std::size_t size() const { return size_; }

private:
    const char* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace

bool parse_target(const std::string& target, Target& out, std::string& why)
{
    const std::size_t q = target.find('?');
    const std::string_view path = std::string_view(target).substr(0, q);
    constexpr std::string_view kRoot = "/dicom-web";
    if (path.substr(0, kRoot.size()) != kRoot || (path.size() > kRoot.size() && path[kRoot.size()] != '/')) {
        why = "not found: " + std::string(path) + " (DICOMweb is served under /dicom-web)";
        return false;
    }
    std::string_view rest = path.substr(kRoot.size());
    while (!rest.empty()) {
        rest.remove_prefix(1);  // the '/'
        const std::size_t slash = rest.find('/');
        std::string segment;
        if (!decode(rest.substr(0, slash), false, segment)) {
            why = "malformed percent-escape in the path " + std::string(path);
            return false;
        }
        if (!segment.empty()) out.segments.push_back(segment);
        rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    }
    if (q == std::string::npos) return true;
    std::string_view query = std::string_view(target).substr(q + 1);
    while (!query.empty()) {
        const std::size_t amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        if (pair.empty()) continue;
        const std::size_t eq = pair.find('=');
        std::string key, value;
        if (!decode(pair.substr(0, eq), true, key) ||
            (eq != std::string_view::npos && !decode(pair.substr(eq + 1), true, value))) {
            why = "malformed percent-escape in the query parameter \"" + std::string(pair) + "\"";
            return false;
        }
        out.query.emplace_back(key, value);
    }
    return true;
}

DicomWeb::DicomWeb(const GatewayOptions& options, InstanceStore& store, StudyIndex& index, client::Session& session)
    : options_(options), store_(store), index_(index), session_(session)
{
}

std::string DicomWeb::base_url(const Request& request) const
{
    std::string host(request.header[http::field::host]);
    if (host.empty() || host.find_first_of(" \t\"<>\\") != std::string::npos) host = "localhost";
    return std::string(options_.http_tls_cert.empty() ? "http" : "https") + "://" + host + "/dicom-web";
}

http::response<http::string_body> DicomWeb::index_failure(const Request& request, const std::exception& e) const
{
    const std::string reference = std::to_string(::getpid()) + "-web-" + std::to_string(++g_failures);
    spdlog::error("DICOMweb {} from {}: the study index failed (reference {}): {}",
                  printable(std::string(request.header.target())), request.peer, reference, e.what());
    return text_response(http::status::internal_server_error,
                         "study index failure, reference " + reference + " in the gateway's log");
}

void DicomWeb::handle(const Request& request, Reply& reply)
{
    Target t;
    std::string why;
    if (!parse_target(std::string(request.header.target()), t, why))
        return void(reply.respond(text_response(http::status::not_found, why)));
    const auto& s = t.segments;
    const http::verb method = request.header.method();
    const auto is = [&s](std::size_t i, const char* word) { return s.size() > i && s[i] == word; };
    // STOW-RS's resources take POST too; a 405 names what the resource takes (RFC 9110 15.5.6).
    const bool stow = is(0, "studies") && s.size() <= 2;
    const auto not_allowed = [&](const std::string& text) {
        auto r = text_response(http::status::method_not_allowed, text);
        r.set(http::field::allow, stow ? "GET, HEAD, POST, OPTIONS" : "GET, HEAD, OPTIONS");
        reply.respond(std::move(r));
    };
    if (method == http::verb::post) {
        if (stow) return store(request, s.size() == 2 ? s[1] : "", reply);
        return not_allowed("POST (STOW-RS) goes to /dicom-web/studies or /dicom-web/studies/{study}");
    }
    // HEAD: as GET; the server sends no content (HttpServer).
    if (method != http::verb::get && method != http::verb::head)
        return not_allowed(std::string(stow ? "only GET, HEAD, POST and OPTIONS are"
                                            : "only GET, HEAD and OPTIONS are") +
                           " served here, not " + std::string(request.header.method_string()));
    // QIDO-RS without a study in the path.
    if (s.size() == 1 && is(0, "studies")) return search(request, t, Level::study, {}, reply);
    if (s.size() == 1 && is(0, "series")) return search(request, t, Level::series, {}, reply);
    if (s.size() == 1 && is(0, "instances")) return search(request, t, Level::instance, {}, reply);
    if (is(0, "studies") && s.size() >= 2) {
        Scope scope{s[1], "", ""};
        if (s.size() == 2) return retrieve(request, scope, reply);
        if (s.size() == 3 && is(2, "metadata")) return metadata(request, scope, reply);
        if (s.size() == 3 && is(2, "series")) return search(request, t, Level::series, scope, reply);
        if (s.size() == 3 && is(2, "instances")) return search(request, t, Level::instance, scope, reply);
        if (is(2, "series") && s.size() >= 4) {
            scope.series = s[3];
            if (s.size() == 4) return retrieve(request, scope, reply);
            if (s.size() == 5 && is(4, "metadata")) return metadata(request, scope, reply);
            if (s.size() == 5 && is(4, "instances")) return search(request, t, Level::instance, scope, reply);
            if (is(4, "instances") && s.size() >= 6) {
                scope.instance = s[5];
                if (s.size() == 6) return retrieve(request, scope, reply);
                if (s.size() == 7 && is(6, "metadata")) return metadata(request, scope, reply);
                if (s.size() == 8 && is(6, "frames")) return frames(request, scope, s[7], reply);
                if (s.size() == 8 && is(6, "bulkdata")) return bulk_data(request, scope, s[7], reply);
            }
        }
    }
    reply.respond(text_response(
        http::status::not_found,
        "not found: " + std::string(request.header.target()) +
            " (served: /dicom-web/studies, /series, /instances, /studies/{study}[/series[/{series}[/instances[/"
            "{instance}[/frames/{list}]]]]] and their /metadata)"));
}

// ---- QIDO-RS ---------------------------------------------------------------

void DicomWeb::search(const Request& request, const Target& target, Level level, const Scope& scope, Reply& reply)
{
    const auto bad = [&reply](const std::string& why) {
        reply.respond(text_response(http::status::bad_request, why));
    };
    DcmDataset identifier;
    identifier.putAndInsertString(DCM_SpecificCharacterSet, "ISO_IR 192");
    identifier.putAndInsertString(DCM_QueryRetrieveLevel,
                                  level == Level::study ? "STUDY" : level == Level::series ? "SERIES" : "IMAGE");
    if (!scope.study.empty()) identifier.putAndInsertString(DCM_StudyInstanceUID, scope.study.c_str());
    if (!scope.series.empty()) identifier.putAndInsertString(DCM_SeriesInstanceUID, scope.series.c_str());
    std::size_t limit = 0, offset = 0;
    std::set<std::string> seen;
    std::vector<DcmTag> included;
    const auto number = [](const std::string& v, std::size_t& out) {
        if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) return false;
        out = std::stoul(v);
        return true;
    };
    for (const auto& [key, value] : target.query) {
        if (key == "limit" || key == "offset") {
            if (!number(value, key == "limit" ? limit : offset))
                return bad("query parameter " + key + "=" + utf8_escaped(value) +
                           ": expected a whole number (0 to 999999999)");
            continue;
        }
        if (key == "fuzzymatching") {
            if (value != "true" && value != "false")
                return bad("query parameter fuzzymatching=" + utf8_escaped(value) + ": expected true or false");
            continue;  // matching is never fuzzy here: PS3.18 lets a server ignore it
        }
        if (key == "includefield") {
            std::size_t start = 0;
            while (start <= value.size()) {
                const std::size_t comma = value.find(',', start);
                const std::string field = value.substr(start, comma == std::string::npos ? comma : comma - start);
                DcmTag tag;
                if (field != "all" && !resolve(field, tag))
                    return bad("includefield " + utf8_escaped(field) +
                               ": not a DICOM keyword nor a tag of 8 hexadecimal digits (or all)");
                if (field != "all") included.push_back(tag);
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
            continue;  // the index's columns are returned anyway, the fields named besides (C-FIND's return keys)
        }
        if (key.find('.') != std::string::npos)
            return bad("query parameter " + utf8_escaped(key) + ": sequence matching is not supported");
        DcmTag tag;
        if (!resolve(key, tag))
            return bad("query parameter " + utf8_escaped(key) +
                       ": not a DICOM keyword nor a tag of 8 hexadecimal digits, nor limit, offset, includefield or "
                       "fuzzymatching");
        const std::string keyword = tag.getTagName();
        if (!seen.insert(keyword).second) return bad("query parameter " + keyword + " given twice");
        if ((keyword == "StudyInstanceUID" && !scope.study.empty()) ||
            (keyword == "SeriesInstanceUID" && !scope.series.empty()))
            return bad("query parameter " + keyword + " repeats the UID of the path");
        if (value.find('\0') != std::string::npos) return bad("query parameter " + keyword + ": NUL byte in the value");
        // A key DCMTK does not take (a private tag without its creator) is refused, never dropped.
        if (const OFCondition put = identifier.putAndInsertString(tag, value.c_str()); put.bad())
            return bad("query parameter " + utf8_escaped(key) + ": cannot be matched (" + put.text() + ")");
    }
    for (const DcmTag& tag : included)
        if (!identifier.tagExists(tag)) identifier.insertEmptyElement(tag);
    IndexQuery query;
    try {
        // As a C-FIND's: a key that cannot be matched is refused (400), never ignored.
        query = parse_identifier(identifier, InformationModel::study_root);
    } catch (const QueryRefused& e) {
        return bad(e.what());
    }
    std::vector<IndexRow> rows;
    try {
        rows = index_.find(level, query.matches, query.returned);
    } catch (const std::exception& e) {
        return void(reply.respond(index_failure(request, e)));
    }
    const std::size_t total = rows.size();
    if (offset >= rows.size()) rows.clear();
    else rows.erase(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(offset));
    if (limit > 0 && rows.size() > limit) rows.resize(limit);
    spdlog::info("DICOMweb QIDO-RS from {}: {} level, {} matches, {} returned", request.peer, level_name(level), total,
                 rows.size());
    if (rows.empty()) {
        http::response<http::string_body> r{http::status::no_content, 11};
        return void(reply.respond(std::move(r)));
    }
    const std::string base = base_url(request);
    json out = json::array();
    for (const IndexRow& row : rows) {
        json o = json::object();
        std::string study, series, sop;
        for (const auto& [column, value] : row) {
            DcmTag tag;
            if (DcmTag::findTagFromName(column.c_str(), tag).bad()) continue;  // blob, store, size, ...
            o[tag_key(tag)] = attribute(tag, value);
            if (column == "StudyInstanceUID") study = value;
            if (column == "SeriesInstanceUID") series = value;
            if (column == "SOPInstanceUID") sop = value;
        }
        std::string url = base + "/studies/" + study;
        if (level >= Level::series) url += "/series/" + series;
        if (level == Level::instance) url += "/instances/" + sop;
        o[tag_key(DCM_RetrieveURL)] = json{{"vr", "UR"}, {"Value", json::array({utf8_escaped(url)})}};
        out.push_back(std::move(o));
    }
    reply.respond(json_response(http::status::ok, out));
}

// ---- STOW-RS ---------------------------------------------------------------

void DicomWeb::store(const Request& request, const std::string& study, Reply& reply)
{
    const std::string type(request.header[http::field::content_type]);
    if (media_type(type) != "multipart/related")
        return void(reply.respond(text_response(
            http::status::unsupported_media_type,
            "STOW-RS takes Content-Type multipart/related; type=\"application/dicom\", not \"" + utf8_escaped(type) +
                "\"")));
    const std::string part_type = media_type(media_parameter(type, "type"));
    if (!part_type.empty() && part_type != "application/dicom")
        return void(reply.respond(text_response(
            http::status::unsupported_media_type,
            "STOW-RS parts of type \"" + utf8_escaped(part_type) +
                "\" are not accepted here: only application/dicom (Part 10 files), not metadata and bulk data")));
    const std::string boundary = media_parameter(type, "boundary");
    if (boundary.empty() || boundary.size() > 70)
        return void(reply.respond(text_response(http::status::bad_request,
                                                "Content-Type multipart/related without a boundary (1 to 70 characters)")));
    if (request.body_path.empty())
        return void(reply.respond(text_response(http::status::bad_request, "STOW-RS request without a body")));
    const MappedFile body(request.body_path);
    std::vector<Part> parts;
    bool too_many = false;
    const std::string malformed =
        split_parts(body.data(), body.size(), boundary, options_.http_max_parts, parts, too_many);
    if (too_many)
        return void(reply.respond(text_response(http::status::payload_too_large,
                                                "the request has more than " + std::to_string(options_.http_max_parts) +
                                                    " parts (--http-max-parts)")));
    if (!malformed.empty())
        return void(reply.respond(text_response(http::status::bad_request, "malformed multipart body: " + malformed)));
    if (parts.empty())
        return void(reply.respond(text_response(http::status::bad_request, "the multipart body holds no part")));
    const std::string base = base_url(request);
    json referenced = json::array(), failed = json::array();
    std::vector<std::string> warnings;
    const auto started = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const Part& part = parts[i];
        std::uint16_t status = 0;
        std::string why, sop_class, sop;
        if (!part.content_type.empty() && media_type(part.content_type) != "application/dicom") {
            status = status::cannot_understand;
            why = "its Content-Type is " + part.content_type + ", not application/dicom";
        }
        SpoolFile file(options_.spool);
        if (status == 0) {
            std::ofstream out(file.path(), std::ios::binary);
            out.write(part.data, static_cast<std::streamsize>(part.size));
            out.close();
            if (!out) {
                status = status::out_of_resources;
                why = "cannot write it to the spool";
            }
        }
        std::map<std::string, std::string> values;
        if (status == 0) {
            why = read_header(file.path(), values);
            sop_class = values["SOPClassUID"];
            sop = values["SOPInstanceUID"];
            if (!why.empty()) status = status::cannot_understand;
            else if (!study.empty() && values["StudyInstanceUID"] != study) {
                status = status::data_set_mismatch;
                why = "its StudyInstanceUID " + values["StudyInstanceUID"] + " is not " + study + " of the path";
            }
        }
        if (status == 0) {
            ReceivedInstance instance{file.path(), sop_class, sop, "STOW@" + request.peer};
            const StoreOutcome outcome = store_.store(instance, [](const StoreOutcome&) {});
            status = outcome.status;
            why = outcome.comment;
        }
        json item = json::object();
        item[tag_key(DCM_ReferencedSOPClassUID)] = attribute(DcmTag(DCM_ReferencedSOPClassUID), sop_class);
        item[tag_key(DCM_ReferencedSOPInstanceUID)] = attribute(DcmTag(DCM_ReferencedSOPInstanceUID), sop);
        if (status == status::success) {
            const std::string url = base + "/studies/" + values["StudyInstanceUID"] + "/series/" +
                                    values["SeriesInstanceUID"] + "/instances/" + sop;
            item[tag_key(DCM_RetrieveURL)] = json{{"vr", "UR"}, {"Value", json::array({utf8_escaped(url)})}};
            referenced.push_back(std::move(item));
        } else {
            item[tag_key(DCM_FailureReason)] = json{{"vr", "US"}, {"Value", json::array({status})}};
            failed.push_back(std::move(item));
            spdlog::error("DICOMweb STOW-RS from {}: part {} (instance {}): status {:04X}: {}", request.peer, i + 1,
                          printable(sop), status, printable(why));
            std::string w = "part " + std::to_string(i + 1) + ": " + utf8_escaped(why);
            for (char& c : w)
                if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '\'';
            warnings.push_back(w);
        }
    }
    json out = json::object();
    if (!study.empty())
        out[tag_key(DCM_RetrieveURL)] = json{{"vr", "UR"}, {"Value", json::array({base + "/studies/" + study})}};
    if (!referenced.empty()) out[tag_key(DCM_ReferencedSOPSequence)] = json{{"vr", "SQ"}, {"Value", referenced}};
    if (!failed.empty()) out[tag_key(DCM_FailedSOPSequence)] = json{{"vr", "SQ"}, {"Value", failed}};
    store_.wait_indexed();  // a search after the answer finds what it stored
    spdlog::info("DICOMweb STOW-RS from {}: {} parts, {} stored, {} failed, in {:.3f} s", request.peer, parts.size(),
                 referenced.size(), failed.size(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    // PS3.18 10.5.3: 200 every instance stored, 202 some, 409 none.
    auto r = json_response(failed.empty() ? http::status::ok
                           : referenced.empty() ? http::status::conflict
                                                : http::status::accepted,
                           out);
    for (std::size_t i = 0; i < warnings.size() && i < 20; ++i)
        r.insert(http::field::warning, "299 blob-dicomd \"" + warnings[i].substr(0, 400) + "\"");
    reply.respond(std::move(r));
}

}  // namespace blobstreaming::dicom::web
