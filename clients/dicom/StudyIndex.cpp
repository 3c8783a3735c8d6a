#include "StudyIndex.h"

#include "InstanceIdentity.h"

#include <blobstreaming/common/Error.h>

#include <libpq-fe.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string_view>

#include <sys/stat.h>

namespace blobstreaming::dicom {

/// One database connection: statements with `?` placeholders and text
/// parameters (an empty optional: NULL), one at a time.
class StudyIndex::Backend {
public:
    virtual ~Backend() = default;
    virtual Dialect dialect() const = 0;
    /// Runs statements without parameters (the schema).
    virtual void script(const std::string& sql) = 0;
    /// Runs one statement; its rows, or for a change the rows it changed in `changed`.
    virtual std::vector<IndexRow> run(const std::string& sql, const std::vector<std::string>& params,
                                      std::size_t* changed = nullptr) = 0;
};

namespace {

constexpr const char* kInstanceColumns[] = {"blob", "store", "size", "checksum", "problem"};

class SqliteBackend : public StudyIndex::Backend {
public:
    SqliteBackend(const std::string& path, bool writable) : path_(path)
    {
        struct stat st {};
        if (!writable && ::stat(path_.c_str(), &st) != 0)
            throw Error(Errc::invalid_argument,
                        "index sqlite:" + path_ + ": no such file (blob-dicomd --index creates it)");
        const int flags =
            (writable ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_FULLMUTEX;
        if (sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
            const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
            sqlite3_close(db_);
            throw Error(Errc::io_error, "index sqlite:" + path_ + ": cannot open: " + why);
        }
        sqlite3_busy_timeout(db_, 10000);
    }
    ~SqliteBackend() override { sqlite3_close(db_); }
    SqliteBackend(const SqliteBackend&) = delete;
    SqliteBackend& operator=(const SqliteBackend&) = delete;

    Dialect dialect() const override { return Dialect::sqlite; }

    void script(const std::string& sql) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        char* message = nullptr;
        if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
            const std::string why = message ? message : "unknown error";
            sqlite3_free(message);
            throw Error(Errc::io_error, "index sqlite:" + path_ + ": cannot create the schema: " + why);
        }
    }

    std::vector<IndexRow> run(const std::string& sql, const std::vector<std::string>& params,
                              std::size_t* changed) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        sqlite3_stmt* raw = nullptr;
        if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) fail("prepare");
        const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
        for (std::size_t i = 0; i < params.size(); ++i) {
            if (sqlite3_bind_text(raw, static_cast<int>(i + 1), params[i].c_str(), static_cast<int>(params[i].size()),
                                  SQLITE_TRANSIENT) != SQLITE_OK)
                fail("bind");
        }
        std::vector<IndexRow> rows;
        for (;;) {
            const int rc = sqlite3_step(raw);
            if (rc == SQLITE_DONE) break;
            if (rc != SQLITE_ROW) fail("step");
            IndexRow row;
            for (int c = 0; c < sqlite3_column_count(raw); ++c) {
                const auto* p = sqlite3_column_text(raw, c);
                row.emplace_back(sqlite3_column_name(raw, c),
                                 p ? std::string(reinterpret_cast<const char*>(p)) : std::string());
            }
            rows.push_back(std::move(row));
        }
        if (changed) *changed = static_cast<std::size_t>(sqlite3_changes(db_));
        return rows;
    }

private:
    [[noreturn]] void fail(const char* what) const
    {
        throw Error(Errc::io_error, "index sqlite:" + path_ + ": " + what + ": " + sqlite3_errmsg(db_));
    }

    std::string path_;
    sqlite3* db_ = nullptr;
    std::mutex mutex_;
};

class PostgresBackend : public StudyIndex::Backend {
public:
    explicit PostgresBackend(const std::string& url) : url_(redacted_index_url(url))
    {
        conn_ = PQconnectdb(url.c_str());
        if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
            const std::string why = conn_ ? trimmed(PQerrorMessage(conn_)) : "out of memory";
            PQfinish(conn_);
            throw Error(Errc::unreachable, "index " + url_ + ": cannot connect: " + why);
        }
        PGresult* quiet = PQexec(conn_, "SET client_min_messages = warning");
        PQclear(quiet);
    }
    ~PostgresBackend() override { PQfinish(conn_); }
    PostgresBackend(const PostgresBackend&) = delete;
    PostgresBackend& operator=(const PostgresBackend&) = delete;

    Dialect dialect() const override { return Dialect::postgresql; }

    void script(const std::string& sql) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        PGresult* r = PQexec(conn_, sql.c_str());
        const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
        const std::string why = ok ? std::string() : trimmed(PQresultErrorMessage(r));
        PQclear(r);
        if (!ok) throw Error(Errc::io_error, "index " + url_ + ": cannot create the schema: " + why);
    }

    std::vector<IndexRow> run(const std::string& sql, const std::vector<std::string>& params,
                              std::size_t* changed) override
    {
        // `?` -> `$n`: the generated SQL has no `?` but its placeholders.
        std::string numbered;
        int n = 0;
        for (char c : sql) numbered += c == '?' ? "$" + std::to_string(++n) : std::string(1, c);
        std::vector<const char*> values;
        for (const std::string& p : params) values.push_back(p.c_str());
        std::lock_guard<std::mutex> lock(mutex_);
        PGresult* r = PQexecParams(conn_, numbered.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                                   nullptr, nullptr, 0);
        const std::unique_ptr<PGresult, void (*)(PGresult*)> result(r, PQclear);
        const ExecStatusType status = PQresultStatus(r);
        if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
            const std::string why = trimmed(r ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
            throw Error(PQstatus(conn_) == CONNECTION_OK ? Errc::io_error : Errc::unreachable,
                        "index " + url_ + ": " + why);
        }
        std::vector<IndexRow> rows;
        for (int i = 0; i < PQntuples(r); ++i) {
            IndexRow row;
            for (int c = 0; c < PQnfields(r); ++c)
                row.emplace_back(PQfname(r, c), PQgetisnull(r, i, c) ? std::string() : PQgetvalue(r, i, c));
            rows.push_back(std::move(row));
        }
        if (changed) {
            const char* tuples = PQcmdTuples(r);
            *changed = tuples && *tuples ? std::stoul(tuples) : 0;
        }
        return rows;
    }

