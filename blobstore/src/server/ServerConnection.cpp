/// ServerConnection's life cycle and the front of every transfer: accept
/// (socket options, TLS handshake), framing a Request, the ticket checks
/// that admit it (consumed, issued to this TLS client, the push's
/// reservation where the ticket left it), refusal and draining, close.
/// The push receive path, the send path and the timers are in
/// ServerConnectionPush.cpp, ServerConnectionSend.cpp and
/// ServerConnectionTimers.cpp; the state machine is in ServerConnection.h.
#include "ServerConnection.h"

#include "DataPath.h"
#include "ReservationTable.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/SocketOptions.h>

#include <ace/INET_Addr.h>
#include <ace/Reactor.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include <netinet/in.h>

namespace blobstreaming::server {

using data_path::kMaxDrain;

// The data server's reactor from the start: ACE_Svc_Handler's default is
// ACE_Reactor::instance(), a select() reactor created on first use whose
// notification pipe aborts the process (FD_SET past FD_SETSIZE) once the
// daemon holds more than 1024 descriptors.
ServerConnection::ServerConnection(DataServer::Impl* server, std::string peer_ip)
    : Base(nullptr, nullptr, server ? server->reactor.get() : nullptr), server_(server), peer_ip_(std::move(peer_ip))
{
    frame_.expect(protocol::kRequestSize);
}

ServerConnection::~ServerConnection() = default;

int ServerConnection::open(void* acceptor)
{
    ACE_INET_Addr addr;
    if (peer().get_remote_addr(addr) == 0) {
        char host[INET6_ADDRSTRLEN + 1] = {};
        if (addr.get_host_addr(host, sizeof host) != nullptr)
            peer_ = std::string(host) + ":" + std::to_string(addr.get_port_number());
    }
    if (peer().enable(ACE_NONBLOCK) == -1) {
        spdlog::warn("data connection {}: cannot make the socket non-blocking: {}", peer_, std::strerror(errno));
        return -1;
    }
    apply_socket_options(get_handle(), server_->config.socket, peer_);
    try {
        if (server_->config.tls) {
            io_ = std::make_unique<Channel>(get_handle(), *server_->config.tls);
            phase_ = Phase::handshake;
        } else {
            io_ = std::make_unique<Channel>(get_handle());
        }
    } catch (const Error& e) {
        spdlog::warn("data connection {}: {}", peer_, e.what());
        return -1;
    }
    server_->connections.insert(this);
    server_->metrics.connection_opened();
    server_->limits.add(this, peer_ip_);
    spdlog::debug("data connection {}: accepted", peer_);
    if (Base::open(acceptor) == -1) {
        spdlog::warn("data connection {}: cannot register with the reactor: {}", peer_, std::strerror(errno));
        return -1;
    }
    // Whatever the client does, it has the handshake timeout to present a
    // valid Request: the timer runs from now on, plain TCP or TLS.
    accepted_ = std::chrono::steady_clock::now();
    progress();
    arm_timer();
    return phase_ == Phase::handshake ? continue_handshake() : 0;
}

int ServerConnection::continue_handshake()
{
    switch (io_->handshake()) {
    case Channel::Handshake::want_read: return set_mask(ACE_Event_Handler::READ_MASK) ? 0 : -1;
    case Channel::Handshake::want_write: return set_mask(ACE_Event_Handler::WRITE_MASK) ? 0 : -1;
    case Channel::Handshake::failed:
        spdlog::warn("data connection {}: TLS handshake failed: {}", peer_, io_->handshake_error());
        server_->metrics.tls_handshake_failed();
        return -1;
    case Channel::Handshake::done: break;
    }
    subject_ = io_->peer_subject();
    spdlog::debug("data connection {}: TLS established with \"{}\"", peer_, subject_);
    phase_ = Phase::request;  // the handshake deadline still runs
    if (!set_mask(ACE_Event_Handler::READ_MASK)) return -1;
    return io_->pending() > 0 ? handle_input(get_handle()) : 0;
}

int ServerConnection::handle_input(ACE_HANDLE)
{
    if (closed_) return -1;
    switch (phase_) {
    case Phase::handshake: return continue_handshake();
    case Phase::request: return read_request();
    case Phase::push_body: return read_push_body();
    case Phase::push_trailer: return read_trailer();
    case Phase::draining: return drain_input();
    case Phase::response:
    case Phase::pull_body:
    case Phase::committing:
    case Phase::opening: return 0;  // input is masked while sending, committing or opening
    }
    return 0;
}

int ServerConnection::read_request()
{
    const IoResult r = frame_.fill(*io_);
    if (r.bytes() > 0) {
        progress();
        arm_timer();
    }
    if (r.done()) return on_request();
    if (r.blocked()) return 0;
    if (r.eof()) {
        if (frame_.got() == 0) spdlog::debug("data connection {}: closed by the peer", peer_);
        else
            spdlog::warn("data connection {}: closed by the peer after {} of {} bytes of a Request", peer_,
                         frame_.got(), protocol::kRequestSize);
        return -1;
    }
    spdlog::warn("data connection {}: receive failed while waiting for a Request: {}", peer_, r.text());
    return -1;
}

int ServerConnection::on_request()
{
    protocol::Request request;
    std::string why;
    const std::error_code bad = protocol::decode(frame_.first<protocol::kRequestSize>(), request, why);
    frame_.expect(protocol::kRequestSize);  // taken: nothing of a next Request is in yet
    if (bad) {
        spdlog::warn("data connection {}: protocol error: {}", peer_, why);
        return refuse(Errc::protocol_error, why);
    }
    try {
        binding_ = server_->tickets.consume(request);
    } catch (const Error& e) {
        spdlog::warn("data connection {}: refused: {}", peer_, e.what());
        return refuse(e.code(), e.what());
    }
    if (server_->config.tls && binding_.client != subject_) {
        const std::string denied = "permission denied: ticket " + protocol::ticket_tag(request.ticket) +
                                   "... was issued to client \"" + binding_.client + "\", not to \"" + subject_ + "\"";
        spdlog::warn("data connection {}: refused: {}", peer_, denied);
        return refuse(Errc::refused, denied);
    }
    authenticate();
    request_ = request;
    in_transfer_ = true;
    ++server_->active;
    body_done_ = 0;
    started_ = std::chrono::steady_clock::now();
    progress();
    arm_timer();

    return request.type == protocol::FrameType::push ? start_push() : start_pull();
}
int ServerConnection::drain_input()
{
    const IoResult r = discard(*io_, kMaxDrain + 1 - drained_);
    drained_ += r.bytes();
    if (r.bytes() > 0) progress();
    // Done: more than kMaxDrain, give up on a clean close. EOF or error: the
    // refusal is delivered, close.
    return r.blocked() ? 0 : -1;
}

int ServerConnection::refuse(Errc status, const std::string& reason)
{
    server_->metrics.request_refused();
    protocol::Response response;
    response.status = status;
    response.message = reason;
    return send_response(protocol::encode(response), Then::drain);
}

int ServerConnection::handle_output(ACE_HANDLE)
{
    if (closed_) return -1;
    switch (phase_) {
    case Phase::handshake: return continue_handshake();
    case Phase::response:
    case Phase::pull_body: return continue_sending();
    case Phase::request:
    case Phase::push_body:
    case Phase::push_trailer:
    case Phase::committing:
    case Phase::opening:
    case Phase::draining: break;
    }
    return set_mask(ACE_Event_Handler::READ_MASK) ? 0 : -1;
}

bool ServerConnection::set_mask(ACE_Reactor_Mask mask)
{
    if (mask == mask_) return true;
    if (reactor()->mask_ops(this, mask, ACE_Reactor::SET_MASK) == -1) {
        spdlog::warn("data connection {}: cannot change the reactor mask: {}", peer_, std::strerror(errno));
        return false;
    }
    mask_ = mask;
    return true;
}
void ServerConnection::authenticate() noexcept
{
    if (authenticated_) return;
    authenticated_ = true;
    server_->limits.authenticated(this);
}
void ServerConnection::shutdown_now() noexcept
{
    if (closed_) return;
    if (in_transfer_) fail_transfer(Errc::cancelled, "the store is shutting down", true);
    handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);
}

