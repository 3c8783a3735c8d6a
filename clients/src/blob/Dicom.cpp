// blob find and blob pull --study/--series: the study index of
// clients/dicom (docs/DICOM.md) seen from the command line.
#include "Commands.h"
#include "Output.h"

#include "../../dicom/InstanceIdentity.h"
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
    if (!valid_uid(uid))
        throw Error(Errc::invalid_argument, what + ": not a UID (digits in components separated by single dots, no "
                                                   "leading zero but \"0\", at most 64 characters; one UID, no list)");
    const std::string& directory = call.args[0];
    const StudyIndex index(call.index, false);
    const std::vector<Match> matches = parse_matches({std::string(key) + "=" + uid});
    const std::vector<IndexRow> all_rows = index.find(Level::instance, matches);
    const std::vector<Conflict> conflicts = index.conflicts(matches);
    if (all_rows.empty() && conflicts.empty())
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
    // Not pulled, named: an instance whose UID is not valid (never made a
    // file name) or that has more than one data set (a conflict).
    struct Refusal {
        std::string sop;
        std::string why;
    };
    std::vector<Refusal> refused;
    std::map<std::string, std::string> in_conflict;
    for (const Conflict& c : conflicts) in_conflict[c.sop] = c.text() + "; not pulled until one of them is removed";
    std::vector<InstanceToPull> instances;
    std::vector<IndexRow> rows;
    for (const IndexRow& row : all_rows) {
        InstanceToPull i;
        i.sop = value_of(row, "SOPInstanceUID");
        if (!valid_uid(i.sop)) {
            refused.push_back({i.sop, "the index holds an invalid SOP Instance UID \"" + escaped(i.sop) +
                                          "\" (Blob " + quote_name(value_of(row, "blob")) + " in store \"" +
                                          value_of(row, "store") + "\"): not pulled"});
            in_conflict.erase(i.sop);
            continue;
        }
        if (const auto c = in_conflict.find(i.sop); c != in_conflict.end()) {
            refused.push_back({i.sop, c->second});
            in_conflict.erase(c);
            continue;
        }
        i.path = directory + "/" + i.sop + ".dcm";
        instances.push_back(std::move(i));
        rows.push_back(row);
    }
    for (const auto& [sop, why] : in_conflict) refused.push_back({sop, why});
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
    std::vector<PulledInstance> pulled = pull_from_copies(session, instances, options);
    // Each object's own attributes, read from the bytes written, are those
    // the index lists (and so those asked for): another is not kept.
    for (std::size_t k = 0; k < instances.size(); ++k) {
        client::Result& r = pulled[k].result;
        if (!r.ok()) continue;
        std::map<std::string, std::string> expected;
        for (const char* column :
             {"SOPInstanceUID", "PatientID", "StudyInstanceUID", "SeriesInstanceUID", "SOPClassUID"})
            expected[column] = value_of(rows[k], column);
        const std::string mismatch = delivered_mismatch(instances[k].path, expected);
        if (mismatch.empty()) continue;
        std::remove(instances[k].path.c_str());
        r.error = make_error_code(Errc::corrupt);
        r.message = "Blob " + quote_name(pulled[k].blob) + " in store \"" + r.store +
                    "\" is not the instance the index lists: " + mismatch + "; removed from " + directory;
    }
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
    for (const Refusal& refusal : refused) {
        ++failed;
        rc = std::max(rc, static_cast<int>(Errc::partial));
        if (call.json) {
            nlohmann::json j = error_json(Errc::partial, refusal.why);
            j["SOPInstanceUID"] = refusal.sop;
            list.push_back(j);
        } else {
            std::fprintf(stderr, "blob: %s: instance %s refused: %s\n", what.c_str(), escaped(refusal.sop).c_str(),
                         refusal.why.c_str());
        }
    }
    const std::size_t total = instances.size() + refused.size();
    const double mbps = seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0.0;
    if (call.json) {
        nlohmann::json out{{by_study ? "study" : "series", uid},
                           {"directory", directory},
                           {"instances", list},
                           {"succeeded", total - failed},
                           {"failed", failed},
                           {"bytes", bytes},
                           {"seconds", seconds},
                           {"MBps", mbps}};
        std::cout << json_line(out);
    } else if (!call.quiet || failed > 0) {
        std::fprintf(stderr, "pulled %zu of %zu instances of %s %s to %s: %llu bytes in %.3f s (%.2f MB/s)%s\n",
                     total - failed, total, by_study ? "study" : "series", uid.c_str(),
                     directory.c_str(), static_cast<unsigned long long>(bytes), seconds, mbps,
                     call.verify ? ", verified" : "");
    }
    return rc;
}

}  // namespace blobstreaming::cli
