// blob find and blob pull --study/--series: the study index of
// clients/dicom (docs/DICOM.md) seen from the command line.
#include "Commands.h"
#include "Output.h"

#include "../../dicom/NearestCopy.h"
#include "../../dicom/StudyIndex.h"

#include <blobstreaming/client/Session.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>

#include <sys/stat.h>

namespace blobstreaming::cli {

namespace {

using namespace blobstreaming::dicom;

/// Columns whose values are numbers in --json (the rest are strings).
bool numeric_column(const std::string& column)
{
    if (column == "size" || (column.rfind("NumberOf", 0) == 0 && column != "NumberOfFrames")) return true;
    const Attribute* a = find_attribute(column);
    return a && a->kind == Kind::number;
}

nlohmann::json row_json(const IndexRow& row)
{
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [column, value] : row) {
        if (!numeric_column(column)) {
            j[column] = utf8_escaped(value);
            continue;
        }
        // IS values may be signed or, in a broken object, not numbers at all: those stay text.
        char* end = nullptr;
        const long long number = std::strtoll(value.c_str(), &end, 10);
        j[column] = value.empty()  ? nlohmann::json()
                    : *end == '\0' ? nlohmann::json(number)
                                   : nlohmann::json(utf8_escaped(value));
    }
    return j;
}

/// A UID from the index, checked before it becomes a file name.
bool plain_uid(const std::string& uid)
{
    return !uid.empty() && uid.size() <= 64 && uid.find_first_not_of("0123456789.") == std::string::npos &&
           uid.front() != '.';
}

std::string value_of(const IndexRow& row, const char* column)
{
    for (const auto& [c, v] : row)
        if (c == column) return v;
    return {};
}

}  // namespace

int find(const Invocation& call)
{
    const Level level = call.level.empty() ? Level::study : parse_level(call.level);
    const std::vector<Match> matches = parse_matches(call.args);  // a malformed term fails before the index opens
    const auto started = std::chrono::steady_clock::now();
    const StudyIndex index(call.index, false);
    const std::vector<IndexRow> rows = index.find(level, matches);
    spdlog::info("find: {} {} match(es) in {:.3f} ms (index opened and queried)", rows.size(), level_name(level),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    if (call.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const IndexRow& row : rows) list.push_back(row_json(row));
        std::cout << json_line({{"level", level_name(level)}, {"count", rows.size()}, {"matches", list}});
        return 0;
    }
    if (rows.empty()) {
        if (!call.quiet) std::fprintf(stderr, "blob find: no %s matches\n", level_name(level));
        return 0;
    }
    std::string line;
    for (const auto& [column, value] : rows.front()) line += (line.empty() ? "" : "\t") + column;
    std::cout << line << "\n";
    // One row a line, one value a column: a value's control characters are
    // shown escaped (a newline would forge a row, ESC would reach the terminal).
    for (const IndexRow& row : rows) {
        line.clear();
        bool first = true;
        for (const auto& [column, value] : row) {
            line += (first ? "" : "\t") + (value.empty() ? std::string("-") : printable(value));
            first = false;
        }
        std::cout << line << "\n";
    }
    return 0;
}

