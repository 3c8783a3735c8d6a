#pragma once
/// One data connection of a blobstored: the ACE handler on the reactor
/// thread that frames Requests and Responses and runs a series of transfers
/// (docs/PROTOCOL.md), each one a Transfer of its kind.

#include "DataServerImpl.h"
#include "Transfer.h"

#include <blobstreaming/transporter/DataIo.h>
#include <blobstreaming/transporter/Protocol.h>
#include <blobstreaming/transporter/Tls.h>

#include <ace/SOCK_Stream.h>
#include <ace/Svc_Handler.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace blobstreaming::server {

/// Life cycle (ACE): the acceptor creates it and calls open(), which makes
/// the socket non-blocking, applies the socket options, does the TLS
/// handshake and registers for input. handle_input() reads a Request,
/// consumes its ticket (issued to this TLS client) and hands the transfer
/// to its kind (PushTransfer, PartTransfer, PullTransfer),
/// which asks for the socket as it needs it (Step); the connection sends
/// the Responses the transfer queues and reads the next Request after it,
/// or drains and closes after a refusal. All I/O goes through the data
/// plane's I/O layer (DataIo.h), as the client's does. handle_timeout()
/// abandons a transfer without progress for its inactivity timeout, and
/// closes a connection that presented no valid Request within the
/// handshake timeout of being accepted or sat idle between transfers for
/// the idle timeout (docs/PROTOCOL.md, "Connections"). Work that waits for
/// the disk or another host runs on the data server's CommitPool with the
/// connection out of the reactor (run_off_reactor()). handle_close() fails
/// whatever transfer is open (nothing partial becomes visible) and deletes
/// the object, or leaves that to the CommitPool's completion when one is
/// due. All member functions run on the reactor thread, except that
/// DataServer::stop() calls handle_close() after that thread has ended.
///
/// Every failure is the client's or the network's and ends this connection
/// only: nothing here throws into the reactor.
class ServerConnection final : public ACE_Svc_Handler<ACE_SOCK_Stream, ACE_NULL_SYNCH>, private TransferLink {
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
    /// The phases of docs/PROTOCOL.md a connection goes through; `draining`
    /// is the store's own.
    enum class Phase {
        handshake,  ///< TLS handshake (TLS only; before the first Request)
        request,    ///< reading a Request (idle between transfers)
        receiving,  ///< the transfer reads (a push's body and trailer)
        away,       ///< off the reactor in run_off_reactor() (no events, no timer)
        response,   ///< sending a Response (a push's outcome, a refusal, a pull's header)
        sending,    ///< the transfer writes (a pull's bytes), or waits off the reactor to be woken
        draining,   ///< refused: write side shut, reading to EOF before closing
    };
    using SteadyTime = std::chrono::steady_clock::time_point;

    // TransferLink
    Channel& io() noexcept override { return *io_; }
    const std::string& peer_name() const noexcept override { return peer_; }
    void progress() noexcept override;
    Step respond(const std::string& frame, AfterResponse after) override;
    Step refuse(Errc status, const std::string& reason) override;
    bool run_off_reactor(const OffReactor& what, Work work, Then then) override;
    std::function<void()> waker() override;

    int continue_handshake();
    int read_request();
    int on_request();
    /// A named request (ServerConnectionNamed.cpp): its header, then its
    /// name, then the admission (NamedAdmission; off the reactor when the
    /// store's reads may wait) and the transfer of the ticket it issued, as
    /// for a presented one.
    int on_named_request();
    /// Back from the admission: the transfer, or the Response that refuses it.
    struct NamedJob;
    Step on_admitted(NamedJob& job, bool connected);
    /// Starts the transfer of `request`, whose ticket has `binding`.
    int start_transfer(const protocol::Request& request, TicketBinding binding);
    /// Does what the transfer's `step` asks.
    int act(Step step);
    /// Sends what the Response has left, then goes on as it says.
    int continue_sending();
    /// The completion of run_off_reactor(): back in the reactor, `then`,
    /// and what it asks; or, closed meanwhile, the end of the transfer and
    /// of the object.
    void come_back(const OffReactor& what, const Then& then) noexcept;
    /// Back in the reactor (reading); false (logged) when it cannot be.
    bool rejoin_reactor(const char* after) noexcept;
    /// Step::wait: out of the reactor until waker() runs on_wake().
    int wait_off_reactor();
    /// On the reactor thread, when what the transfer waits for may have come.
    void on_wake() noexcept;
    /// The ended transfer is let go; its wakers find nothing.
    void drop_transfer() noexcept;
    bool in_transfer() const noexcept { return transfer_ && !transfer_->ended(); }
    int next_request();
    int start_draining();
    int drain_input();
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
    /// A CommitPool job refers to this connection (run_off_reactor()): the
    /// object outlives a close until the job's completion (come_back()).
    bool away_ = false;

    /// The Request being read (a named request: its header, then its name).
    FrameReader request_frame_{protocol::kRequestSize + protocol::kMaxNamedName};
    bool named_header_in_ = false;  ///< request_frame_ now waits for a named request's name
    protocol::NamedRequest named_;  ///< its decoded header
    OutputBuffer out_;                                   ///< the Response being sent
    AfterResponse after_ = AfterResponse::next_request;

    /// The transfer of the last valid Request, until the next Request, a
    /// drain or the close.
    std::unique_ptr<Transfer> transfer_;
    /// What a wake-up finds: this connection, or nullptr once it is closed
    /// or its transfer has been let go (reactor thread only).
    struct WakeToken {
        ServerConnection* connection;
    };
    std::shared_ptr<WakeToken> wake_token_;
    bool waiting_ = false;  ///< off the reactor until woken (Step::wait)

    SteadyTime last_progress_{};
    long timer_id_ = -1;
    SteadyTime timer_at_{};  ///< when the armed timer fires
    ACE_Reactor_Mask mask_ = ACE_Event_Handler::READ_MASK;
    std::uint64_t drained_ = 0;
};

}  // namespace blobstreaming::server
