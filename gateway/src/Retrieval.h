#pragma once
/// What C-GET and C-MOVE retrieve (docs/DICOM.md, "Retrieval"): the
/// instances the study index lists for an identifier, each pulled from its
/// nearest copy (NearestCopy.h: verified, the next copy when a store fails
/// it), checked to be the instance the index lists, and handed to a sender,
/// one sub-operation each. C-GET sends on the requesting association,
/// C-MOVE on one of its own to the move destination; both through
/// send_instance() (SubOperation.h). The next two batches (16 instances;
/// the first, 4) are pulled while the current one is sent, by at most two
/// threads of the retrieval's own (started as its first batches are asked
/// for, each taking batch after batch, ended with it); an instance of up
/// to 8 MiB is pulled into memory (at most 16 MiB a batch), a larger one
/// into a spool file.

#include "QueryRetrieve.h"
#include "dicom/StudyIndex.h"

#include <blobstreaming/client/Session.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace blobstreaming::dicom {

/// An instance ready to be sent: the Blob as stored (meta header, then the
/// data set), in memory or, over 8 MiB, in a spool file, or (in_place())
/// in the file of a store of this host; dropped after the sub-operation.
struct RetrievedInstance {
    const std::uint8_t* bytes = nullptr;  ///< the Blob in memory (or mapped in place), or null: `path`
    std::size_t size = 0;                 ///< of `bytes`
    std::size_t data_set_offset = 0;      ///< where the data set starts in `bytes`
    std::string path;                     ///< the Blob's spool file (`bytes` null)
    /// In place: the store's file holding `bytes` at `file_offset`, for
    /// sendfile(2) (-1: none). The same bytes as `bytes`, verified.
    int fd = -1;
    std::uint64_t file_offset = 0;
    std::string sop_class;
    std::string sop;
    std::string transfer_syntax;  ///< as the index lists it
};

/// How one sub-operation ended (PS3.4 C.4.2.1.4, C.4.3.1.4).
enum class SubStatus { completed, warning, failed };

struct SubOutcome {
    SubOutcome(SubStatus status_ = SubStatus::completed, std::string problem_ = {}, std::string comment_ = {},
               bool syntax_ = false)
        : status(status_), problem(std::move(problem_)), comment(std::move(comment_)), syntax(syntax_)
    {}
    SubStatus status;
    std::string problem;  ///< why (failed or warning), for the log
    std::string comment;  ///< why, short, for the Error Comment (LO: 64 characters); "": problem
    /// Failed for its transfer syntax alone: the receiver accepted neither
    /// the stored one nor one it could be converted to.
    bool syntax;
};

struct RetrievalCounts {
    std::size_t remaining = 0;
    std::size_t completed = 0;
    std::size_t failed = 0;
    std::size_t warning = 0;
};

/// When a C-GET or C-MOVE sends its next pending response. They are
/// optional (PS3.4 C.4.2.3): one after the first sub-operation, then at most
/// one per kInterval, not one per instance (each is a DIMSE message the
/// gateway encodes and the requestor wakes up for: ~13 ms of CPU time in a
/// 200-slice move, 9 % of what it costs beside the receiver). A C-CANCEL is
/// looked for after every sub-operation all the same.
class PendingPacer {
public:
    static constexpr std::chrono::milliseconds kInterval{50};
    /// Whether a pending response is due now (then it counts as sent).
    bool due()
    {
        const auto now = std::chrono::steady_clock::now();
        if (last_ && now - *last_ < kInterval) return false;
        last_ = now;
        return true;
    }

private:
    std::optional<std::chrono::steady_clock::time_point> last_;
};

/// Why a retrieval cannot start: the status to answer and why.
struct RetrievalRefused : std::runtime_error {
    RetrievalRefused(std::uint16_t code, const std::string& why) : std::runtime_error(why), status(code) {}
    std::uint16_t status;
};