int pull_instances(const Invocation& call)
{
    const bool by_study = !call.study.empty();
    const std::string& uid = by_study ? call.study : call.series;
    const char* key = by_study ? "StudyInstanceUID" : "SeriesInstanceUID";
    const std::string what = std::string("pull --") + (by_study ? "study " : "series ") + uid;
    if (!plain_uid(uid))
        throw Error(Errc::invalid_argument,
                    what + ": not a UID (digits and single dots, at most 64 characters; one UID, no list)");
    const std::string& directory = call.args[0];
    const StudyIndex index(call.index, false);
    const std::vector<IndexRow> rows = index.find(Level::instance, parse_matches({std::string(key) + "=" + uid}));
    if (rows.empty())
        throw Error(Errc::no_such_blob,
                    what + ": the index " + redacted_index_url(call.index) + " lists no instance of it");

    if (::mkdir(directory.c_str(), 0777) != 0 && errno != EEXIST)
        throw Error(Errc::io_error, what + ": cannot create " + directory + ": " + std::strerror(errno));
    struct stat st {};
    if (::stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw Error(Errc::io_error, what + ": " + directory + " is not a directory");

    // Each instance from its nearest copy (the index knows every store
    // holding one), the next copy when that store fails it; with --store
    // from that store only. One series per store, each pulled in parallel
    // over the Session's pooled connections.
    std::vector<InstanceToPull> instances;
    for (const IndexRow& row : rows) {
        InstanceToPull i;
        i.sop = value_of(row, "SOPInstanceUID");
        if (!plain_uid(i.sop))
            throw Error(Errc::corrupt,
                        what + ": the index holds a bad SOP Instance UID \"" + printable(i.sop) + "\"");
        i.path = directory + "/" + i.sop + ".dcm";
        instances.push_back(std::move(i));
    }
    std::vector<std::string> sops;
    for (const InstanceToPull& i : instances) sops.push_back(i.sop);
    std::map<std::string, std::vector<IndexedBlob>> copies = index.copies_of(sops);
    client::Session session(session_options(call));
    std::map<std::string, client::StoreStatus> stores;
    if (call.store.empty()) stores = store_statuses(session);
    for (std::size_t k = 0; k < instances.size(); ++k) {
        InstanceToPull& i = instances[k];
        std::vector<IndexedBlob>& found = copies[i.sop];
        if (!call.store.empty()) {
            // The copy in that store, else the instance's Blob name there.
            const auto there =
                std::find_if(found.begin(), found.end(), [&](const IndexedBlob& c) { return c.store == call.store; });
            i.copies = {there != found.end() ? *there : IndexedBlob{value_of(rows[k], "blob"), call.store, ""}};
        } else {
            i.copies =
                nearest_first(std::move(found), {value_of(rows[k], "blob"), value_of(rows[k], "store"), ""}, stores);
        }
        for (const IndexedBlob& c : i.copies) validate_blob_name(c.blob);
    }
    client::PullOptions options;
    options.verify = call.verify;
    const auto started = std::chrono::steady_clock::now();
    const std::vector<PulledInstance> pulled = pull_from_copies(session, instances, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::uint64_t bytes = 0;
    for (const PulledInstance& p : pulled) bytes += p.result.bytes;

    int rc = 0;
    std::size_t failed = 0;
    nlohmann::json list = nlohmann::json::array();
    for (std::size_t k = 0; k < instances.size(); ++k) {
        const InstanceToPull& i = instances[k];
        const client::Result& r = pulled[k].result;
        if (!r.ok()) {
            ++failed;
            rc = std::max(rc, static_cast<int>(r.errc()));
        }
        if (call.json) {
            nlohmann::json j = r.ok() ? nlohmann::json{{"store", r.store},
                                                       {"name", pulled[k].blob},
                                                       {"bytes", r.bytes},
                                                       {"checksum", r.info.checksum.text()}}
                                      : error_json(r.errc(), r.message);
            j["SOPInstanceUID"] = i.sop;
            j["path"] = i.path;
            list.push_back(j);
        } else if (!r.ok()) {
            std::string tried;
            for (const std::string& t : pulled[k].tried) tried += (tried.empty() ? "" : ", ") + t;
            std::fprintf(stderr, "blob: %s: instance %s (Blob %s; stores tried: %s): %s\n", what.c_str(), i.sop.c_str(),
                         quote_name(pulled[k].blob).c_str(), tried.c_str(), r.message.c_str());
        }
    }
    const double mbps = seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0.0;
    if (call.json) {
        nlohmann::json out{{by_study ? "study" : "series", uid},
                           {"directory", directory},
                           {"instances", list},
                           {"succeeded", instances.size() - failed},
                           {"failed", failed},
                           {"bytes", bytes},
                           {"seconds", seconds},
                           {"MBps", mbps}};
        std::cout << json_line(out);
    } else if (!call.quiet || failed > 0) {
        std::fprintf(stderr, "pulled %zu of %zu instances of %s %s to %s: %llu bytes in %.3f s (%.2f MB/s)%s\n",
                     instances.size() - failed, instances.size(), by_study ? "study" : "series", uid.c_str(),
                     directory.c_str(), static_cast<unsigned long long>(bytes), seconds, mbps,
                     call.verify ? ", verified" : "");
    }
    return rc;
}

}  // namespace blobstreaming::cli
