#pragma once
/// One push over several data connections (PushOptions::streams). The store
/// reserves the Blob for filling in parts (BlobTransporter::reserveParts,
/// always CRC32C); the Blob is split into contiguous parts, one ticket
/// (recvPart) and one data connection each, all at once. Each connection
/// sends its part's bytes and their CRC32C; the store checks it and keeps
/// the part. When every part is acknowledged, the client combines the parts'
/// CRCs (crc32c_combine) into the whole Blob's and commits on the control
/// plane (BlobStore::commit): the store combines its own and commits only if
/// they agree. Nothing is visible before. A part whose connection breaks
/// (transfer failed, timeout, unreachable) asks for its part again: the
/// ticket starts past what the store holds of it, and the client hashes the
/// bytes it skips from its source; up to kStreamRetries times. So does a
/// part the store refuses as invalid_range: a ticket issued before an
/// earlier connection of the part reached the store (through a slow path)
/// and landed bytes, or while that connection still receives. Any other
/// failure aborts the reservation.
///   control: start()                    reserve, split, one ticket per part
///   loop:    on_loop_thread_open()      queues the parts
///   loop:    on_loop_thread_part_done() a part's outcome; a retry goes back to
///   control: on_control_thread_retry()  a ticket for the rest of one part
///   control: on_control_thread_commit() every part is in: commit (or abort)
#include "DataPlane.h"
#include "ParallelPull.h"  // kStreamRetries
#include "SessionImpl.h"

#include <blobstreaming/client/Transfer.h>
#include <blobstreaming/common/BlobInfo.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace blobstreaming::client {

class ParallelPush : public std::enable_shared_from_this<ParallelPush> {
public:
    /// Control thread, after the store was chosen and the source opened
    /// (`size` bytes). Returns false (and leaves `done` alone) when the push
    /// is better run on one connection: one stream asked for, a resume, a
    /// source that produces its bytes in order (a producer, standard input),
    /// a SHA-256 checksum asked for (its digest does not combine), or fewer
    /// bytes than two parts of kMinStreamRange. Throws Error (the
    /// reservation or a ticket was refused; the reservation is then aborted).
    static bool start(Session::Impl& session, const PushSource& source, const std::string& name,
                      const std::string& store, std::uint64_t size, const PushOptions& options, Completion& done);

private:
    struct Part {
        std::uint64_t offset = 0;  ///< in the Blob
        std::uint64_t length = 0;
        /// The part's first bytes the store holds from earlier connections
        /// ([offset, offset + head)), and their CRC32C (hashed from the source).
        std::uint64_t head = 0;
        std::uint32_t head_crc = 0;
        std::uint32_t crc = 0;  ///< the whole part's, once acknowledged
        std::uint64_t sent = 0;
        unsigned retries = 0;
    };
    class PartSource;

    ParallelPush(Session::Impl& session, PushSource source, std::string name, std::string store, PushOptions options);
    void on_loop_thread_open(std::vector<Ticket> tickets);
    void submit(std::size_t part, const Ticket& ticket);
    void on_loop_thread_part_done(std::size_t part, const Ticket& ticket, const JobOutcome& outcome);
    /// A part that ended with `e` is asked for again (see above).
    static bool part_can_continue(const std::error_code& e) noexcept;
    void on_control_thread_retry(std::size_t part);
    /// Loop thread: a part ended for good with `code`/`message` (the first
    /// such failure is the push's).
    void record_failure(std::error_code code, const std::string& message);
    void part_finished();
    void on_control_thread_end();

    Session::Impl& session_;
    PushSource source_;
    std::string name_;
    std::string store_;
    PushOptions options_;
    Completion done_;
    std::string what_;  ///< `push "N": store "S"`
    std::uint64_t size_ = 0;
    std::uint64_t reservation_ = 0;
    std::vector<Part> parts_;
    std::size_t running_ = 0;  ///< parts with a transfer or a retry under way
    FirstFailure failure_;
    std::chrono::steady_clock::time_point started_;
};

}  // namespace blobstreaming::client
