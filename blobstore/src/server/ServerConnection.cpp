/// ServerConnection's life cycle and framing: accept (socket options, TLS
/// handshake), a Request and the ticket checks that admit it (consumed,
/// issued to this TLS client), the transfer of its kind, Responses,
/// refusal and draining, close. The deadlines are in
/// ServerConnectionTimers.cpp, the trips off the reactor in
/// ServerConnectionAway.cpp; each kind of transfer in its own class.
#include "ServerConnection.h"

#include "DataPath.h"
#include "NamedAdmission.h"
#include "PartTransfer.h"
#include "PullTransfer.h"
#include "PushTransfer.h"

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
    request_frame_.expect(protocol::kRequestSize);
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
    case Phase::receiving: return act(transfer_->on_readable());
    case Phase::draining: return drain_input();
    case Phase::response:
    case Phase::sending:
    case Phase::away: return 0;  // input is masked while sending, and away from the reactor
    }
    return 0;
}

int ServerConnection::read_request()
{
    const IoResult r = request_frame_.fill(*io_);
    if (r.bytes() > 0) {
        progress();
        arm_timer();
    }
    if (r.done()) return on_request();
    if (r.blocked()) return 0;
    if (r.eof()) {
        if (request_frame_.got() == 0) spdlog::debug("data connection {}: closed by the peer", peer_);
        else
            spdlog::warn("data connection {}: closed by the peer after {} of {} bytes of a Request", peer_,
                         request_frame_.got(), protocol::kRequestSize);
        return -1;
    }
    spdlog::warn("data connection {}: receive failed while waiting for a Request: {}", peer_, r.text());
    return -1;
}

int ServerConnection::on_request()
{
    if (protocol::is_named(request_frame_.first<protocol::kRequestSize>())) return on_named_request();
    protocol::Request request;
    std::string why;
    const std::error_code bad = protocol::decode(request_frame_.first<protocol::kRequestSize>(), request, why);
    request_frame_.expect(protocol::kRequestSize);  // taken: nothing of a next Request is in yet
    if (bad) {
        spdlog::warn("data connection {}: protocol error: {}", peer_, why);
        return act(refuse(Errc::protocol_error, why));
    }
    TicketBinding binding;
    try {
        binding = server_->tickets.consume(request);
    } catch (const Error& e) {
        spdlog::warn("data connection {}: refused: {}", peer_, e.what());
        return act(refuse(e.code(), e.what()));
    }
    if (server_->config.tls && binding.client != subject_) {
        const std::string denied = "permission denied: ticket " + protocol::ticket_tag(request.ticket) +
                                   "... was issued to client \"" + binding.client + "\", not to \"" + subject_ + "\"";
        spdlog::warn("data connection {}: refused: {}", peer_, denied);
        return act(refuse(Errc::refused, denied));
    }
    return start_transfer(request, std::move(binding));
}

int ServerConnection::start_transfer(const protocol::Request& request, TicketBinding binding)
{
    authenticate();
    drop_transfer();
    DataServer::Impl& server = *server_;
    TransferLink& link = *this;
    if (request.type == protocol::FrameType::push) {
        if (binding.part) transfer_ = std::make_unique<PartTransfer>(server, link, request, std::move(binding));
        else transfer_ = std::make_unique<PushTransfer>(server, link, request, std::move(binding));
    } else {
        transfer_ = std::make_unique<PullTransfer>(server, link, request, std::move(binding));
    }
    progress();
    arm_timer();
    return act(transfer_->start());
}

int ServerConnection::act(Step step)
{
    switch (step) {
    case Step::read: phase_ = Phase::receiving; return set_mask(ACE_Event_Handler::READ_MASK) ? 0 : -1;
    case Step::write: phase_ = Phase::sending; return set_mask(ACE_Event_Handler::WRITE_MASK) ? 0 : -1;
    case Step::respond: return continue_sending();
    case Step::wait: return wait_off_reactor();
    case Step::away: return 0;
    case Step::done: return next_request();
    case Step::close: break;
    }
    return -1;
}

