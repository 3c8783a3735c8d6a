#pragma once
/// The study index: DICOM Patient / Study / Series / Instance attributes of
/// stored Blobs, apart from their pixels (docs/DICOM.md, docs/EVENTS.md
/// "The study index"). One row per instance (the levels above are grouped
/// from it), and one per copy of it (a Blob in a store: an instance copied
/// to several stores stays indexed until its last copy goes; a Blob holding
/// another data set under the same SOP Instance UID is kept apart, in
/// conflict: InstanceIdentity.h) in SQLite (`sqlite:PATH`, embedded) or PostgreSQL
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
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace blobstreaming::dicom {

/// What the index keeps of one stored instance.
struct InstanceRecord {
    /// keyword -> value ("" or absent: not in the object): those of
    /// attributes() in their columns, any other attribute of the header in
    /// the header column (Attribute::in_header).
    std::map<std::string, std::string> values;
    std::string blob;                           ///< the Blob's name
    std::string store;                          ///< the store that committed it
    std::uint64_t size = 0;
    std::string checksum;  ///< "crc32c:..." as the store recorded it
    std::string problem;   ///< why the header parsed only partly ("" : it parsed whole)
    /// "crc32c:..." of the data set alone, the bytes after the File Meta
    /// Information (data_set_checksum(), InstanceIdentity.h); "" when it
    /// cannot be told (a SHA-256 Blob, a meta header not found).
    std::string data_set_checksum;
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

/// What StudyIndex::remove() removed.
struct Removal {
    std::size_t copies = 0;     ///< 1: the Blob was a copy the index knew
    std::size_t instances = 0;  ///< 1: it was the instance's last copy, its entry went
    std::string still_in;       ///< else a store that still holds the instance
    std::string sop;            ///< the instance's SOP Instance UID (copies 1)
    bool conflicting = false;   ///< the Blob held a data set in conflict with the entry's
    /// The entry's last copy went, and the entry now holds the data set of
    /// a copy that was in conflict (Blob `restored_blob` in `still_in`).
    bool restored = false;
    std::string restored_blob;
    std::size_t conflicts_left = 0;  ///< copies still in conflict with the entry
};

/// One copy of an instance in conflict (StudyIndex::conflicts()).
struct ConflictCopy {
    std::string blob;
    std::string store;
    std::string checksum;
    std::string data_set;                         ///< its data set's checksum ("" : not known)
    std::map<std::string, std::string> identity;  ///< kIdentifying (InstanceIdentity.h) -> value
    bool entry = false;  ///< a copy of the data set the entry holds (else one in conflict with it)
};

/// An instance with more than one data set under its SOP Instance UID:
/// every copy, the entry's first.
struct Conflict {
    std::string sop;
    std::vector<ConflictCopy> copies;
    /// `instance UID has 2 data sets: Blob "a.dcm" in store "ws1" (PatientID
    /// "P1", StudyInstanceUID "1.2"), Blob "b.dcm" in store "ws1" (...)`;
    /// when the copies' identifying attributes are all equal, each names
    /// its data set's checksum too (`, data set crc32c:...`).
    std::string text() const;
};

/// Where a copy of an instance is stored (StudyIndex::blobs()).
struct IndexedBlob {
    std::string blob;
    std::string store;
    std::string checksum;
};

/// `url` for messages, logs and ready lines: libpq's secrets left out. In
/// a URI the password of its user info (`user:***@`) and the value of each
/// secret parameter (`password`, `sslpassword`) are `***`; in a
/// `key=value` connection string, those keys' values likewise. Other URLs
/// (`sqlite:PATH`) are returned as they are.
std::string redacted_index_url(const std::string& url);

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

    /// Records (or replaces) the instance `record.values["SOPInstanceUID"]`
    /// and its copy `record.blob` in `record.store` (the instance's row then
    /// names that copy; a copy of another instance under that Blob and store
    /// is removed first); its study is then unstable (its last instance's time: now) until
    /// mark_stable(), and the on_put() callback is told.
    /// When the entry holds another data set (its identifying attributes
    /// differ, or its data set's checksum does; InstanceIdentity.h) that a
    /// Blob other than this one still holds, the record is kept apart as a copy in conflict (the entry is
    /// left as it is) and put() returns why, naming the UID, both Blobs and
    /// stores and the attributes that differ; otherwise "".
    std::string put(const InstanceRecord& record);
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
    /// Records Blob `blob` of `store` as one more copy of the instance that a
    /// Blob of the same name and checksum in another store is (a copy between
    /// stores: its header need not be read), not as a new instance (its study
    /// stays as stable as it was). Returns that instance's SOP Instance UID,
    /// or "" when no such copy is indexed (nothing recorded). A copy of a
    /// Blob in conflict is in conflict too (`conflicting` set).
    std::string add_copy(const std::string& blob, const std::string& store, std::uint64_t size,
                         const std::string& checksum, bool* conflicting = nullptr);
    /// Removes the copy that Blob `blob` of `store` is; the instance's
    /// entry goes with its last copy, unless a copy in conflict is left:
    /// the entry is then made from that one's data set (the first by store
    /// and Blob name), with every copy of the same data set, no longer in
    /// conflict.
    Removal remove(const std::string& blob, const std::string& store);
    /// The instances in conflict whose entry or copy in conflict matches
    /// `matches`, by SOP Instance UID.
    std::vector<Conflict> conflicts(const std::vector<Match>& matches) const;
    /// Whether the index records Blob `blob` of `store` holding `checksum`
    /// (indexed already, e.g. by the gateway that pushed it).
    bool has(const std::string& blob, const std::string& store, const std::string& checksum) const;
    /// Every copy's Blob, store and checksum, those in conflict too (a
    /// rescan compares them with the stores' lists).
    std::vector<IndexedBlob> blobs() const;
    /// The copies of each instance of `sops` (by SOP Instance UID), ordered
    /// by store name; an instance the index lacks has none. An index no
    /// gateway of this release has opened yet: the instance's one copy.
    std::map<std::string, std::vector<IndexedBlob>> copies_of(const std::vector<std::string>& sops) const;
    /// The matches at `level`, ordered (patients by ID, studies by date,
    /// series by their study's date then number, instances likewise then
    /// by number); an instance's `conflict` names its copies in conflict
    /// ("" when none). Each of `returned` kept in the header column
    /// (Attribute::in_header) of `level` or above is one more column of
    /// the rows (grouped levels: the least value of the group's instances).
    /// Throws Error(io_error).
    std::vector<IndexRow> find(Level level, const std::vector<Match>& matches,
                               const std::vector<const Attribute*>& returned = {}) const;

    class Backend;

private:
    Removal remove_copy(const std::string& blob, const std::string& store);
    /// Records the copy (a copy of another instance under that Blob and
    /// store removed first). With write_mutex_ held.
    void put_copy(const std::string& sop, const std::string& blob, const std::string& store, std::uint64_t size,
                  const std::string& checksum, const std::string& data_set_checksum);
    /// Why `record` is not a copy of the data set that `entry` (entry_of())
    /// holds: its identifying attributes differ, or no copy of the entry
    /// has its Blob checksum or its data set checksum (both known) — a data
    /// set whose checksum is not known is compared by the Blob's checksum
    /// only. "" when it is a copy.
    std::string data_set_difference(const InstanceRecord& record,
                                    const std::map<std::string, std::string>& entry) const;
    /// `"data_set_checksum"` prefixed by `table` (e.g. "c."), or `''` in an
    /// index made before the column.
    std::string data_set_column(const std::string& table = "") const;
    /// The entry's identifying attributes and its `blob` and `store`, or
    /// an empty map when the index has no entry for `sop`.
    std::map<std::string, std::string> entry_of(const std::string& sop) const;
    /// The entry's last copy went: makes it from a copy in conflict, if
    /// there is one (Removal::restored). With write_mutex_ held.
    bool restore_from_conflict(const std::string& sop, Removal& out);
    /// The study `study` has an instance put now: unstable, on_put() told.
    void touch_study(const std::string& study);
    Conflict conflict_of(const std::string& sop) const;

    std::unique_ptr<Backend> backend_;
    /// put() and remove() each run several statements: one at a time.
    std::mutex write_mutex_;
    /// The index has its copies table (a writer makes it; a reader may
    /// open an index an older gateway wrote).
    bool has_copies_ = true;
    /// Likewise its conflicts table (copies whose data set differs from the entry's).
    bool has_conflicts_ = true;
    /// Likewise the data set checksum of each copy (column data_set_checksum).
    bool has_data_sets_ = true;
    /// Likewise the header column (Attribute::in_header).
    bool has_header_ = true;
    std::function<void(const std::string&, std::int64_t)> on_put_;
};

}  // namespace blobstreaming::dicom