private:
    static std::string trimmed(const char* text)
    {
        std::string s = text ? text : "";
        while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
        for (char& c : s) c = c == '\n' ? ' ' : c;
        return s;
    }
    std::string url_;
    PGconn* conn_ = nullptr;
    std::mutex mutex_;
};

std::unique_ptr<StudyIndex::Backend> open_backend(const std::string& url, bool writable)
{
    const std::string prefix = "sqlite:";
    if (url.rfind(prefix, 0) == 0 && url.size() > prefix.size())
        return std::make_unique<SqliteBackend>(url.substr(prefix.size()), writable);
    if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0)
        return std::make_unique<PostgresBackend>(url);
    throw Error(Errc::invalid_argument,
                "--index " + redacted_index_url(url) + ": expected sqlite:PATH or postgresql://[USER@]HOST[:PORT]/DB");
}

const char* group_key(Level level)
{
    switch (level) {
    case Level::patient: return "PatientID";
    case Level::study: return "StudyInstanceUID";
    case Level::series: return "SeriesInstanceUID";
    case Level::instance: break;
    }
    return nullptr;
}

/// The SELECT list of a level: its attributes and those above (grouped
/// levels: MIN of each, the group key itself), then counts (or, for
/// instances, where the Blob is). Every column named as it is returned.
std::string select_list(Level level, Dialect dialect, bool copies, bool conflicts, bool data_sets)
{
    std::string list;
    auto add = [&list](const std::string& expr, const std::string& name) {
        list += (list.empty() ? "" : ", ") + expr + " AS " + quoted(name);
    };
    const char* key = group_key(level);
    for (const Attribute& a : attributes()) {
        if (a.level > level) continue;
        if (a.derived) {
            if (level == Level::study)
                add(dialect == Dialect::sqlite ? "group_concat(DISTINCT \"Modality\")"
                                               : "string_agg(DISTINCT \"Modality\", ',' ORDER BY \"Modality\")",
                    a.keyword);
            continue;
        }
        const bool plain = !key || std::string(a.keyword) == key;
        add(plain ? quoted(a.keyword) : "MIN(" + quoted(a.keyword) + ")", a.keyword);
    }
    switch (level) {
    case Level::patient:
        add("COUNT(DISTINCT \"StudyInstanceUID\")", "NumberOfPatientRelatedStudies");
        add("COUNT(*)", "NumberOfPatientRelatedInstances");
        break;
    case Level::study:
        add("COUNT(DISTINCT \"SeriesInstanceUID\")", "NumberOfStudyRelatedSeries");
        add("COUNT(*)", "NumberOfStudyRelatedInstances");
        break;
    case Level::series: add("COUNT(*)", "NumberOfSeriesRelatedInstances"); break;
    case Level::instance:
        for (const char* c : kInstanceColumns) add(quoted(c), c);
        // Every store holding a copy (table copies), sorted, comma-separated;
        // an index no gateway of this release has opened yet: the one store.
        if (!copies) {
            add(quoted("store"), "stores");
            break;
        }
        add(dialect == Dialect::sqlite
                ? "(SELECT group_concat(\"store\", ',') FROM (SELECT \"store\" FROM copies WHERE \"sop\" = "
                  "instances.\"SOPInstanceUID\" ORDER BY \"store\"))"
                : "(SELECT string_agg(\"store\", ',' ORDER BY \"store\") FROM copies WHERE \"sop\" = "
                  "instances.\"SOPInstanceUID\")",
            "stores");
        // The copies whose data set differs from the entry's (table
        // conflicts): `"b.dcm" in store "ws1": PatientID "P", StudyInstanceUID "1.2"`, `; `-separated.
        if (conflicts) {
            std::string one = "'\"' || \"blob\" || '\" in store \"' || \"store\" || '\": PatientID \"' || "
                              "\"PatientID\" || '\", StudyInstanceUID \"' || \"StudyInstanceUID\" || '\"'";
            // A copy whose identifying attributes are the entry's: its data
            // set differs (`, data set crc32c:...`) or cannot be compared.
            if (data_sets) {
                std::string same;
                for (const char* k : kIdentifying)
                    same += (same.empty() ? "" : " AND ") + std::string("conflicts.") + quoted(k) + " = instances." +
                            quoted(k);
                one += " || CASE WHEN " + same +
                       " THEN ', data set ' || CASE WHEN conflicts.\"data_set_checksum\" = '' THEN 'not comparable' "
                       "ELSE conflicts.\"data_set_checksum\" END ELSE '' END";
            }
            add(dialect == Dialect::sqlite
                    ? "(SELECT group_concat(\"c\", '; ') FROM (SELECT " + one +
                          " AS \"c\" FROM conflicts WHERE \"SOPInstanceUID\" = instances.\"SOPInstanceUID\" "
                          "ORDER BY \"store\", \"blob\"))"
                    : "(SELECT string_agg(" + one +
                          ", '; ' ORDER BY \"store\", \"blob\") FROM conflicts WHERE \"SOPInstanceUID\" = "
                          "instances.\"SOPInstanceUID\")",
                "conflict");
        }
        break;
    }
    return list;
}

std::string order_of(Level level)
{
    std::vector<const char*> columns;
    switch (level) {
    case Level::patient: columns = {"PatientID"}; break;
    case Level::study: columns = {"StudyDate", "StudyTime", "StudyInstanceUID"}; break;
    case Level::series:
        columns = {"StudyDate", "StudyTime", "StudyInstanceUID", "SeriesNumber", "SeriesInstanceUID"};
        break;
    case Level::instance:
        columns = {"StudyDate",         "StudyTime",      "StudyInstanceUID", "SeriesNumber",
                   "SeriesInstanceUID", "InstanceNumber", "SOPInstanceUID"};
        break;
    }
    std::string order;
    for (const char* c : columns) order += (order.empty() ? "" : ", ") + quoted(c);
    return order;
}

/// The columns of an instance's row (instances, conflicts) and their values
/// from `record`, `?` placeholders in `marks`.
struct RecordColumns {
    std::string columns, marks;
    std::vector<std::string> names;
    std::vector<std::string> values;
};

