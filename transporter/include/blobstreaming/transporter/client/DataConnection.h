#pragma once
/// One TCP data connection to a store's data port, driven by the EventLoop:
/// a non-blocking state machine that runs one transfer at a time
/// (docs/PROTOCOL.md) and can be reused for the next. All its I/O goes
/// through the data plane's I/O layer (DataIo.h), as the store's does.

#include <blobstreaming/transporter/client/EventLoop.h>
#include <blobstreaming/transporter/client/Streams.h>
#include <blobstreaming/transporter/client/Ticket.h>

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/DataIo.h>
#include <blobstreaming/transporter/Protocol.h>
#include <blobstreaming/transporter/SocketOptions.h>
#include <blobstreaming/transporter/Tls.h>
#include <blobstreaming/transporter/WireCompression.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

namespace blobstreaming::dataplane {

/// How a transfer on a data connection ended.
struct JobOutcome {
    std::error_code error;
    std::string message;
    protocol::Response response;  ///< valid when !error
    std::uint64_t bytes = 0;      ///< payload bytes moved
    double seconds = 0;
    /// What the store's Response said of named requests on this connection
    /// (docs/PROTOCOL.md, "Named requests"); nullopt when no Response came.
    std::optional<protocol::Advertisement> advertised;
    /// Compression on the wire: the body went as frames (of `wire_bytes`
    /// bytes, headers included) rather than raw.
    bool compressed = false;
    std::uint64_t wire_bytes = 0;
};

/// One push or pull on a data connection.
struct TransferJob {
    protocol::FrameType type = protocol::FrameType::pull;
    Ticket ticket;
    std::string what;                ///< message prefix: `push "N": store "S"`
    std::unique_ptr<Source> source;  ///< push
    std::unique_ptr<Sink> sink;      ///< pull
    bool verify = false;             ///< pull: compare the whole-Blob checksum
    /// Pull: the whole Blob was asked for (offset 0, length 0; or resumed
    /// with `prefix_hash`): the store must deliver all of the ticket's
    /// version, and with `verify` its checksum is checked whatever the
    /// lengths.
    bool whole = false;
    /// Resuming: the checksum state (the ticket's algorithm) of the Blob's
    /// bytes [0, ticket.offset) that need not move again (push: the store
    /// has them; pull: the file has them). The trailer (push) or the check
    /// (pull) then covers the whole Blob.
    std::optional<ChecksumState> prefix_hash;
    /// Compression on the wire (WireCompression.h): `automatic` is none
    /// towards a loopback address; a push of unknown length is never
    /// compressed (the caller refuses `zstd` for it).
    wire::CompressMode compress = wire::CompressMode::none;
    /// Called on the loop thread about every 20 ms while bytes move, and
    /// once at the end: (bytes moved, bytes of the range). What it throws
    /// fails the transfer (an Error with its own code; wrap a callback
    /// that may throw anything else).
    std::function<void(std::uint64_t done, std::uint64_t total)> progress;
    /// Runs once on the loop thread.
    std::function<void(JobOutcome)> done;
    /// Set: the transfer names its Blob instead of presenting `ticket.id`
    /// (only on a connection that advertised named requests; the pool
    /// picks one). `ticket` then holds the endpoint, offset 0, the push's
    /// size and checksum or the pull's range (length 0: to the end); the
    /// Response fills in a pull's length and version.
    std::optional<protocol::NamedRequest> named;
};

class DataConnection {
public:
    /// Told when the connection can take another job or must be dropped.
    using Released = std::function<void(DataConnection*, bool reusable)>;

    /// Starts a non-blocking connect to `endpoint`, then runs `first`.
    /// `tls` (may be null: plain TCP) must outlive the connection; the
    /// store's certificate must then verify against its CA and name the
    /// endpoint's host.
    DataConnection(EventLoop& loop, std::string endpoint, const SocketOptions& options, Released released,
                     const TlsContext* tls = nullptr);
    ~DataConnection();
    DataConnection(const DataConnection&) = delete;
    DataConnection& operator=(const DataConnection&) = delete;

