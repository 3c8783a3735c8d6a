#pragma once
/// One data connection of a blobstored: a small state machine on the reactor
/// thread that serves a series of transfers (docs/PROTOCOL.md).

#include "DataServerImpl.h"
#include "TicketRegistry.h"

#include <blobstreaming/blobstore/BlobRange.h>
#include <blobstreaming/blobstore/Reservation.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/DataIo.h>
#include <blobstreaming/transporter/Protocol.h>
#include <blobstreaming/transporter/Tls.h>

#include <ace/SOCK_Stream.h>
#include <ace/Svc_Handler.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::server {

/// Life cycle (ACE): the acceptor creates it and calls open(), which makes
/// the socket non-blocking, applies the socket options and registers for
/// input. handle_input() frames Requests and receives push bytes straight
/// into the reservation's window; handle_output() sends Responses and pull
/// bytes (sendfile for file-backed Blobs; under TLS SSL_write from the
/// Blob's mapping, sendfile cannot encrypt; a streamed Blob through a
/// bounded buffer its store's reader fills); all of it through the data
/// plane's I/O layer (DataIo.h), as the client does; handle_timeout() abandons a
/// transfer without progress for its inactivity timeout, and closes a
/// connection that presented no valid Request within the handshake timeout
/// of being accepted or sat idle between transfers for the idle timeout
/// (docs/PROTOCOL.md, "Connections"). A commit that waits for the disk
/// runs on the data server's CommitPool meanwhile, the connection out of
/// the reactor (neither read nor timed); its outcome comes back through
/// on_committed()
/// on the reactor thread. handle_close()
/// aborts whatever is open (nothing partial becomes visible) and deletes the
/// object. All member functions run on the reactor thread, except that
/// DataServer::stop() calls handle_close() after that thread has ended.
///
/// Every failure is the client's or the network's and ends this connection
/// only: nothing here throws into the reactor.
class ServerConnection : public ACE_Svc_Handler<ACE_SOCK_Stream, ACE_NULL_SYNCH> {
public:
    /// `peer_ip`: the peer's address, the key of the per-peer cap. The
    /// DataAcceptor admitted the connection; open() counts it as
    /// unauthenticated until its first valid ticket.
    ServerConnection(DataServer::Impl* server, std::string peer_ip);
    ~ServerConnection() override;

    int open(void* acceptor) override;
    int handle_input(ACE_HANDLE handle) override;
    int handle_output(ACE_HANDLE handle) override;
    int handle_timeout(const ACE_Time_Value& now, const void* act) override;
    int handle_close(ACE_HANDLE handle, ACE_Reactor_Mask mask) override;

    /// DataServer::stop(): abandons the transfer in progress (a push is
    /// aborted and told so when possible) and closes; deletes the object.
    void shutdown_now() noexcept;
    /// The acceptor needs this unauthenticated connection's slot for a new
    /// one from `newcomer`: closes it (deletes the object).
    void evict(const std::string& newcomer) noexcept;

private:
    using Base = ACE_Svc_Handler<ACE_SOCK_Stream, ACE_NULL_SYNCH>;
    /// The phases of docs/PROTOCOL.md a connection goes through, named as
    /// the client's (ClientConnection) are; `draining` is the store's own.
    enum class Phase {
        handshake,     ///< TLS handshake (TLS only; before the first Request)
        request,       ///< reading a Request (idle between transfers)
        push_body,     ///< receiving push bytes into the reservation
        push_trailer,  ///< reading the push's trailer (the Blob's checksum)
        committing,    ///< the store commits on a CommitPool thread (no events, no timer)
        opening,       ///< the store opens a pull's range on a CommitPool thread (no events, no timer)
        storing,       ///< a push waits for the store's writes in flight on a CommitPool thread (no events, no timer)
        response,      ///< sending a Response (a push's outcome, a refusal, a pull's header)
        pull_body,     ///< sending a pull's bytes
        draining,      ///< refused: write side shut, reading to EOF before closing
    };
    /// Where a connection goes once its Response is sent.
    enum class Then { next_request, pull_body, drain };
    /// `wait`: a followed Blob (BlobInFlight) has no more bytes yet; the
    /// connection leaves the reactor until they land.
    enum class Pump { done, again, wait, failed };
    /// What fill_follow() did.
    enum class Fill { ready, wait, switched, failed };
    using SteadyTime = std::chrono::steady_clock::time_point;