/// The values of `values` that no column holds, as the header column's
/// JSON object (keyword -> value).
std::string header_json(const std::map<std::string, std::string>& values)
{
    nlohmann::json header = nlohmann::json::object();
    for (const auto& [keyword, value] : values) {
        const Attribute* a = find_attribute(keyword);
        if ((a && !a->derived) || value.empty()) continue;
        header[keyword] = value;
    }
    return header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

RecordColumns record_columns(const InstanceRecord& record)
{
    RecordColumns out;
    auto add = [&](const std::string& column, const std::string& value, const char* mark) {
        out.columns += (out.columns.empty() ? "" : ", ") + quoted(column);
        out.marks += std::string(out.marks.empty() ? "" : ", ") + mark;
        out.names.push_back(column);
        out.values.push_back(value);
    };
    for (const Attribute& a : attributes()) {
        if (a.derived) continue;
        const auto it = record.values.find(a.keyword);
        const std::string value = it == record.values.end() ? std::string() : it->second;
        // A number the object does not have (or not as a number): NULL.
        add(a.keyword, value, a.kind == Kind::number ? "CAST(NULLIF(?, '') AS INTEGER)" : "?");
    }
    add("blob", record.blob, "?");
    add("store", record.store, "?");
    add("size", std::to_string(record.size), "CAST(? AS BIGINT)");
    add("checksum", record.checksum, "?");
    add("problem", record.problem, "?");
    add("data_set_checksum", record.data_set_checksum, "?");
    add("header", header_json(record.values), "?");
    return out;
}

/// `"PatientID", "StudyInstanceUID", ...` of kIdentifying.
std::string identifying_columns()
{
    std::string out;
    for (const char* k : kIdentifying) out += (out.empty() ? "" : ", ") + quoted(k);
    return out;
}

/// `"PatientID" = ? AND ...` of kIdentifying.
std::string identifying_condition()
{
    std::string out;
    for (const char* k : kIdentifying) out += (out.empty() ? "" : " AND ") + quoted(k) + " = ?";
    return out;
}

/// Whether the index has column `column` in table `table`.
bool has_column(StudyIndex::Backend& backend, const std::string& table, const std::string& column)
{
    return !backend
                .run(backend.dialect() == Dialect::sqlite
                         ? "SELECT 1 AS \"found\" FROM pragma_table_info(?) WHERE name = ?"
                         : "SELECT 1 AS \"found\" FROM information_schema.columns WHERE table_schema = "
                           "current_schema() AND table_name = ? AND column_name = ?",
                     {table, column})
                .empty();
}

}  // namespace

namespace {

/// `text` with the value of every libpq secret parameter (`password`,
/// `sslpassword`, any case; a keyword of a connection string or a URL's
/// query) written `***`: a key at the start or after a blank, `&` or `?`,
/// then `=` (blanks around it allowed), then a quoted value ('...', with
/// backslash escapes) or one up to a blank, `&` or `#`.
std::string redacted_parameters(const std::string& text)
{
    const auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    const auto key_at = [&text](std::size_t at, std::string_view key) {
        if (text.size() - at < key.size()) return false;
        for (std::size_t k = 0; k < key.size(); ++k)
            if (std::tolower(static_cast<unsigned char>(text[at + k])) != key[k]) return false;
        return true;
    };
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
        const bool boundary = i == 0 || blank(text[i - 1]) || text[i - 1] == '&' || text[i - 1] == '?';
        std::size_t key = 0;
        if (boundary) key = key_at(i, "sslpassword") ? 11 : key_at(i, "password") ? 8 : 0;
        std::size_t j = i + key;
        while (key != 0 && j < text.size() && blank(text[j])) ++j;
        if (key == 0 || j >= text.size() || text[j] != '=') {
            out += text[i++];
            continue;
        }
        ++j;
        while (j < text.size() && blank(text[j])) ++j;
        out.append(text, i, j - i);  // the key, '=' and the blanks, as written
        if (j < text.size() && text[j] == '\'') {
            for (++j; j < text.size() && text[j] != '\''; ++j)
                if (text[j] == '\\' && j + 1 < text.size()) ++j;
            if (j < text.size()) ++j;  // the closing quote
        } else {
            while (j < text.size() && !blank(text[j]) && text[j] != '&' && text[j] != '#') ++j;
        }
        out += "***";
        i = j;
    }
    return out;
}

}  // namespace

std::string redacted_index_url(const std::string& url)
{
    std::string out = url;
    const auto scheme = out.find("://");
    if (scheme != std::string::npos) {
        // scheme://[user[:password]@]host...: the user info ends at the last '@' before the path.
        const auto begin = scheme + 3;
        const auto end = std::min(out.find_first_of("/?#", begin), out.size());
        const auto at = out.rfind('@', end == 0 ? 0 : end - 1);
        if (at != std::string::npos && at >= begin) {
            const auto colon = out.find(':', begin);
            if (colon != std::string::npos && colon < at) out = out.substr(0, colon) + ":***" + out.substr(at);
        }
    }
    return redacted_parameters(out);
}

