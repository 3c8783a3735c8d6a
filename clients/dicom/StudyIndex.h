#pragma once
/// The study index: DICOM Patient / Study / Series / Instance attributes of
/// stored Blobs, apart from their pixels (docs/DICOM.md, docs/ARCHITECTURE.md
/// "The study index"). SQLite, one row per instance (the levels above are
/// grouped from it), opened from a URL `sqlite:PATH`.
///
/// Thread-safe: one connection in SQLite's serialized mode; the gateway's
/// association threads write through the same object. Readers in other
/// processes (`blob find`) see each put() once it returns (WAL journal).

#include "Attributes.h"
#include "Matching.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;

namespace blobstreaming::dicom {

/// What the index keeps of one stored instance.
struct InstanceRecord {
    std::map<std::string, std::string> values;  ///< keyword -> value ("" or absent: not in the object)
    std::string blob;                           ///< the Blob's name
    std::string store;                          ///< the store that committed it
    std::uint64_t size = 0;
    std::string checksum;  ///< "crc32c:..." as the store recorded it
    std::string problem;   ///< why the header parsed only partly ("" : it parsed whole)
};

/// One result of find(): (column, value) in a fixed order per level.
using IndexRow = std::vector<std::pair<std::string, std::string>>;

class StudyIndex {
public:
    /// Opens the index that `url` names (`sqlite:PATH`); `writable` creates
    /// the file and its schema when missing. Throws Error: invalid_argument
    /// for another URL form or a missing file to read, io_error when SQLite
    /// fails (with its message).
    StudyIndex(const std::string& url, bool writable);
    ~StudyIndex();
    StudyIndex(const StudyIndex&) = delete;
    StudyIndex& operator=(const StudyIndex&) = delete;

    /// Records (or replaces) the instance `record.values["SOPInstanceUID"]`.
    void put(const InstanceRecord& record);
    /// Removes the entries of Blob `blob` of `store`; returns how many.
    std::size_t remove(const std::string& blob, const std::string& store);
    /// Whether an entry says Blob `blob` of `store` holds `checksum`
    /// (indexed already, e.g. by the gateway that pushed it).
    bool has(const std::string& blob, const std::string& store, const std::string& checksum) const;
    /// The matches at `level`, ordered (patients by ID, studies by date,
    /// series by their study's date then number, instances likewise then
    /// by number). Throws Error(io_error).
    std::vector<IndexRow> find(Level level, const std::vector<Match>& matches) const;

private:
    sqlite3* db_ = nullptr;
    std::string path_;
};

}  // namespace blobstreaming::dicom