void ServerConnection::evict(const std::string& newcomer) noexcept
{
    if (closed_) return;
    if (server_->refused_log.allow())
        spdlog::warn("data connection {}: closed after {:.1f} s without a valid Request: its slot goes to a new "
                     "connection from {} ({} connections without a valid ticket, the cap)",
                     peer_, std::chrono::duration<double>(std::chrono::steady_clock::now() - accepted_).count(),
                     newcomer, server_->limits.unauthenticated());
    handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);
}

int ServerConnection::handle_close(ACE_HANDLE handle, ACE_Reactor_Mask mask)
{
    if (closed_) return 0;
    closed_ = true;
    // A commit in flight goes on: its outcome stands (on_committed()). A
    // pull being opened ends in on_opened(): the pool thread reads its ticket.
    if (in_transfer_ && !committing_ && !opening_)
        fail_transfer(Errc::transfer_failed, "the connection was closed", false);
    release_range();  // a followed fetch's wake-up finds nothing
    disarm_timer();
    if (io_ && phase_ != Phase::draining) io_->close_notify();
    io_.reset();
    if (server_->connections.erase(this)) server_->metrics.connection_closed();
    server_->limits.remove(this);
    spdlog::debug("data connection {}: closed", peer_);
    if (committing_ || opening_) {
        // The CommitPool's completion still refers to this object (which
        // left the reactor for the commit or the open): close the socket
        // now, delete in on_committed() or on_opened().
        peer().close();
        return 0;
    }
    return Base::handle_close(handle, mask);  // deletes this
}
}  // namespace blobstreaming::server