StudyIndex::StudyIndex(const std::string& url, bool writable) : backend_(open_backend(url, writable))
{
    if (!writable) {
        // A reader of an index written by an older gateway (no copies table).
        has_copies_ = !backend_
                           ->run(backend_->dialect() == Dialect::sqlite
                                     ? "SELECT 1 AS \"found\" FROM sqlite_master WHERE type = 'table' AND name = "
                                       "'copies'"
                                     : "SELECT 1 AS \"found\" WHERE to_regclass('copies') IS NOT NULL",
                                 {})
                           .empty();
        has_conflicts_ = !backend_
                              ->run(backend_->dialect() == Dialect::sqlite
                                        ? "SELECT 1 AS \"found\" FROM sqlite_master WHERE type = 'table' AND name = "
                                          "'conflicts'"
                                        : "SELECT 1 AS \"found\" WHERE to_regclass('conflicts') IS NOT NULL",
                                    {})
                              .empty();
        has_data_sets_ = has_conflicts_ && has_copies_ && has_column(*backend_, "conflicts", "data_set_checksum") &&
                         has_column(*backend_, "copies", "data_set_checksum") &&
                         has_column(*backend_, "instances", "data_set_checksum");
        has_header_ = has_column(*backend_, "instances", "header");
        return;
    }
    const bool sqlite = backend_->dialect() == Dialect::sqlite;
    std::string schema = sqlite ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; " : "";
    schema += "CREATE TABLE IF NOT EXISTS instances (";
    for (const Attribute& a : attributes()) {
        if (a.derived) continue;
        schema += quoted(a.keyword) + (a.kind == Kind::number ? " INTEGER" : " TEXT NOT NULL DEFAULT ''") +
                  (std::string(a.keyword) == "SOPInstanceUID" ? " PRIMARY KEY" : "") + ", ";
    }
    schema += "\"blob\" TEXT NOT NULL, \"store\" TEXT NOT NULL, \"size\" BIGINT NOT NULL, \"checksum\" TEXT NOT NULL, "
              "\"problem\" TEXT NOT NULL DEFAULT '', \"data_set_checksum\" TEXT NOT NULL DEFAULT '', \"header\" TEXT "
              "NOT NULL DEFAULT '');";
    // A copy whose data set differs from its instance's entry (another
    // patient, study, series or SOP class under the same SOP Instance UID):
    // kept whole, one row per (Blob, store), apart from the entry.
    schema += "CREATE TABLE IF NOT EXISTS conflicts (";
    for (const Attribute& a : attributes()) {
        if (a.derived) continue;
        schema += quoted(a.keyword) + (a.kind == Kind::number ? " INTEGER" : " TEXT NOT NULL DEFAULT ''") + ", ";
    }
    schema += "\"blob\" TEXT NOT NULL, \"store\" TEXT NOT NULL, \"size\" BIGINT NOT NULL, \"checksum\" TEXT NOT NULL, "
              "\"problem\" TEXT NOT NULL DEFAULT '', \"data_set_checksum\" TEXT NOT NULL DEFAULT '', \"header\" TEXT "
              "NOT NULL DEFAULT '', PRIMARY KEY (\"blob\", \"store\"));"
              "CREATE INDEX IF NOT EXISTS conflicts_sop ON conflicts(\"SOPInstanceUID\");";
    for (const char* column :
         {"PatientID", "StudyInstanceUID", "SeriesInstanceUID", "StudyDate", "AccessionNumber", "blob"})
        schema +=
            std::string("CREATE INDEX IF NOT EXISTS instances_") + column + " ON instances(" + quoted(column) + ");";
    // Every copy of an instance: one row per (Blob, store). The instance's
    // row names the copy last committed; an index made before this table
    // gets one copy per instance, that one, by the same statement.
    schema += "CREATE TABLE IF NOT EXISTS copies (\"sop\" TEXT NOT NULL, \"blob\" TEXT NOT NULL, \"store\" TEXT "
              "NOT NULL, \"size\" BIGINT NOT NULL, \"checksum\" TEXT NOT NULL, \"data_set_checksum\" TEXT NOT NULL "
              "DEFAULT '', PRIMARY KEY (\"blob\", \"store\"));"
              "CREATE INDEX IF NOT EXISTS copies_sop ON copies(\"sop\");"
              "INSERT INTO copies (\"sop\", \"blob\", \"store\", \"size\", \"checksum\") SELECT "
              "\"SOPInstanceUID\", \"blob\", \"store\", \"size\", \"checksum\" FROM instances WHERE NOT EXISTS "
              "(SELECT 1 FROM copies);";
    // Whether each study's stability was published (study-stable): added
    // to an index made before it by the same statement (its studies, not
    // in it, are never published).
    schema +=
        "CREATE TABLE IF NOT EXISTS study_state (\"study\" TEXT PRIMARY KEY, \"last_instance_ns\" BIGINT NOT NULL, "
        "\"stable_ns\" BIGINT);";
    backend_->script(schema);
    // The checksum of each copy's data set: added to an index made before
    // it, empty in the rows it holds (their data sets are compared by the
    // Blob's checksum only).
    // The header column (every attribute no column holds; a put() writes
    // a JSON object, '{}' at least): added to an index made before it as
    // '', "not read yet", which blobs() and has() report so that the
    // start's rescan reads each such Blob's header again.
    const std::pair<const char*, const char*> added[] = {{"instances", "data_set_checksum"},
                                                         {"conflicts", "data_set_checksum"},
                                                         {"copies", "data_set_checksum"},
                                                         {"instances", "header"},
                                                         {"conflicts", "header"}};
    for (const auto& [table, column] : added) {
        if (has_column(*backend_, table, column)) continue;
        const std::string add = std::string("ALTER TABLE ") + table + " ADD COLUMN " +
                                (sqlite ? "" : "IF NOT EXISTS ") + quoted(column) + " TEXT NOT NULL DEFAULT ''";
        try {
            backend_->script(add);
        } catch (const Error&) {
            // Another gateway on the same index added it meanwhile.
            if (!has_column(*backend_, table, column)) throw;
        }
    }
}

std::string StudyIndex::data_set_column(const std::string& table) const
{
    return has_data_sets_ ? table + "\"data_set_checksum\"" : std::string("''");
}

std::string StudyIndex::data_set_difference(const InstanceRecord& record,
                                            const std::map<std::string, std::string>& entry) const
{
    if (const std::string differs = identity_difference(record.values, entry); !differs.empty()) return differs;
    if (!has_data_sets_) return {};
    const auto sop = record.values.find("SOPInstanceUID");
    const std::vector<IndexRow> copies =
        backend_->run("SELECT \"checksum\", \"data_set_checksum\" FROM copies WHERE \"sop\" = ? ORDER BY \"store\", "
                      "\"blob\"",
                      {sop == record.values.end() ? std::string() : sop->second});
    std::string known;  // the entry's data set checksum, when a copy has one
    for (const IndexRow& copy : copies) {
        // The same bytes (the same Blob checksum), or the same data set.
        if (copy.at(0).second == record.checksum) return {};
        if (!record.data_set_checksum.empty() && copy.at(1).second == record.data_set_checksum) return {};
        if (known.empty()) known = copy.at(1).second;
    }
    if (copies.empty()) return {};  // an entry without copies: nothing to compare with
    if (record.data_set_checksum.empty()) {
        const auto checksum = Checksum::parse(record.checksum);
        return "data set not comparable (" +
               (checksum && checksum->algorithm != ChecksumAlgorithm::crc32c
                    ? "its Blob's checksum " + checksum->brief() + " is not a CRC32C"
                    : std::string("its File Meta Information (group 0002) was not found")) +
               ", and its Blob's checksum is no copy's)";
    }
    if (known.empty())
        return "data set not comparable (the entry's copies have no data set checksum: indexed before it was "
               "recorded, or SHA-256 Blobs; nor is its Blob's checksum any copy's)";
    return "data set " + escaped(record.data_set_checksum) + " (not " + escaped(known) + ")";
}

