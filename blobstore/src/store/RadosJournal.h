#pragma once
/// The resume journal of a RadosStore reservation kept across a restart
/// (Reservation::keep_for_resume(); docs/STORES.md, "The RADOS tier"):
/// ResumeJournal.h's records, appended to object `blobstreaming.resume.ID`
/// as each write of the push's bytes to a data object completes. The
/// appends are made on librados' completion thread, so that the journal
/// follows the writes also while the push's own thread waits for its client.
/// Ranges are appended in the Blob's order, never one before the write of its
/// bytes completed; the range that ends the Blob is not journaled (the
/// commit follows it). The first append also names the client in the
/// reservation's index record (r:ID, RadosIndex.h), which is how a restarted
/// daemon tells the reservations it may adopt.
///
/// A failed append or write ends the journal where it is (logged; never an
/// error of the push): a restart resumes the push from there at most.

#include "Rados.h"
#include "ResumeJournal.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace blobstreaming::detail {

class RadosJournal : public std::enable_shared_from_this<RadosJournal> {
public:
    /// The journal of reservation `id` (its index record `record`), in
    /// store `store` ("rados:POOL", for the log). `journaled`: where the
    /// ranges already in the object end (a kept reservation reopened, whose
    /// record names its client), else 0 (nothing written yet).
    RadosJournal(rados_ioctx_t io, std::string store, std::string id, ResumeHeader header, std::string record,
                 std::uint64_t journaled);
    RadosJournal(const RadosJournal&) = delete;
    RadosJournal& operator=(const RadosJournal&) = delete;

    /// What the completion callback of one data write carries.
    struct Written {
        std::shared_ptr<RadosJournal> journal;
        ResumeRange range;
    };
    /// A write of the Blob's bytes `range` (within one data object, its
    /// CRC32C computed) is about to be submitted: the argument for its
    /// completion callback written(), or nullptr when the range is not
    /// journaled (the journal ended, or the range ends the Blob). Whoever
    /// gets one either passes it to librados (release()) or, when the write
    /// could not be submitted, gives it back to cancel().
    std::unique_ptr<Written> expect(const ResumeRange& range);
    void cancel(std::unique_ptr<Written> written) noexcept;
    /// librados' completion callback of a data write; `arg` is a Written.
    static void written(rados_completion_t completion, void* arg);

    /// Blocks until the callbacks of every write expect()ed have run and
    /// every append (and the record's update) has completed. On the
    /// reservation's thread, once its writes have completed: the writes'
    /// callbacks are then due at once.
    void drain() noexcept;
    /// The reservation's index record as it is now: with the client once
    /// the first append named it there. After drain().
    const std::string& record() const noexcept { return record_; }
    /// An append was made: the object may exist (the commit removes it).
    bool started() const noexcept { return started_; }  // after drain(): no callback writes it

private:
    /// One append in flight; its bytes stay where they are until it completes.
    struct Append {
        std::string bytes;
        rados::Completion done;
    };

    void completed(const ResumeRange& range, int rc) noexcept;
    /// Appends the ranges done_ holds that follow journaled_.
    void append_locked() noexcept;
    /// Collects the appends at the front that have completed.
    void reap_locked() noexcept;
    /// Submits the record update that names the client.
    void name_client_locked() noexcept;
    void stop_locked(const std::string& why) noexcept;

    rados_ioctx_t io_;
    std::string store_;
    std::string id_;
    std::string object_;
    ResumeHeader header_;
    std::string record_;
    std::string named_;  ///< record_ with the client, while its update is in flight

    std::mutex mutex_;
    std::condition_variable idle_;
    std::uint64_t journaled_;
    std::map<std::uint64_t, ResumeRange> done_;  ///< written, waiting for the ranges before them
    std::size_t callbacks_ = 0;                  ///< writes expect()ed whose callback has not run
    std::deque<Append> appends_;
    rados::Completion naming_;  ///< the update of record_ (named_)
    bool started_;
    bool stopped_ = false;
};

}  // namespace blobstreaming::detail