    int continue_handshake();
    int read_request();
    int on_request();
    /// The admitted push: claims its reservation where the ticket left it.
    int start_push();
    /// The admitted pull: its Response, then the bytes.
    int start_pull();
    /// start_pull() for a store whose read() waits on another host
    /// (Store::read_waits()): the range is opened on the CommitPool while
    /// the connection is away from the reactor, then on_opened().
    int open_pull_away();
    /// The CommitPool's completion of open_pull_away(): answers the pull,
    /// or when the connection was closed meanwhile ends the transfer and
    /// deletes the object.
    void on_opened(BlobRange range, const std::optional<Error>& error) noexcept;
    /// Back on the reactor (reading) after work on the CommitPool, "after
    /// `after` the Blob" in the log line when that fails; false then: the
    /// connection is closed and deleted.
    bool rejoin_reactor(const char* after) noexcept;
    /// The completion of an open or a wait for the store, away from the
    /// reactor: ends the transfer and deletes the object when the
    /// connection was closed meanwhile, else rejoin_reactor() and the
    /// inactivity timer again. False when the object is gone.
    bool come_back(const char* after) noexcept;
    /// The pull's Response once range_ is open, then its bytes.
    int answer_pull();
    /// The pull's refusal: its Response, then the next Request.
    int refuse_pull(const Error& e);
    /// The pull's range from exactly the version its ticket names;
    /// Error(blob_changed) when the Blob was replaced or removed since.
    BlobRange read_ticket_version();
    int read_push_body();
    int read_trailer();
    int finish_push();
    /// A part of a reservation filled in parts (TicketBinding::part): the
    /// ledger takes the range once its trailer matches; nothing commits.
    int start_part();
    int finish_part();
    /// The part connection ends: its bytes go to the ledger (`keep`), or
    /// the whole reservation is aborted.
    void end_part(bool keep) noexcept;
    /// How a push's commit ended.
    struct CommitOutcome {
        bool ok = false;
        BlobInfo info;                      ///< ok
        Errc code = Errc::transfer_failed;  ///< !ok
        std::string message;                ///< !ok
    };
    /// Commits `r` against `expected` (any thread); a failed commit aborts it.
    static CommitOutcome commit_reservation(Reservation& r, const Checksum& expected) noexcept;
    /// The next window() of the push's reservation would wait for the
    /// store's writes in flight (a RadosStore's): the wait runs on the
    /// CommitPool while the connection is away from the reactor, and
    /// on_store_ready() goes on receiving. False (nothing done) when the
    /// connection cannot leave the reactor: the window() then waits here.
    bool wait_store_away();
    /// fail_transfer() for a reservation whose suspend or abort waits for
    /// another host (Reservation::ending_waits()): done on the CommitPool,
    /// then parked for a resume (`keep`) or released.
    void end_reservation_away(bool keep);
    void on_store_ready() noexcept;
    /// The push's commit on the CommitPool: the connection leaves the reactor meanwhile.
    int start_commit(const Checksum& expected);
    /// The CommitPool's completion of start_commit(): answers the client, or
    /// when the connection was closed meanwhile only records the outcome
    /// and deletes the object.
    void on_committed(const CommitOutcome& outcome) noexcept;
    /// Ends the push with `outcome` (reservation slot, log, completion
    /// notice) and returns the Response that tells the client.
    protocol::Response record_push(const CommitOutcome& outcome);
    int drain_input();
    /// Sends `frame` (an encoded Response), then goes on as `then` says.
    int send_response(const std::string& frame, Then then);
    /// Sends what the phase (response, pull_body) has left.
    int continue_sending();
    Pump send_pull_body();
    /// A streamed pull (BlobRange::reader()): refills stream_ from the
    /// store once it is sent, without waiting for the store (the bytes on
    /// their way: Fill::wait).
    Fill fill_stream();
    /// A followed pull: refills stream_ from the BlobInFlight; switched: it
    /// was committed meanwhile and range_ is now the committed Blob's.
    Fill fill_follow();
    /// What wakes this connection when it waits off the reactor (a followed
    /// Blob's bytes landed, a store's read completed): on_wake() on the
    /// reactor thread, through the CommitPool, unless closed meanwhile (or
    /// the data plane gone: then nothing).
    std::function<void()> waker();
    /// Leaves the reactor until waker() runs (the inactivity timer stays
    /// armed).
    int wait_off_reactor();
    /// On the reactor thread, when what the pull waits for may have come.
    void on_wake() noexcept;
    /// The pull's range and stream buffer are let go; a reader whose store
    /// still has a read on its way (BlobReader::close_waits()) on the
    /// CommitPool, which waits for that read off the reactor.
    void release_range() noexcept;
    int finish_pull();
    int next_request();
    int start_draining();
    int refuse(Errc status, const std::string& reason);
    void end_transfer(bool succeeded, const std::string& reason);
    struct Throughput {
        double seconds;
        double mbps;  ///< 10^6 bytes/s
    };
    /// The finished transfer's `bytes` over its time since started_,
    /// published as the daemon's last transfer throughput.
    Throughput record_throughput(std::uint64_t bytes) noexcept;
    void fail_transfer(Errc status, const std::string& reason, bool tell_peer);
    void progress() noexcept;
    /// When the connection is closed (or its transfer abandoned) unless
    /// something happens first, and which limit sets that time.
    struct Deadline {
        SteadyTime at;
        enum class Kind { inactivity, handshake, idle } kind;
    };
    Deadline deadline() const noexcept;
    void arm_timer();
    void disarm_timer();
    void authenticate() noexcept;
    bool set_mask(ACE_Reactor_Mask mask);
    std::chrono::milliseconds timeout() const noexcept;