StudyIndex::~StudyIndex() = default;

std::string StudyIndex::put(const InstanceRecord& record)
{
    std::lock_guard<std::mutex> lock(write_mutex_);
    const auto sop = record.values.find("SOPInstanceUID");
    const std::string uid = sop == record.values.end() ? std::string() : sop->second;

    // The Blob holds this record now: what the index knew of it before goes
    // (a copy in conflict; a copy of the entry whose data set differs, or
    // of another instance).
    if (has_conflicts_)
        backend_->run("DELETE FROM conflicts WHERE \"blob\" = ? AND \"store\" = ?", {record.blob, record.store});
    std::map<std::string, std::string> entry = entry_of(uid);
    if (!entry.empty() && !data_set_difference(record, entry).empty() &&
        !backend_
             ->run("SELECT 1 AS \"found\" FROM copies WHERE \"blob\" = ? AND \"store\" = ?",
                   {record.blob, record.store})
             .empty()) {
        remove_copy(record.blob, record.store);
        entry = entry_of(uid);
    }
    const RecordColumns r = record_columns(record);
    if (!entry.empty() && has_conflicts_) {
        if (const std::string differs = data_set_difference(record, entry); !differs.empty()) {
            // Another Blob holds the entry's data set: both are kept, this
            // one apart; retrieval refuses the instance until one goes.
            std::string updates;
            for (const std::string& n : r.names)
                if (n != "blob" && n != "store")
                    updates += (updates.empty() ? "" : ", ") + quoted(n) + " = excluded." + quoted(n);
            backend_->run("INSERT INTO conflicts (" + r.columns + ") VALUES (" + r.marks +
                              ") ON CONFLICT (\"blob\", \"store\") DO UPDATE SET " + updates,
                          r.values);
            return "instance " + escaped(uid) + ": Blob \"" + escaped(record.blob) + "\" in store \"" +
                   escaped(record.store) + "\" holds another data set than its entry's (Blob \"" +
                   escaped(entry["blob"]) + "\" in store \"" + escaped(entry["store"]) + "\"): " + differs +
                   "; both kept, the instance is flagged as a conflict (retrieval refuses it until one of them is "
                   "removed)";
        }
    }
    std::string updates;
    for (const std::string& n : r.names)
        if (n != "SOPInstanceUID") updates += (updates.empty() ? "" : ", ") + quoted(n) + " = excluded." + quoted(n);
    backend_->run("INSERT INTO instances (" + r.columns + ") VALUES (" + r.marks +
                      ") ON CONFLICT (\"SOPInstanceUID\") DO UPDATE SET " + updates,
                  r.values);
    put_copy(uid, record.blob, record.store, record.size, record.checksum, record.data_set_checksum);
    const auto study = record.values.find("StudyInstanceUID");
    if (study != record.values.end() && !study->second.empty()) touch_study(study->second);
    return {};
}

void StudyIndex::touch_study(const std::string& study)
{
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    backend_->run("INSERT INTO study_state (\"study\", \"last_instance_ns\", \"stable_ns\") VALUES (?, CAST(? AS "
                  "BIGINT), NULL) ON CONFLICT (\"study\") DO UPDATE SET \"last_instance_ns\" = "
                  "excluded.\"last_instance_ns\", \"stable_ns\" = NULL",
                  {study, std::to_string(now)});
    if (on_put_) on_put_(study, now);
}

std::map<std::string, std::string> StudyIndex::entry_of(const std::string& sop) const
{
    std::map<std::string, std::string> out;
    const std::vector<IndexRow> rows =
        backend_->run("SELECT " + identifying_columns() +
                          ", \"blob\", \"store\" FROM instances WHERE \"SOPInstanceUID\" = ?",
                      {sop});
    if (!rows.empty())
        for (const auto& [column, value] : rows.front()) out[column] = value;
    return out;
}

void StudyIndex::on_put(std::function<void(const std::string&, std::int64_t)> callback)
{
    on_put_ = std::move(callback);
}

std::vector<PendingStudy> StudyIndex::pending_studies() const
{
    std::vector<PendingStudy> out;
    for (const IndexRow& row : backend_->run("SELECT \"study\", \"last_instance_ns\" FROM study_state WHERE "
                                             "\"stable_ns\" IS NULL ORDER BY \"last_instance_ns\"",
                                             {}))
        out.push_back({row.at(0).second, std::stoll(row.at(1).second)});
    return out;
}

bool StudyIndex::mark_stable(const std::string& study, std::int64_t last_instance_ns, std::int64_t now_ns)
{
    std::size_t changed = 0;
    backend_->run("UPDATE study_state SET \"stable_ns\" = CAST(? AS BIGINT) WHERE \"study\" = ? AND "
                  "\"last_instance_ns\" = CAST(? AS BIGINT)",
                  {std::to_string(now_ns), study, std::to_string(last_instance_ns)}, &changed);
    return changed > 0;
}

