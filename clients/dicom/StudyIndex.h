#pragma once
/// The study index: DICOM Patient / Study / Series / Instance attributes of
/// stored Blobs, apart from their pixels (docs/DICOM.md, docs/ARCHITECTURE.md
/// "The study index"). One row per instance (the levels above are grouped
/// from it) in SQLite (`sqlite:PATH`, embedded) or PostgreSQL
/// (`postgresql://...`, libpq's URI: several hosts share one index), same
/// schema and results.
///
/// Thread-safe: one connection, one statement at a time; the gateway's
/// association threads write through the same object. Readers in other
/// processes (`blob find`) see each put() once it returns (SQLite: WAL
/// journal; PostgreSQL: each statement commits).

#include "Attributes.h"
#include "Matching.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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
    /// Opens the index that `url` names (`sqlite:PATH`, `postgresql://...`);
    /// `writable` creates the file (SQLite) and the schema when missing.
    /// Throws Error: invalid_argument for another URL form or a missing
    /// SQLite file to read, unreachable when PostgreSQL cannot be connected
    /// to, io_error when the database fails (with its message).
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

    class Backend;

private:
    std::unique_ptr<Backend> backend_;
};

}  // namespace blobstreaming::dicom
