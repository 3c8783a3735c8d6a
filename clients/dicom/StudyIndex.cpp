#include "StudyIndex.h"

#include <blobstreaming/common/Error.h>

#include <sqlite3.h>

#include <sys/stat.h>

namespace blobstreaming::dicom {

namespace {

constexpr const char* kInstanceColumns[] = {"blob", "store", "size", "checksum", "problem"};

/// A prepared statement, finalized on every path.
class Statement {
public:
    Statement(sqlite3* db, const std::string& sql, const std::string& path) : db_(db), path_(path)
    {
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) fail("prepare");
    }
    ~Statement() { sqlite3_finalize(stmt_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    void bind(int index, const std::string& text)
    {
        if (sqlite3_bind_text(stmt_, index, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT) != SQLITE_OK)
            fail("bind");
    }
    /// True while there is a row.
    bool step()
    {
        const int rc = sqlite3_step(stmt_);
        if (rc == SQLITE_ROW) return true;
        if (rc != SQLITE_DONE) fail("step");
        return false;
    }
    std::string text(int column) const
    {
        const auto* p = sqlite3_column_text(stmt_, column);
        return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
    }
    int columns() const { return sqlite3_column_count(stmt_); }
    std::string column_name(int column) const { return sqlite3_column_name(stmt_, column); }

    [[noreturn]] void fail(const char* what) const
    {
        throw Error(Errc::io_error, "index sqlite:" + path_ + ": " + what + ": " + sqlite3_errmsg(db_));
    }

private:
    sqlite3* db_;
    std::string path_;
    sqlite3_stmt* stmt_ = nullptr;
};

std::string path_of(const std::string& url)
{
    const std::string prefix = "sqlite:";
    if (url.rfind(prefix, 0) == 0 && url.size() > prefix.size()) return url.substr(prefix.size());
    if (url.rfind("postgresql:", 0) == 0)
        throw Error(Errc::invalid_argument, "--index " + url + ": PostgreSQL is not supported yet (use sqlite:PATH)");
    throw Error(Errc::invalid_argument, "--index " + url + ": expected sqlite:PATH");
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

/// The SELECT list of a level: its attributes and those above, then counts
/// (or, for instances, where the Blob is).
std::string select_list(Level level)
{
    std::string list;
    auto add = [&list](const std::string& expr) { list += (list.empty() ? "" : ", ") + expr; };
    for (const Attribute& a : attributes()) {
        if (a.level > level) continue;
        if (a.derived) {
            if (level == Level::study) add("group_concat(DISTINCT Modality) AS ModalitiesInStudy");
            continue;
        }
        add(a.keyword);
    }
    switch (level) {
    case Level::patient:
        add("COUNT(DISTINCT StudyInstanceUID) AS NumberOfPatientRelatedStudies");
        add("COUNT(*) AS NumberOfPatientRelatedInstances");
        break;
    case Level::study:
        add("COUNT(DISTINCT SeriesInstanceUID) AS NumberOfStudyRelatedSeries");
        add("COUNT(*) AS NumberOfStudyRelatedInstances");
        break;
    case Level::series: add("COUNT(*) AS NumberOfSeriesRelatedInstances"); break;
    case Level::instance:
        for (const char* c : kInstanceColumns) add(c);
        break;
    }
    return list;
}

const char* order_of(Level level)
{
    switch (level) {
    case Level::patient: return "PatientID";
    case Level::study: return "StudyDate, StudyTime, StudyInstanceUID";
    case Level::series: return "StudyDate, StudyTime, StudyInstanceUID, SeriesNumber, SeriesInstanceUID";
    case Level::instance: break;
    }
    return "StudyDate, StudyTime, StudyInstanceUID, SeriesNumber, SeriesInstanceUID, InstanceNumber, SOPInstanceUID";
}

}  // namespace

StudyIndex::StudyIndex(const std::string& url, bool writable) : path_(path_of(url))
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
    if (!writable) return;
    std::string schema = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE IF NOT EXISTS instances (";
    for (const Attribute& a : attributes()) {
        if (a.derived) continue;
        schema += std::string(a.keyword) + (a.kind == Kind::number ? " INTEGER" : " TEXT NOT NULL DEFAULT ''") +
                  (std::string(a.keyword) == "SOPInstanceUID" ? " PRIMARY KEY" : "") + ", ";
    }
    schema += "blob TEXT NOT NULL, store TEXT NOT NULL, size INTEGER NOT NULL, checksum TEXT NOT NULL, "
              "problem TEXT NOT NULL DEFAULT '');";
    for (const char* column :
         {"PatientID", "StudyInstanceUID", "SeriesInstanceUID", "StudyDate", "AccessionNumber", "blob"})
        schema += std::string("CREATE INDEX IF NOT EXISTS instances_") + column + " ON instances(" + column + ");";
    char* message = nullptr;
    if (sqlite3_exec(db_, schema.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
        const std::string why = message ? message : "unknown error";
        sqlite3_free(message);
        sqlite3_close(db_);
        throw Error(Errc::io_error, "index sqlite:" + path_ + ": cannot create the schema: " + why);
    }
}

StudyIndex::~StudyIndex() { sqlite3_close(db_); }

void StudyIndex::put(const InstanceRecord& record)
{
    std::string columns, marks;
    std::vector<std::string> values;
    auto add = [&](const std::string& column, const std::string& value) {
        columns += (columns.empty() ? "" : ", ") + column;
        marks += marks.empty() ? "?" : ", ?";
        values.push_back(value);
    };
    for (const Attribute& a : attributes()) {
        if (a.derived) continue;
        const auto it = record.values.find(a.keyword);
        const std::string value = it == record.values.end() ? std::string() : it->second;
        if (a.kind == Kind::number && value.empty()) continue;  // NULL: the object has none
        add(a.keyword, value);
    }
    add("blob", record.blob);
    add("store", record.store);
    add("size", std::to_string(record.size));
    add("checksum", record.checksum);
    add("problem", record.problem);
    Statement insert(db_, "INSERT OR REPLACE INTO instances (" + columns + ") VALUES (" + marks + ")", path_);
    for (std::size_t i = 0; i < values.size(); ++i) insert.bind(static_cast<int>(i + 1), values[i]);
    insert.step();
}

std::size_t StudyIndex::remove(const std::string& blob, const std::string& store)
{
    Statement del(db_, "DELETE FROM instances WHERE blob = ? AND store = ?", path_);
    del.bind(1, blob);
    del.bind(2, store);
    del.step();
    return static_cast<std::size_t>(sqlite3_changes(db_));
}

bool StudyIndex::has(const std::string& blob, const std::string& store, const std::string& checksum) const
{
    Statement query(db_, "SELECT 1 FROM instances WHERE blob = ? AND store = ? AND checksum = ? LIMIT 1", path_);
    query.bind(1, blob);
    query.bind(2, store);
    query.bind(3, checksum);
    return query.step();
}

std::vector<IndexRow> StudyIndex::find(Level level, const std::vector<Match>& matches) const
{
    std::vector<std::string> params;
    std::string sql = "SELECT " + select_list(level) + " FROM instances WHERE " + sql_condition(matches, params);
    if (const char* key = group_key(level)) sql += std::string(" GROUP BY ") + key;
    sql += std::string(" ORDER BY ") + order_of(level);
    Statement query(db_, sql, path_);
    for (std::size_t i = 0; i < params.size(); ++i) query.bind(static_cast<int>(i + 1), params[i]);
    std::vector<IndexRow> rows;
    while (query.step()) {
        IndexRow row;
        for (int c = 0; c < query.columns(); ++c) {
            std::string value = query.text(c);
            if (query.column_name(c) == "ModalitiesInStudy") {
                for (char& ch : value) ch = ch == ',' ? '\\' : ch;  // DICOM's multi-value separator
            }
            row.emplace_back(query.column_name(c), std::move(value));
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace blobstreaming::dicom