std::optional<StudySummary> StudyIndex::study(const std::string& study_instance_uid) const
{
    const std::vector<IndexRow> rows = backend_->run(
        "SELECT MIN(\"PatientID\") AS \"p\", MIN(\"AccessionNumber\") AS \"a\", COUNT(DISTINCT "
        "\"SeriesInstanceUID\") AS \"s\", COUNT(*) AS \"n\" FROM instances WHERE \"StudyInstanceUID\" = ?",
        {study_instance_uid});
    if (rows.empty() || rows[0].at(3).second == "0") return std::nullopt;
    StudySummary out;
    out.study_instance_uid = study_instance_uid;
    out.patient_id = rows[0].at(0).second;
    out.accession_number = rows[0].at(1).second;
    out.series = static_cast<std::uint32_t>(std::stoul(rows[0].at(2).second));
    out.instances = static_cast<std::uint32_t>(std::stoul(rows[0].at(3).second));
    for (const IndexRow& row : backend_->run("SELECT DISTINCT \"store\" FROM copies WHERE \"sop\" IN (SELECT "
                                             "\"SOPInstanceUID\" FROM instances WHERE \"StudyInstanceUID\" = ?) "
                                             "ORDER BY \"store\"",
                                             {study_instance_uid}))
        out.stores.push_back(row.at(0).second);
    return out;
}

std::string StudyIndex::add_copy(const std::string& blob, const std::string& store, std::uint64_t size,
                                 const std::string& checksum, bool* conflicting)
{
    std::lock_guard<std::mutex> lock(write_mutex_);
    if (conflicting) *conflicting = false;
    const std::vector<IndexRow> same =
        backend_->run("SELECT \"sop\", " + data_set_column() +
                          " AS \"data_set_checksum\" FROM copies WHERE \"blob\" = ? AND \"checksum\" = ? AND \"store\" "
                          "<> ? LIMIT 1",
                      {blob, checksum, store});
    if (!same.empty()) {
        const std::string sop = same.front().at(0).second;
        if (has_conflicts_) backend_->run("DELETE FROM conflicts WHERE \"blob\" = ? AND \"store\" = ?", {blob, store});
        put_copy(sop, blob, store, size, checksum, same.front().at(1).second);
        return sop;
    }
    if (!has_conflicts_) return {};
    // A copy of a Blob in conflict: in conflict too, with the same data set.
    const std::vector<IndexRow> apart =
        backend_->run("SELECT \"SOPInstanceUID\", \"store\" FROM conflicts WHERE \"blob\" = ? AND \"checksum\" = ? AND "
                      "\"store\" <> ? LIMIT 1",
                      {blob, checksum, store});
    if (apart.empty()) return {};
    const std::string sop = apart.front().at(0).second;
    if (!backend_->run("SELECT 1 AS \"found\" FROM copies WHERE \"blob\" = ? AND \"store\" = ?", {blob, store}).empty())
        remove_copy(blob, store);
    std::string columns, selected;
    for (const Attribute& a : attributes()) {
        if (a.derived) continue;
        columns += quoted(a.keyword) + ", ";
        selected += quoted(a.keyword) + ", ";
    }
    columns += "\"blob\", \"store\", \"size\", \"checksum\", \"problem\"";
    selected += "\"blob\", ?, CAST(? AS BIGINT), \"checksum\", \"problem\"";
    if (has_data_sets_) {
        columns += ", \"data_set_checksum\"";
        selected += ", \"data_set_checksum\"";
    }
    columns += ", \"header\"";
    selected += ", \"header\"";
    backend_->run("INSERT INTO conflicts (" + columns + ") SELECT " + selected +
                      " FROM conflicts WHERE \"blob\" = ? AND \"store\" = ? ON CONFLICT (\"blob\", \"store\") DO "
                      "NOTHING",
                  {store, std::to_string(size), blob, apart.front().at(1).second});
    if (conflicting) *conflicting = true;
    return sop;
}

void StudyIndex::put_copy(const std::string& sop, const std::string& blob, const std::string& store, std::uint64_t size,
                          const std::string& checksum, const std::string& data_set_checksum)
{
    // The Blob held another instance: that copy goes first.
    for (const IndexRow& row :
         backend_->run("SELECT \"sop\" FROM copies WHERE \"blob\" = ? AND \"store\" = ?", {blob, store}))
        if (row.at(0).second != sop) remove_copy(blob, store);
    // The same Blob again whose data set checksum is not known this time:
    // the one recorded stays.
    backend_->run("INSERT INTO copies (\"sop\", \"blob\", \"store\", \"size\", \"checksum\", \"data_set_checksum\") "
                  "VALUES (?, ?, ?, CAST(? AS BIGINT), ?, ?) ON CONFLICT (\"blob\", \"store\") DO UPDATE SET \"sop\" = "
                  "excluded.\"sop\", \"size\" = excluded.\"size\", \"data_set_checksum\" = CASE WHEN "
                  "excluded.\"data_set_checksum\" = '' AND copies.\"checksum\" = excluded.\"checksum\" THEN "
                  "copies.\"data_set_checksum\" ELSE excluded.\"data_set_checksum\" END, \"checksum\" = "
                  "excluded.\"checksum\"",
                  {sop, blob, store, std::to_string(size), checksum, data_set_checksum});
}

Removal StudyIndex::remove(const std::string& blob, const std::string& store)
{
    std::lock_guard<std::mutex> lock(write_mutex_);
    return remove_copy(blob, store);
}