    DataServer::Impl* server_;
    std::string peer_ip_;
    std::string peer_ = "unknown peer";
    /// Presented a valid ticket once: no longer under the handshake deadline
    /// nor counted by the caps on unauthenticated connections.
    bool authenticated_ = false;
    SteadyTime accepted_{};
    std::unique_ptr<Channel> io_;  ///< plain or TLS, over the socket
    std::string subject_;          ///< TLS: the client certificate's subject
    Phase phase_ = Phase::request;
    bool closed_ = false;
    /// A CommitPool job refers to this connection (its push's commit, its
    /// pull's open, a wait for the store's writes): the object outlives a
    /// close until the job's completion (on_committed(), on_opened(),
    /// on_store_ready()).
    bool away_ = false;

    /// The Request or the trailer being read.
    FrameReader frame_{std::max(protocol::kRequestSize, protocol::kTrailerSize)};
    OutputBuffer out_;  ///< the Response being sent
    Then then_ = Then::next_request;

    // The transfer in progress (valid from a consumed ticket to its end).
    bool in_transfer_ = false;
    protocol::Request request_{};
    TicketBinding binding_;
    std::unique_ptr<Reservation> reservation_;  ///< push
    std::shared_ptr<Reservation> part_;         ///< push of a part: shared with the other parts' connections
    std::uint32_t part_crc_ = 0;                ///< CRC32C of the part's bytes received so far
    BlobRange range_;                           ///< pull
    /// A streamed pull's bytes read from the store, [stream_at_, stream_end_)
    /// not sent yet; allocated for a streamed pull only.
    std::vector<std::uint8_t> stream_;
    std::size_t stream_at_ = 0;
    std::size_t stream_end_ = 0;
    /// A pull following a Blob still being received (TicketBinding::follow).
    std::shared_ptr<BlobInFlight> follow_;
    /// What a wake-up finds: this connection, or nullptr once it is closed
    /// or its pull has ended (reactor thread only).
    struct WakeToken {
        ServerConnection* connection;
    };
    std::shared_ptr<WakeToken> wake_token_;
    bool waiting_ = false;         ///< off the reactor until woken
    std::uint64_t body_done_ = 0;  ///< bytes received (push) or sent (pull)
    SteadyTime started_{};

    SteadyTime last_progress_{};
    long timer_id_ = -1;
    SteadyTime timer_at_{};  ///< when the armed timer fires
    ACE_Reactor_Mask mask_ = ACE_Event_Handler::READ_MASK;
    std::uint64_t drained_ = 0;
};

}  // namespace blobstreaming::server
