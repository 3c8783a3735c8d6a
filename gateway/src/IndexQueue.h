#pragma once
/// The study index entries of the instances blob-dicomd stored, written on a
/// thread of their own (docs/DICOM.md, "How a modality connects"): an association answers its
/// C-STORE once the store has the instance durably and goes on receiving
/// the next one while the entry is written. The entries are written in the
/// order they were queued. An entry lost to a crash before it is written is
/// made by the indexer's rescan at the next start (EventIndexer), from the
/// stored Blob.
///
/// Thread-safe: any thread queues and waits; the writer thread runs each
/// entry's `written` callback.

#include "dicom/StudyIndex.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace blobstreaming::dicom {

class IndexQueue {
public:
    /// Entries queued and not yet written at most: a slow index (a remote
    /// PostgreSQL) holds the associations back rather than the memory growing.
    static constexpr std::size_t kMaxQueued = 256;

    /// `written(conflict, error, seconds)`: after the entry's put(), on the
    /// writer thread: put()'s conflict text ("" when none), the Error's text
    /// when put() threw ("" when it did not), the seconds put() took. It
    /// must not throw.
    using Written = std::function<void(const std::string& conflict, const std::string& error, double seconds)>;

    explicit IndexQueue(StudyIndex& index);
    /// As drain() without a bound, then stops the writer.
    ~IndexQueue();
    IndexQueue(const IndexQueue&) = delete;
    IndexQueue& operator=(const IndexQueue&) = delete;

    /// Queues `record`; waits while kMaxQueued entries are queued.
    void push(InstanceRecord record, Written written);

    /// Waits until every entry queued before the call is written (the
    /// caller's C-FIND, Storage Commitment or release then sees them).
    void wait_written();

    /// Waits at most `bound` for every queued entry to be written; whether
    /// they were (a stopping gateway writes what it acknowledged).
    bool drain(std::chrono::milliseconds bound);

private:
    struct Entry {
        InstanceRecord record;
        Written written;
    };
    void run() noexcept;

    StudyIndex& index_;
    std::mutex mutex_;
    std::condition_variable queued_cv_;   ///< an entry was queued, or stopping
    std::condition_variable written_cv_;  ///< an entry was written (room, waiters)
    std::deque<Entry> entries_;
    std::uint64_t queued_ = 0;   ///< entries queued so far
    std::uint64_t written_ = 0;  ///< entries written so far (in order)
    bool stopping_ = false;
    std::thread writer_;
};

}  // namespace blobstreaming::dicom