Removal StudyIndex::remove_copy(const std::string& blob, const std::string& store)
{
    Removal out;
    if (has_conflicts_) {
        const std::vector<IndexRow> apart = backend_->run(
            "SELECT \"SOPInstanceUID\" FROM conflicts WHERE \"blob\" = ? AND \"store\" = ?", {blob, store});
        if (!apart.empty()) {
            out.sop = apart.front().at(0).second;
            out.conflicting = true;
            backend_->run("DELETE FROM conflicts WHERE \"blob\" = ? AND \"store\" = ?", {blob, store}, &out.copies);
            out.conflicts_left =
                backend_->run("SELECT \"blob\" FROM conflicts WHERE \"SOPInstanceUID\" = ?", {out.sop}).size();
            const std::map<std::string, std::string> entry = entry_of(out.sop);
            const auto it = entry.find("store");
            out.still_in = it == entry.end() ? std::string() : it->second;
            return out;
        }
    }
    const std::vector<IndexRow> copy =
        backend_->run("SELECT \"sop\" FROM copies WHERE \"blob\" = ? AND \"store\" = ?", {blob, store});
    if (copy.empty()) return out;
    const std::string sop = copy.front().at(0).second;
    out.sop = sop;
    backend_->run("DELETE FROM copies WHERE \"blob\" = ? AND \"store\" = ?", {blob, store}, &out.copies);
    const std::vector<IndexRow> left = backend_->run(
        "SELECT \"blob\", \"store\", \"size\", \"checksum\", \"data_set_checksum\" FROM copies WHERE \"sop\" = ? "
        "ORDER BY \"store\", \"blob\" LIMIT 1",
        {sop});
    if (left.empty()) {
        if (restore_from_conflict(sop, out)) return out;
        backend_->run("DELETE FROM instances WHERE \"SOPInstanceUID\" = ?", {sop}, &out.instances);
        return out;
    }
    if (has_conflicts_)
        out.conflicts_left = backend_->run("SELECT \"blob\" FROM conflicts WHERE \"SOPInstanceUID\" = ?", {sop}).size();
    // The instance stays: its row names a copy that is left.
    out.still_in = left.front().at(1).second;
    backend_->run("UPDATE instances SET \"blob\" = ?, \"store\" = ?, \"size\" = CAST(? AS BIGINT), \"checksum\" = ?, "
                  "\"data_set_checksum\" = ? WHERE \"SOPInstanceUID\" = ? AND \"blob\" = ? AND \"store\" = ?",
                  {left.front().at(0).second, left.front().at(1).second, left.front().at(2).second,
                   left.front().at(3).second, left.front().at(4).second, sop, blob, store});
    return out;
}

bool StudyIndex::restore_from_conflict(const std::string& sop, Removal& out)
{
    if (!has_conflicts_) return false;
    const std::vector<IndexRow> first =
        backend_->run("SELECT \"blob\", \"store\", \"checksum\", \"data_set_checksum\", " + identifying_columns() +
                          " FROM conflicts WHERE \"SOPInstanceUID\" = ? ORDER BY \"store\", \"blob\" LIMIT 1",
                      {sop});
    if (first.empty()) return false;
    const std::string blob = first.front().at(0).second, store = first.front().at(1).second;
    std::vector<std::string> same{sop};
    for (std::size_t i = 4; i < first.front().size(); ++i) same.push_back(first.front()[i].second);
    // Its data set: the same Blob checksum, or the same data set checksum (known).
    same.push_back(first.front().at(2).second);
    same.push_back(first.front().at(3).second);
    std::string columns;
    for (const Attribute& a : attributes())
        if (!a.derived) columns += quoted(a.keyword) + ", ";
    columns += "\"blob\", \"store\", \"size\", \"checksum\", \"problem\", \"data_set_checksum\", \"header\"";
    backend_->run("DELETE FROM instances WHERE \"SOPInstanceUID\" = ?", {sop});
    backend_->run("INSERT INTO instances (" + columns + ") SELECT " + columns +
                      " FROM conflicts WHERE \"blob\" = ? AND \"store\" = ?",
                  {blob, store});
    // Every copy of that data set is a copy of the entry now.
    const std::string those = " FROM conflicts WHERE \"SOPInstanceUID\" = ? AND " + identifying_condition() +
                              " AND (\"checksum\" = ? OR (\"data_set_checksum\" <> '' AND \"data_set_checksum\" = ?))";
    backend_->run("INSERT INTO copies (\"sop\", \"blob\", \"store\", \"size\", \"checksum\", \"data_set_checksum\") "
                  "SELECT \"SOPInstanceUID\", \"blob\", \"store\", \"size\", \"checksum\", \"data_set_checksum\"" +
                      those,
                  same);
    backend_->run("DELETE" + those, same);
    out.restored = true;
    out.restored_blob = blob;
    out.still_in = store;
    out.conflicts_left = backend_->run("SELECT \"blob\" FROM conflicts WHERE \"SOPInstanceUID\" = ?", {sop}).size();
    const std::map<std::string, std::string> entry = entry_of(sop);
    const auto study = entry.find("StudyInstanceUID");
    if (study != entry.end() && !study->second.empty()) touch_study(study->second);
    return true;
}

bool StudyIndex::has(const std::string& blob, const std::string& store, const std::string& checksum) const
{
    for (const std::string table : {"copies", "conflicts"}) {
        if (table == "conflicts" && !has_conflicts_) break;
        // An entry whose header an older gateway did not record is to be read again.
        const std::string fresh =
            !has_header_ ? ""
            : table == "copies"
                ? " AND NOT EXISTS (SELECT 1 FROM instances WHERE \"SOPInstanceUID\" = copies.\"sop\" AND "
                  "\"header\" = '')"
                : " AND \"header\" <> ''";
        if (!backend_
                 ->run("SELECT 1 AS \"found\" FROM " + table +
                           " WHERE \"blob\" = ? AND \"store\" = ? AND \"checksum\" = ?" + fresh + " LIMIT 1",
                       {blob, store, checksum})
                 .empty())
            return true;
    }
    return false;
}

std::vector<IndexedBlob> StudyIndex::blobs() const
{
    std::vector<IndexedBlob> out;
    // A copy whose entry's header an older gateway did not record (header
    // '') has no checksum here: a rescan reads it again.
    const std::string sql =
        has_header_
            ? std::string(
                  "SELECT c.\"blob\", c.\"store\", CASE WHEN i.\"header\" = '' THEN '' ELSE c.\"checksum\" "
                  "END AS \"checksum\" FROM copies c LEFT JOIN instances i ON i.\"SOPInstanceUID\" = c.\"sop\"") +
                  (has_conflicts_ ? " UNION ALL SELECT \"blob\", \"store\", CASE WHEN \"header\" = '' THEN '' ELSE "
                                    "\"checksum\" END AS \"checksum\" FROM conflicts"
                                  : "")
            : std::string("SELECT \"blob\", \"store\", \"checksum\" FROM copies") +
                  (has_conflicts_ ? " UNION ALL SELECT \"blob\", \"store\", \"checksum\" FROM conflicts" : "");
    for (const IndexRow& row : backend_->run(sql, {}))
        out.push_back({row.at(0).second, row.at(1).second, row.at(2).second});
    return out;
}

