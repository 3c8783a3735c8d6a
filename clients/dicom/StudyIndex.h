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
#include <functional>
#include <map>
#include <memory>
#include <optional>
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

/// What a study-stable event says of a study (StudyIndex::study()).
struct StudySummary {
    std::string study_instance_uid;
    std::string patient_id;
    std::string accession_number;
    std::uint32_t series = 0;
    std::uint32_t instances = 0;
    std::vector<std::string> stores;  ///< holding its instances, sorted
};

/// A study whose stability was not published yet: its last instance's time.
struct PendingStudy {
    std::string study;
    std::int64_t last_instance_ns = 0;  ///< ns since the Unix epoch
};

/// Where an entry's instance is stored (StudyIndex::blobs()).
struct IndexedBlob {
    std::string blob;
    std::string store;
    std::string checksum;
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

    /// Records (or replaces) the instance `record.values["SOPInstanceUID"]`;
    /// its study is then unstable (its last instance's time: now) until
    /// mark_stable(), and the on_put() callback is told.
    void put(const InstanceRecord& record);
    /// Called after each put() of an instance with a StudyInstanceUID, with
    /// that UID and the time recorded (ns since the Unix epoch). Set once,
    /// before the first put().
    void on_put(std::function<void(const std::string& study, std::int64_t time_ns)> callback);

    /// The studies put() made unstable that mark_stable() did not settle
    /// (after a restart: those to publish), oldest last instance first.
    std::vector<PendingStudy> pending_studies() const;
    /// Records that `study` was published stable at `now_ns`, unless an
    /// instance came after `last_instance_ns` (then returns false).
    bool mark_stable(const std::string& study, std::int64_t last_instance_ns, std::int64_t now_ns);
    /// The study's patient, accession, counts and stores; nullopt when the
    /// index has no instance of it.
    std::optional<StudySummary> study(const std::string& study_instance_uid) const;
    /// Removes the entries of Blob `blob` of `store`; returns how many.
    std::size_t remove(const std::string& blob, const std::string& store);
    /// Whether an entry says Blob `blob` of `store` holds `checksum`
    /// (indexed already, e.g. by the gateway that pushed it).
    bool has(const std::string& blob, const std::string& store, const std::string& checksum) const;
    /// Every entry's Blob, store and checksum (a rescan compares them with
    /// the stores' lists).
    std::vector<IndexedBlob> blobs() const;
    /// The matches at `level`, ordered (patients by ID, studies by date,
    /// series by their study's date then number, instances likewise then
    /// by number). Throws Error(io_error).
    std::vector<IndexRow> find(Level level, const std::vector<Match>& matches) const;

    class Backend;

private:
    std::unique_ptr<Backend> backend_;
    std::function<void(const std::string&, std::int64_t)> on_put_;
};

}  // namespace blobstreaming::dicom
