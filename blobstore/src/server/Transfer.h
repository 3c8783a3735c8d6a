#pragma once
/// One transfer on a data connection (docs/PROTOCOL.md): the small interface
/// a ServerConnection drives, the connection as a transfer sees it
/// (TransferLink), and what every kind keeps (its Request and ticket, the
/// bytes moved, its start) together with how a transfer ends (log line,
/// metrics, completion notice). The kinds are siblings: PushTransfer and
/// PartTransfer (receiving, ReceiveTransfer) and PullTransfer (sending,
/// also a Blob still being filled: its store's reader follows the fill).

#include "DataServerImpl.h"
#include "TicketRegistry.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Protocol.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace blobstreaming {
class Channel;
}

namespace blobstreaming::server {

/// What a transfer asks of its connection when one of its calls returns.
enum class Step {
    read,     ///< wait until the socket is readable, then on_readable()
    write,    ///< wait until the socket is writable, then on_writable()
    respond,  ///< send the Response queued by TransferLink::respond() or refuse()
    wait,     ///< leave the reactor until TransferLink::waker() runs (inactivity timer armed), then on_writable()
    away,     ///< off the reactor in TransferLink::run_off_reactor(): nothing to do until it comes back
    done,     ///< ended: the connection reads its next Request
    close,    ///< close the connection (the transfer has ended)
};

/// Where a connection goes once a queued Response is sent.
enum class AfterResponse {
    next_request,  ///< the transfer has ended: read the next Request
    body,          ///< on_writable() sends the body (a pull)
    /// As body, and its first bytes go at once (a file or memory, not a
    /// store's reader that may wait): the Response leaves with them in one
    /// segment (MSG_MORE), one packet and one wake-up of the client fewer.
    body_at_once,
    drain,         ///< refused: shut the write side, read to EOF, close
};

/// The connection a transfer runs on. Reactor thread only.
class TransferLink {
public:
    using Work = std::function<void()>;
    /// The continuation of run_off_reactor() on the reactor thread.
    /// `connected` false: the connection was closed meanwhile (or cannot
    /// return to the reactor); what it returns is then ignored, and a
    /// transfer that has not ended is failed ("the connection was closed").
    using Then = std::function<Step(bool connected)>;
    /// What the log lines of a round trip name: "… after `after` <blob>"
    /// when the connection cannot return to the reactor, "cannot `resuming`
    /// <blob>: …" when going on throws.
    struct OffReactor {
        const char* after;
        const char* resuming;
    };

    virtual ~TransferLink() = default;
    virtual Channel& io() noexcept = 0;
    /// "address:port" of the peer, for log lines.
    virtual const std::string& peer_name() const noexcept = 0;
    /// Bytes moved: the inactivity timeout counts from now.
    virtual void progress() noexcept = 0;
    /// Queues the encoded Response `frame` and what follows it once sent;
    /// returns Step::respond.
    virtual Step respond(const std::string& frame, AfterResponse after) = 0;
    /// A refusal (counted in the metrics): Response, then draining to close;
    /// returns Step::respond.
    virtual Step refuse(Errc status, const std::string& reason) = 0;
    /// Leaves the reactor (no events, no inactivity timer: the time is the
    /// store's, not the client's), runs `work` on the CommitPool, then
    /// `then` on the reactor thread; the connection is back in the reactor
    /// (reading) when `then(true)` runs, and acts on the Step it returns.
    /// The connection object lives until `then` has run, even when closed
    /// meanwhile. False, with nothing done and errno from the reactor, when
    /// the connection cannot leave the reactor: the caller then does the
    /// work here. Requires the data server's CommitPool.
    virtual bool run_off_reactor(const OffReactor& what, Work work, Then then) = 0;
    /// What a store's read or a followed Blob calls (any thread) when the
    /// bytes the transfer waits for (Step::wait) may have come: wakes it on
    /// the reactor thread, unless the transfer or the connection ended
    /// meanwhile or the data plane is gone.
    virtual std::function<void()> waker() = 0;
};

/// One transfer, from its consumed ticket to its end. Created by the
/// connection when a Request presents a valid ticket (counted as active from
/// then on); ended exactly once, by itself or by fail(); destroyed by the
/// connection after that (or at close). Reactor thread only, except for the
/// work a kind hands to run_off_reactor().
class Transfer {
public:
    using SteadyTime = std::chrono::steady_clock::time_point;

    Transfer(DataServer::Impl& server, TransferLink& link, const protocol::Request& request, TicketBinding binding);
    virtual ~Transfer() = default;
    Transfer(const Transfer&) = delete;
    Transfer& operator=(const Transfer&) = delete;

    /// The admitted Request: claims what the ticket names and begins.
    virtual Step start() = 0;
    /// The socket is readable (Step::read).
    virtual Step on_readable() { return Step::read; }
    /// The socket is writable (Step::write, a Response with
    /// AfterResponse::body or body_at_once sent, or woken after Step::wait).
    virtual Step on_writable() { return Step::write; }

    /// Abandons the transfer: what it holds is parked for a resume or let go
    /// as `status` says, the transfer ends failed with `reason`, and a push
    /// tells the peer when `tell_peer` (best effort, never blocking).
    void fail(Errc status, const std::string& reason, bool tell_peer);

    bool ended() const noexcept { return ended_; }
    /// Cancelled on the control plane (TransferControl::cancelled).
    bool cancelled() const noexcept { return binding_.control && binding_.control->cancelled; }
    const TicketBinding& binding() const noexcept { return binding_; }
    /// Bytes received (push) or sent (pull) so far.
    std::uint64_t bytes_done() const noexcept { return body_done_; }

protected:
    /// fail()'s part of each kind: park or let go what the transfer holds.
    virtual void abandon(Errc status) = 0;
    /// Ends the transfer (once): active count, metrics, the log line, the
    /// ticket's completion notice.
    void end(bool succeeded, const std::string& reason);
    /// end()'s logfmt line (docs/DEPLOYMENT.md, "Logs").
    void log_line(bool succeeded, const std::string& reason, double seconds) const;
    /// The finished transfer's `bytes` over its time, published as the
    /// daemon's last transfer throughput.
    void record_throughput(std::uint64_t bytes) noexcept;

    DataServer::Impl& server_;
    TransferLink& link_;
    const protocol::Request request_;
    TicketBinding binding_;
    std::uint64_t body_done_ = 0;
    SteadyTime started_;
    /// Compression on the wire (CompressedBody.cpp): the body went as
    /// frames, of `wire_bytes_` bytes; the log line says so.
    bool compressed_ = false;
    std::uint64_t wire_bytes_ = 0;

private:
    bool ended_ = false;
};

}  // namespace blobstreaming::server