std::map<std::string, std::vector<IndexedBlob>> StudyIndex::copies_of(const std::vector<std::string>& sops) const
{
    constexpr std::size_t kChunk = 256;  // placeholders per statement
    std::map<std::string, std::vector<IndexedBlob>> out;
    const std::string select =
        has_copies_ ? "SELECT \"sop\", \"blob\", \"store\", \"checksum\" FROM copies WHERE \"sop\" IN ("
                    : "SELECT \"SOPInstanceUID\", \"blob\", \"store\", \"checksum\" FROM instances WHERE "
                      "\"SOPInstanceUID\" IN (";
    for (std::size_t begin = 0; begin < sops.size(); begin += kChunk) {
        const std::size_t end = std::min(sops.size(), begin + kChunk);
        std::string sql = select;
        for (std::size_t i = begin; i < end; ++i) sql += i == begin ? "?" : ", ?";
        sql += has_copies_ ? ") ORDER BY \"store\"" : ")";
        const std::vector<std::string> params(sops.begin() + static_cast<std::ptrdiff_t>(begin),
                                              sops.begin() + static_cast<std::ptrdiff_t>(end));
        for (const IndexRow& row : backend_->run(sql, params))
            out[row.at(0).second].push_back({row.at(1).second, row.at(2).second, row.at(3).second});
    }
    return out;
}

std::vector<IndexRow> StudyIndex::find(Level level, const std::vector<Match>& matches,
                                       const std::vector<const Attribute*>& returned) const
{
    const Dialect dialect = backend_->dialect();
    std::vector<std::string> params;
    std::string list = select_list(level, dialect, has_copies_, has_conflicts_, has_data_sets_);
    for (const Attribute* a : returned) {
        if (a->level > level || !a->in_header || !has_header_) continue;
        const std::string value = column_of(*a, dialect);
        list += ", " + (group_key(level) ? "MIN(" + value + ")" : value) + " AS " + quoted(a->keyword);
    }
    std::string sql = "SELECT " + list + " FROM instances WHERE " + sql_condition(matches, params, dialect);
    if (const char* key = group_key(level)) sql += " GROUP BY " + quoted(key);
    sql += " ORDER BY " + order_of(level);
    std::vector<IndexRow> rows = backend_->run(sql, params);
    for (IndexRow& row : rows) {
        for (auto& [column, value] : row) {
            if (column == "ModalitiesInStudy") {
                for (char& ch : value) ch = ch == ',' ? '\\' : ch;  // DICOM's multi-value separator
            }
        }
    }
    return rows;
}

std::vector<Conflict> StudyIndex::conflicts(const std::vector<Match>& matches) const
{
    if (!has_conflicts_) return {};
    std::vector<std::string> params;
    const Dialect dialect = backend_->dialect();
    std::string sql = "SELECT \"SOPInstanceUID\" FROM conflicts WHERE " + sql_condition(matches, params, dialect);
    sql += " UNION SELECT \"SOPInstanceUID\" FROM instances WHERE " + sql_condition(matches, params, dialect) +
           " AND \"SOPInstanceUID\" IN (SELECT \"SOPInstanceUID\" FROM conflicts) ORDER BY 1";
    std::vector<Conflict> out;
    for (const IndexRow& row : backend_->run(sql, params)) out.push_back(conflict_of(row.at(0).second));
    return out;
}

Conflict StudyIndex::conflict_of(const std::string& sop) const
{
    Conflict out;
    out.sop = sop;
    std::string columns;
    for (const char* k : kIdentifying) columns += ", i." + quoted(k);
    auto add = [&](const std::vector<IndexRow>& rows, bool entry) {
        for (const IndexRow& row : rows) {
            ConflictCopy copy;
            copy.blob = row.at(0).second;
            copy.store = row.at(1).second;
            copy.checksum = row.at(2).second;
            copy.data_set = row.at(3).second;
            for (std::size_t i = 4; i < row.size(); ++i) copy.identity[row[i].first] = row[i].second;
            copy.entry = entry;
            out.copies.push_back(std::move(copy));
        }
    };
    add(backend_->run("SELECT c.\"blob\", c.\"store\", c.\"checksum\", " + data_set_column("c.") +
                          " AS \"data_set_checksum\"" + columns +
                          " FROM copies c JOIN instances i ON i.\"SOPInstanceUID\" = c.\"sop\" WHERE c.\"sop\" = ? "
                          "ORDER BY c.\"store\", c.\"blob\"",
                      {sop}),
        true);
    add(backend_->run("SELECT i.\"blob\", i.\"store\", i.\"checksum\", " + data_set_column("i.") +
                          " AS \"data_set_checksum\"" + columns +
                          " FROM conflicts i WHERE i.\"SOPInstanceUID\" = ? ORDER BY i.\"store\", i.\"blob\"",
                      {sop}),
        false);
    return out;
}

std::string Conflict::text() const
{
    std::string out = "instance " + escaped(sop) + " has more than one data set under its SOP Instance UID:";
    // The copies are one instance by their identifying attributes: their
    // data sets differ (or cannot be compared), each is named.
    bool same_identity = true;
    for (const ConflictCopy& c : copies)
        if (!identity_difference(c.identity, copies.front().identity).empty()) same_identity = false;
    bool first = true;
    for (const ConflictCopy& c : copies) {
        out += std::string(first ? " " : ", ") + "Blob \"" + escaped(c.blob) + "\" in store \"" + escaped(c.store) +
               "\" (";
        first = false;
        bool first_value = true;
        for (const char* k : kIdentifying) {
            const auto it = c.identity.find(k);
            const std::string value = it == c.identity.end() ? std::string() : it->second;
            // PatientID and StudyInstanceUID always; the others where the copies differ.
            bool shown = std::string(k) == "PatientID" || std::string(k) == "StudyInstanceUID";
            for (const ConflictCopy& o : copies) {
                const auto oi = o.identity.find(k);
                if ((oi == o.identity.end() ? std::string() : oi->second) != value) shown = true;
            }
            if (!shown) continue;
            out += std::string(first_value ? "" : ", ") + k + " \"" + escaped(value) + "\"";
            first_value = false;
        }
        if (same_identity)
            out += ", data set " + (c.data_set.empty() ? std::string("not comparable") : escaped(c.data_set));
        out += ")";
    }
    return out;
}

}  // namespace blobstreaming::dicom