class Retrieval {
public:
    /// Lists the instances `query` matches (each instance in conflict
    /// refused, naming its Blobs, also when only its copy in conflict
    /// matches). `operation` names the request in log lines ("C-GET from
    /// VIEWER@10.0.0.7"); `spool_path` gives a new spool file name. Throws
    /// RetrievalRefused (C000) when the index fails.
    Retrieval(StudyIndex& index, client::Session& session, const IndexQuery& query, std::string operation,
              std::function<std::string()> spool_path);
    ~Retrieval();
    Retrieval(const Retrieval&) = delete;
    Retrieval& operator=(const Retrieval&) = delete;

    std::size_t size() const { return items_.size(); }

    /// An instance whose nearest copy is in a store of this host is not
    /// copied into memory: it is sent from the store's file, mapped and
    /// verified (PullSink::in_place), its descriptor in
    /// RetrievedInstance::fd. Before run(); off by default.
    void in_place(bool on) { in_place_ = on; }

    /// The SOP classes and transfer syntaxes of the instances to send, as
    /// the index lists them (what an association for them proposes).
    std::set<std::pair<std::string, std::string>> presentations() const;

    /// Sends one instance; called on the caller's thread, in the index's order.
    using Send = std::function<SubOutcome(const RetrievedInstance&)>;
    /// Called after each sub-operation with the counts so far; false stops
    /// the retrieval there (C-CANCEL, a lost association).
    using After = std::function<bool(const RetrievalCounts&)>;

    /// Starts pulling the first batches now (run() starts them otherwise):
    /// for a caller with something else to wait for first (C-MOVE: its
    /// association to the destination). Batches never sent are dropped.
    void prefetch();

    /// Runs every sub-operation (an instance that cannot be pulled, or is
    /// not what the index lists, fails without calling `send`); each failure
    /// is logged. Returns the counts: `remaining` > 0 when `after` stopped it.
    RetrievalCounts run(const Send& send, const After& after);

    /// The instances that are not sent, known before run(): their SOP
    /// Instance UID and why (another data set under the UID, an invalid
    /// UID), short; run() counts each as failed.
    std::vector<std::pair<std::string, std::string>> refused() const;

    /// The SOP Instance UIDs whose sub-operation failed, in order.
    const std::vector<std::string>& failed_uids() const { return failed_uids_; }
    /// The first failure's reason, short (the Error Comment of the final response).
    const std::string& first_comment() const { return first_comment_; }
    /// How long run() waited for pulls (the sender idle), seconds.
    double waited() const { return waited_; }

    /// The final status of a retrieval that ran to its end: 0000 every
    /// sub-operation completed; none did: C122 when each failed for its
    /// transfer syntax (SubOutcome::syntax; Failed: unable to process, with
    /// the code PS3.18 gives "Referenced Transfer Syntax not supported"),
    /// else A702 (unable to perform sub-operations); else B000 (one or more
    /// failures or warnings).
    std::uint16_t final_status(const RetrievalCounts& counts) const;

private:
    struct Item {
        std::string sop;
        IndexRow row;         ///< empty when refused before any pull
        std::string refused;  ///< why it is not sent ("" : it is)
        std::string comment;
    };
    struct Batch;
    struct Buffers;
    struct Pending;
    Batch pull(std::size_t begin, std::size_t end);
    /// The stores' statuses for nearest_first(), asked again when older than 5 s.
    std::map<std::string, client::StoreStatus> stores();

    StudyIndex& index_;
    client::Session& session_;
    std::string operation_;
    std::function<std::string()> spool_path_;
    bool in_place_ = false;
    double waited_ = 0;  ///< seconds run() waited for pulls
    std::vector<Item> items_;
    std::vector<std::string> failed_uids_;
    std::string first_comment_;
    std::size_t syntax_failures_ = 0;   ///< failed sub-operations that SubOutcome::syntax marks
    std::unique_ptr<Buffers> buffers_;  ///< reused between batches: no fresh pages, no zeroing
    std::unique_ptr<Pending> pending_;  ///< the batches being pulled, the stores' statuses
};

/// `row`'s value of `column` ("" when it has none).
std::string column_of(const IndexRow& row, const char* column);

}  // namespace blobstreaming::dicom