Step ServerConnection::respond(const std::string& frame, AfterResponse after)
{
    if (authenticated_) {
        // Every Response of a connection that presented a valid ticket says
        // whether it takes named requests (docs/PROTOCOL.md, "Named requests").
        protocol::Advertisement what;
        if (const NamedAdmission* named = server_->named.load()) {
            what.named_requests = true;
            what.default_checksum = named->default_checksum();
        }
        std::string advertised = frame;
        protocol::advertise(advertised, what);
        out_.append(advertised);
    } else {
        out_.append(frame);
    }
    after_ = after;
    phase_ = Phase::response;
    return Step::respond;
}

int ServerConnection::continue_sending()
{
    if (phase_ == Phase::response) {
        const IoResult r = out_.drain(*io_, after_ == AfterResponse::body_at_once);
        if (r.bytes() > 0) progress();
        if (r.blocked()) return set_mask(ACE_Event_Handler::WRITE_MASK) ? 0 : -1;
        if (!r.done()) {
            const std::string why = "cannot send the Response: " + r.text();
            if (in_transfer()) transfer_->fail(Errc::transfer_failed, why, false);
            else spdlog::warn("data connection {}: {}", peer_, why);
            return -1;
        }
        switch (after_) {
        case AfterResponse::next_request: return next_request();
        case AfterResponse::drain: return start_draining();
        case AfterResponse::body:
        case AfterResponse::body_at_once: phase_ = Phase::sending; break;
        }
    }
    return act(transfer_->on_writable());
}

int ServerConnection::next_request()
{
    drop_transfer();
    phase_ = Phase::request;
    request_frame_.expect(protocol::kRequestSize);
    arm_timer();  // now for the idle timeout
    if (!set_mask(ACE_Event_Handler::READ_MASK)) return -1;
    return io_->pending() > 0 ? handle_input(get_handle()) : 0;
}

int ServerConnection::start_draining()
{
    drop_transfer();
    // Shut our side and read to EOF: closing with unread bytes (the body
    // of a refused push) would reset the connection and could destroy
    // the Response before the peer reads it. TLS: close_notify first.
    io_->close_notify();
    peer().close_writer();
    phase_ = Phase::draining;
    drained_ = 0;
    progress();
    arm_timer();
    return set_mask(ACE_Event_Handler::READ_MASK) ? 0 : -1;
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

Step ServerConnection::refuse(Errc status, const std::string& reason)
{
    server_->metrics.request_refused();
    protocol::Response response;
    response.status = status;
    response.message = reason;
    return respond(protocol::encode(response), AfterResponse::drain);
}

int ServerConnection::handle_output(ACE_HANDLE)
{
    if (closed_) return -1;
    switch (phase_) {
    case Phase::handshake: return continue_handshake();
    case Phase::response:
    case Phase::sending: return continue_sending();
    case Phase::request:
    case Phase::receiving:
    case Phase::away:
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
void ServerConnection::drop_transfer() noexcept
{
    if (wake_token_) wake_token_->connection = nullptr;
    wake_token_.reset();
    waiting_ = false;
    transfer_.reset();
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
    if (in_transfer()) transfer_->fail(Errc::cancelled, "the store is shutting down", true);
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
    // Work off the reactor goes on: a commit's outcome stands, a pull being
    // opened or a push waiting for the store's writes ends in come_back(): a
    // pool thread uses their state.
    if (in_transfer() && !away_) transfer_->fail(Errc::transfer_failed, "the connection was closed", false);
    if (wake_token_) wake_token_->connection = nullptr;  // a followed fetch's wake-up finds nothing
    if (!away_) drop_transfer();
    disarm_timer();
    if (io_ && phase_ != Phase::draining) io_->close_notify();
    io_.reset();
    if (server_->connections.erase(this)) server_->metrics.connection_closed();
    server_->limits.remove(this);
    spdlog::debug("data connection {}: closed", peer_);
    if (away_) {
        // The CommitPool's completion still refers to this object (which
        // left the reactor): close the socket now, delete in the
        // completion.
        peer().close();
        return 0;
    }
    return Base::handle_close(handle, mask);  // deletes this
}
}  // namespace blobstreaming::server
