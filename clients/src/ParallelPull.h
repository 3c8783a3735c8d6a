#pragma once
/// One pull over several data connections (PullOptions::streams): the range
/// is split into contiguous parts, one ticket and one data connection each.
/// Every ticket names the same committed version (checked when they are
/// issued, and by each data connection against the store's answer), so the
/// parts can never mix two versions of a Blob replaced meanwhile. Each part
/// hashes its bytes (CRC32C); the whole Blob's checksum is the parts' CRCs
/// combined (crc32c_combine) and checked once, before the destination
/// becomes visible. A part whose connection breaks (transfer failed,
/// timeout, unreachable) continues its own range on a new ticket for the
/// same version, up to kStreamRetries times.
///   control: start()                    stat, split, one ticket per part
///   loop:    on_loop_thread_open()      opens the destination, queues the parts
///   loop:    on_loop_thread_part_done() a part's outcome; a retry goes back to
///   control: on_control_thread_retry()  a ticket for the rest of one part
///   loop:    on_loop_thread_finish()    every part has ended: check, finish or abandon

#include "DataPlane.h"
#include "SessionImpl.h"

#include <blobstreaming/client/Transfer.h>
#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/common/Checksum.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::client {

/// A part whose data connection breaks continues on a new one at most this
/// many times.
constexpr unsigned kStreamRetries = 3;

/// Whether a stream that ended with `e` continues on a new connection: it
/// broke in transit (transfer failed, timeout, unreachable).
bool stream_can_continue(const std::error_code& e) noexcept;

/// The first failure of a transfer over several streams: the transfer's.
/// The streams it stops report Errc::cancelled afterwards.
struct FirstFailure {
    std::atomic<bool> failed{false};  ///< the other streams stop at their next bytes
    std::error_code error;
    std::string message;
    /// Keeps `code`/`text` when it is the first failure (a null code: none).
    void record(std::error_code code, const std::string& text)
    {
        if (!code || failed) return;
        failed = true;
        error = code;
        message = text;
    }
};

class ParallelPull : public std::enable_shared_from_this<ParallelPull> {
public:
    /// Control thread, after the store was chosen. Returns false (and
    /// leaves `done` alone) when the pull is better run on one connection:
    /// one stream asked for, a resume, a destination that takes its bytes
    /// only in order (standard output, a FIFO, a device, a descriptor, a
    /// consumer), a whole-Blob check of a SHA-256 Blob (its digest does not
    /// combine), a range shorter than two parts of kMinStreamRange, or a
    /// range the Blob does not have (the single pull reports it), or
    /// kAutoStreams choosing one (AutoStreams.h). When it returns false
    /// after asking for a ticket of the whole range to choose, that ticket
    /// goes to `*single` (when given): the single pull uses it, so that
    /// choosing costs no round trip. Throws Error (the stat failed, the
    /// Blob changed while the tickets were issued).
    static bool start(Session::Impl& session, const std::string& name, const std::string& store, const PullSink& sink,
                      const PullOptions& options, Completion& done, std::optional<Ticket>* single = nullptr);

private:
    struct Part {
        std::uint64_t offset = 0;  ///< in the Blob
        std::uint64_t length = 0;
        std::uint64_t received = 0;
        ChecksumState hash{ChecksumAlgorithm::crc32c};
        unsigned retries = 0;
    };
    class PartSink;

    ParallelPull(Session::Impl& session, std::string name, std::string store, PullSink sink, PullOptions options,
                 Completion done);
    void on_loop_thread_open(std::vector<Ticket> tickets);
    void submit(std::size_t part, const Ticket& ticket);
    void on_loop_thread_part_done(std::size_t part, const JobOutcome& outcome);
    void on_control_thread_retry(std::size_t part);
    /// Loop thread: a part ended for good with `code`/`message` (the first
    /// such failure is the pull's).
    void record_failure(std::error_code code, const std::string& message);
    void on_loop_thread_finish();

    Session::Impl& session_;
    std::string name_;
    std::string store_;
    PullSink sink_;
    PullOptions options_;
    Completion done_;
    std::string what_;  ///< `pull "N": store "S"`
    BlobInfo version_;  ///< the one every ticket names
    std::uint64_t begin_ = 0;
    std::uint64_t length_ = 0;
    bool whole_ = false;
    std::vector<Part> parts_;
    std::unique_ptr<Sink> destination_;
    std::size_t running_ = 0;  ///< parts with a transfer or a retry under way
    FirstFailure failure_;
    std::uint64_t moved_ = 0;
    std::chrono::steady_clock::time_point started_;
};

}  // namespace blobstreaming::client
