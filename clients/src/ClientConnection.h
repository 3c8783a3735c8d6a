#pragma once
/// One TCP data connection to a store's data port, driven by the EventLoop:
/// a non-blocking state machine that runs one transfer at a time
/// (docs/PROTOCOL.md) and can be reused for the next.

#include "EventLoop.h"
#include "Streams.h"
#include "Ticket.h"

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/Protocol.h>
#include <blobstreaming/transporter/SocketOptions.h>
#include <blobstreaming/transporter/Tls.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

namespace blobstreaming::client {

/// How a transfer on a data connection ended.
struct JobOutcome {
    std::error_code error;
    std::string message;
    protocol::Response response;  ///< valid when !error
    std::uint64_t bytes = 0;      ///< payload bytes moved
    double seconds = 0;
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
    Progress progress;
    /// Runs once on the loop thread.
    std::function<void(JobOutcome)> done;
};

class ClientConnection {
public:
    /// Told when the connection can take another job or must be dropped.
    using Released = std::function<void(ClientConnection*, bool reusable)>;

    /// Starts a non-blocking connect to `endpoint`, then runs `first`.
    /// `tls` (may be null: plain TCP) must outlive the connection; the
    /// store's certificate must then verify against its CA and name the
    /// endpoint's host.
    ClientConnection(EventLoop& loop, std::string endpoint, const SocketOptions& options, Released released,
                     const TlsContext* tls = nullptr);
    ~ClientConnection();
    ClientConnection(const ClientConnection&) = delete;
    ClientConnection& operator=(const ClientConnection&) = delete;

    const std::string& endpoint() const noexcept { return endpoint_; }
    bool busy() const noexcept { return job_ != nullptr; }
    /// Runs `job`; the connection must be idle.
    void start(std::unique_ptr<TransferJob> job);
    /// Fails the running job with Errc::timeout when nothing moved for `limit`.
    void check_progress(std::chrono::steady_clock::time_point now, std::chrono::milliseconds limit);
    /// Fails the running job with `code` and drops the connection.
    void fail(Errc code, const std::string& message);

private:
    enum class Phase { connecting, handshake, request, body, trailer, response, message, pull_body, idle, closed };

    void on_event(short revents);
    void on_connected();
    void advance_handshake();
    void failed_io(const char* how, int err);
    bool send_pending();  // false: would block or failed
    void advance_send();
    void advance_receive();
    void handle_response();
    void complete(bool reusable);
    void touch() noexcept { last_progress_ = std::chrono::steady_clock::now(); }
    void report_progress(bool force);
    std::string lost_message(const char* how) const;
    void update_interest();

    EventLoop& loop_;
    std::string endpoint_;
    SocketOptions options_;
    Released released_;
    UniqueFd fd_;
    const TlsContext* tls_;
    std::unique_ptr<Channel> io_;
    Phase phase_ = Phase::connecting;
    std::unique_ptr<TransferJob> job_;
    std::string out_;
    std::size_t out_pos_ = 0;
    std::uint8_t header_[protocol::kResponseHeaderSize] = {};
    std::size_t header_pos_ = 0;
    std::string message_;
    std::size_t message_size_ = 0;
    protocol::Response response_;
    HashPipeline hash_;  ///< after job_: stopped before the job's buffers go
    std::uint64_t total_ = 0;
    std::uint64_t done_bytes_ = 0;
    std::chrono::steady_clock::time_point started_;
    std::chrono::steady_clock::time_point last_progress_;
    std::chrono::steady_clock::time_point last_report_;
};

}  // namespace blobstreaming::client
