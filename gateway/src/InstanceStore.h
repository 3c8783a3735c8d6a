#pragma once
/// What blob-dicomd does with one received instance, apart from DICOM
/// networking: read its header, push it as a Blob, index it, and choose the
/// C-STORE status (docs/DICOM.md, "Statuses").
///
/// Thread-safe: the association threads call store() at once; they share
/// the Session (Thread mode) and the StudyIndex.

#include "dicom/StudyIndex.h"
#include "GatewayOptions.h"
#include "IndexQueue.h"

#include <blobstreaming/client/Session.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace blobstreaming::dicom {

/// DIMSE statuses of a C-STORE response (PS3.4 B.2.3, PS3.7 C).
namespace status {
constexpr std::uint16_t success = 0x0000;
constexpr std::uint16_t processing_failure = 0x0110;
constexpr std::uint16_t out_of_resources = 0xA700;
constexpr std::uint16_t data_set_mismatch = 0xA900;
constexpr std::uint16_t cannot_understand = 0xC000;
/// Ours, in the "cannot understand" range: another data set is stored under
/// this SOP Instance UID (--on-conflict refuse).
constexpr std::uint16_t conflicting_instance = 0xC011;
}  // namespace status

/// A received instance: the file DCMTK wrote (meta header + the data set as
/// it came) and what the C-STORE request said.
struct ReceivedInstance {
    /// The file; for an object received into memory, where it is written
    /// when one is needed (InstanceStore::store with bytes).
    std::string path;
    std::string sop_class_uid;     ///< Affected SOP Class UID of the request
    std::string sop_instance_uid;  ///< Affected SOP Instance UID of the request
    std::string peer;              ///< "AE@host" for the log
};

struct StoreOutcome {
    std::uint16_t status = status::success;
    std::string comment;  ///< why, for the Error Comment (0000,0902) and the log
};

class InstanceStore {
public:
    /// `index` may be null (no --index).
    InstanceStore(const GatewayOptions& options, client::Session& session, StudyIndex* index);

    /// Waits until the queued index entries are written (the IndexQueue's
    /// destructor), then stops.
    ~InstanceStore();
    InstanceStore(const InstanceStore&) = delete;
    InstanceStore& operator=(const InstanceStore&) = delete;

    /// Parses and pushes (durable, verified), calls `answer` with the
    /// outcome (the C-STORE response), then queues the stored instance's
    /// index entry (IndexQueue) and returns: the association receives the
    /// modality's next instance while the entry is written, and an entry
    /// lost to a crash in between is made by the indexer's rescan at the
    /// next start. Logs one line per instance (a stored one once its entry
    /// is written). Returns the outcome.
    StoreOutcome store(const ReceivedInstance& instance, const std::function<void(const StoreOutcome&)>& answer);
    /// The same for an object received into memory (DataSetReceiver):
    /// `bytes` is what the file at instance.path would hold; it is parsed
    /// and pushed from memory. The file is written only when the memory
    /// cannot serve: an object that does not parse (the file's reader says
    /// why) and a resend of a name the store holds (compared with the
    /// stored Blob); the caller removes it afterwards.
    StoreOutcome store(const ReceivedInstance& instance, const std::vector<std::uint8_t>& bytes,
                       const std::function<void(const StoreOutcome&)>& answer);

    /// Waits until the index entries of the instances stored so far are
    /// written: before a C-FIND, C-GET, C-MOVE, Storage Commitment or the
    /// release of an association, and a STOW-RS answer, so that a peer sees
    /// what it was told is stored.
    void wait_indexed();
    /// Waits at most `bound` for the queued entries (a stopping gateway);
    /// whether they were all written.
    bool drain_index(std::chrono::milliseconds bound);

    /// Whether Blob `name` of --store is being stored (pushed, not yet
    /// indexed) by store(): its commit event needs no header read.
    bool storing(const std::string& name) const;

private:
    /// Blob `name` is being stored while one lives (storing()).
    struct Storing {
        InstanceStore& self;
        std::string name;
        Storing(InstanceStore& s, std::string n);
        ~Storing();
        Storing(const Storing&) = delete;
        Storing& operator=(const Storing&) = delete;
    };

    /// store()'s work; `bytes` null: the object is the file at instance.path.
    StoreOutcome store_object(const ReceivedInstance& instance, const std::vector<std::uint8_t>* bytes,
                              const std::function<void(const StoreOutcome&)>& answer);
    /// The push of store(); `bytes` as for store_object(), set to null once
    /// it had to be written to instance.path (a resend).
    StoreOutcome push(const ReceivedInstance& instance, const std::vector<std::uint8_t>*& bytes,
                      const std::string& name, InstanceRecord& record);

    const GatewayOptions& options_;
    client::Session& session_;
    mutable std::mutex storing_mutex_;
    std::multiset<std::string> storing_;
    std::unique_ptr<IndexQueue> queue_;  ///< null without an index
};

/// What read_header() found wrong with a whole object.
enum class Defect {
    none,
    unreadable,        ///< it does not parse: a header cut short, a data set that ends inside its pixel data
    short_pixel_data,  ///< native pixel data shorter than Rows x Columns x ... require
};

/// Reads the attributes of attributes() from a DICOM file, the pixel data
/// left unread (its declared length checked against the file's size, never
/// loaded). Returns "" and fills `values`, or why the file is not a whole,
/// readable DICOM object (`values` then holds what parsed; `defect`, when
/// given, says which kind). `header_only`: the file may end anywhere after
/// the header (the first bytes of a Blob): parsing stops at the pixel data.
/// Text values are decoded to UTF-8 by the Specific Character Set
/// (TextDecoder); a value that cannot be is kept with its bytes escaped,
/// and `undecodable`, when given, says which attributes and why ("" when
/// every value decoded).
std::string read_header(const std::string& path, std::map<std::string, std::string>& values, bool header_only = false,
                        Defect* defect = nullptr, std::string* undecodable = nullptr);

}  // namespace blobstreaming::dicom