    const std::string& endpoint() const noexcept { return endpoint_; }
    bool busy() const noexcept { return job_ != nullptr; }
    /// Failed or dropped: the pool discards it.
    bool closed() const noexcept { return phase_ == Phase::closed; }
    /// The store's last Response on this connection advertised named requests.
    bool accepts_named() const noexcept { return advertised_ && advertised_->named_requests; }
    /// Runs `job`; the connection must be idle.
    void start(std::unique_ptr<TransferJob> job);
    /// Runs `job` on the calling thread and returns once its `done` has run
    /// there: the same steps as start(), waiting for the socket with poll(2)
    /// instead of the event loop; nothing moving for `limit` fails it with
    /// Errc::timeout. For a connection ConnectionPool::lease() handed out
    /// (idle, connected, not watched by the loop, no other thread near it);
    /// a failure leaves it closed() but its descriptor open until the loop
    /// discards it.
    void run_here(std::unique_ptr<TransferJob> job, std::chrono::milliseconds limit);
    /// An idle connection: whether its store still holds it open (a peek at
    /// the socket); false leaves it closed(). Idle connections are not
    /// watched by the loop (any thread may lease them): this is how a
    /// store's close is seen before the connection is used again.
    bool still_open();
    /// Loop thread: an idle connection leaves the loop (no job follows at
    /// once), so that a caller may lease it; still_open() sees the store's
    /// close before the next use.
    void park();
    /// Fails the running job with Errc::timeout when nothing moved for `limit`.
    void check_progress(std::chrono::steady_clock::time_point now, std::chrono::milliseconds limit);
    /// Fails the running job with `code` and drops the connection.
    void fail(Errc code, const std::string& message);

private:
    /// One state machine: each phase is one step below, run() moves from
    /// phase to phase as far as the socket allows. The phases of
    /// docs/PROTOCOL.md are named as the store's (ServerConnection) are;
    /// `connecting`, `idle` and `closed` are the client's own.
    enum class Phase {
        connecting,    ///< the non-blocking connect of the first job
        handshake,     ///< TLS handshake (TLS only; before the first Request)
        request,       ///< sending the Request
        push_body,     ///< sending the push's bytes from the source
        push_trailer,  ///< sending the push's trailer (the Blob's checksum)
        response,      ///< reading the Response (header, then its message)
        pull_body,     ///< receiving the pull's bytes into the sink
        idle,          ///< between jobs: not watched by the loop (still_open() before the next)
        closed,        ///< failed or dropped: the pool discards it
    };
    /// What a step leaves to run(): go on with the (new) phase, wait for the
    /// socket, or stop (the job ended: complete() or fail() ran, and the
    /// pool may already have given this connection its next job).
    enum class Step { next, wait, stop };

    void open_socket();
    void on_event(short revents);
    /// Runs the steps, turning an Error (the source or sink failed) into fail().
    void drive();
    void run();
    Step finish_connect();
    Step step_handshake();
    /// request, push_trailer: drains out_, then goes to `then`.
    Step send_queued(Phase then);
    Step send_push_body();
    Step read_response();
    Step on_response();
    Step read_pull_body();
    /// The push's trailer, queued after the body.
    void queue_trailer();
    /// A named pull's Response: its length and version become the job's
    /// ticket's; false (and the job failed) when it does not fit the request.
    bool take_named_answer();
    /// A pull that covers the whole Blob: its bytes against the announced
    /// checksum; false (and the job failed) when they differ.
    bool pull_checksum_matches();
    short interest() const noexcept;
    /// Loop thread: the loop watches the socket for `events` (again, after idle).
    void watch(short events);
    /// fail() for a lost connection (`how`: "closed"), with the TLS reason.
    Step lost(const char* how, const IoResult& result);
    Step failed(Errc code, const std::string& message);
    void complete(bool reusable);
    void touch() noexcept { last_progress_ = std::chrono::steady_clock::now(); }
    void report_progress(bool force);
    std::string lost_message(const char* how) const;

    // Compression on the wire (DataConnectionFrames.cpp).
    /// Whether this job's body goes as frames (push) or is asked for as
    /// frames (pull).
    bool wants_frames();
    /// push_body of a compressed push: the source's bytes encoded into
    /// frames, at most one frame ahead of the socket; a frame the policy
    /// leaves raw goes from the source as an uncompressed push's bytes.
    Step send_push_frames();
    /// pull_body of a pull the store answered with frames.
    Step read_pull_frames();
    bool frames_ = false;                        ///< this job's body is frames
    std::optional<bool> loopback_;               ///< the endpoint is a loopback address
    std::unique_ptr<wire::FrameEncoder> encoder_;
    std::unique_ptr<wire::FrameDecoder> decoder_;
    std::optional<wire::CompressionPolicy> policy_;
    std::uint64_t wire_bytes_ = 0;
    std::size_t raw_left_ = 0;  ///< bytes of the raw frame under way still to send

    EventLoop& loop_;
    std::string endpoint_;
    SocketOptions options_;
    Released released_;
    UniqueFd fd_;
    bool watched_ = false;  ///< the loop watches fd_ (never while idle or run_here())
    bool here_ = false;     ///< run_here() drives the running job
    const TlsContext* tls_;
    std::unique_ptr<Channel> io_;
    Phase phase_ = Phase::connecting;
    std::unique_ptr<TransferJob> job_;
    OutputBuffer out_;                                                           ///< the Request, then a push's trailer
    FrameReader in_{protocol::kResponseHeaderSize + protocol::kMaxMessageSize};  ///< the Response
    bool header_in_ = false;  ///< the Response's header is decoded, in_ now waits for its message
    protocol::Response response_;
    std::optional<protocol::Advertisement> advertised_;  ///< of the last Response header
    bool answered_ = false;                              ///< the running job's Response header came
    HashPipeline hash_;  ///< after job_: stopped before the job's buffers go
    std::uint64_t total_ = 0;
    std::uint64_t done_bytes_ = 0;
    std::chrono::steady_clock::time_point started_;
    std::chrono::steady_clock::time_point last_progress_;
    std::chrono::steady_clock::time_point last_report_;
};

}  // namespace blobstreaming::dataplane
