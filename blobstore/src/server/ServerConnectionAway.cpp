/// ServerConnection away from the reactor: a round trip to the CommitPool
/// (run_off_reactor()), and a transfer that waits for bytes on their way
/// (Step::wait) until its waker runs.
#include "ServerConnection.h"

#include "CommitPool.h"

#include <blobstreaming/common/BlobName.h>

#include <ace/Reactor.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

namespace blobstreaming::server {

bool ServerConnection::run_off_reactor(const OffReactor& what, Work work, Then then)
{
    // Removed, not masked: an epoll registration without events still
    // reports a reset, and ACE re-arms a handler after its upcall unless it
    // is gone. No input is due meanwhile (a peer's close is seen once the
    // connection is back), and no timer: the inactivity timeout measures
    // the client, not the store.
    if (reactor()->remove_handler(this, ACE_Event_Handler::ALL_EVENTS_MASK | ACE_Event_Handler::DONT_CALL) == -1)
        return false;
    mask_ = ACE_Event_Handler::NULL_MASK;
    disarm_timer();
    phase_ = Phase::away;
    away_ = true;
    server_->commits->submit(std::move(work), [this, what, then = std::move(then)] { come_back(what, then); });
    return true;
}

void ServerConnection::come_back(const OffReactor& what, const Then& then) noexcept
{
    away_ = false;
    const bool connected = !closed_ && rejoin_reactor(what.after);
    const std::string blob = transfer_ ? transfer_->binding().blob : std::string();
    int rc = -1;
    try {
        const Step step = then(connected);
        if (connected) {
            arm_timer();
            rc = act(step);
        }
    } catch (const std::exception& e) {
        spdlog::warn("data connection {}: cannot {} {}: {}", peer_, what.resuming, quote_name(blob), e.what());
    }
    if (closed_) {
        // handle_close() kept the object and left the transfer to end here.
        if (in_transfer()) transfer_->fail(Errc::transfer_failed, "the connection was closed", false);
        drop_transfer();
        Base::handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);  // deletes this
        return;
    }
    if (rc == -1) handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);  // deletes this
}

bool ServerConnection::rejoin_reactor(const char* after) noexcept
{
    progress();
    if (reactor()->register_handler(this, ACE_Event_Handler::READ_MASK) == -1) {
        spdlog::warn("data connection {}: cannot return to the reactor after {} {} ({}): closed", peer_, after,
                     quote_name(transfer_ ? transfer_->binding().blob : std::string()), std::strerror(errno));
        return false;
    }
    mask_ = ACE_Event_Handler::READ_MASK;
    return true;
}

std::function<void()> ServerConnection::waker()
{
    if (!wake_token_) wake_token_ = std::make_shared<WakeToken>(WakeToken{this});
    // A store's read or a fetch may complete after the data plane is gone
    // (the daemon stopping): the waker then finds no pool and does nothing.
    return [pool = std::weak_ptr<CommitPool>(server_->commits), token = wake_token_] {
        if (const std::shared_ptr<CommitPool> alive = pool.lock()) {
            alive->wake([token] {
                if (token->connection) token->connection->on_wake();
            });
        }
    };
}

int ServerConnection::wait_off_reactor()
{
    // Out of the reactor, as for run_off_reactor(): an epoll registration
    // without events would still report a reset. The inactivity timer
    // stays: a fetch or a store read that stalls ends the pull. The wake-up
    // cannot come before this returns: it runs on this (the reactor) thread.
    if (reactor()->remove_handler(this, ACE_Event_Handler::ALL_EVENTS_MASK | ACE_Event_Handler::DONT_CALL) == -1) {
        transfer_->fail(Errc::transfer_failed,
                        std::string("cannot leave the reactor to wait for the store: ") + std::strerror(errno), false);
        return -1;
    }
    mask_ = ACE_Event_Handler::NULL_MASK;
    waiting_ = true;
    return 0;
}

void ServerConnection::on_wake() noexcept
{
    if (closed_ || !waiting_) return;
    waiting_ = false;
    if (reactor()->register_handler(this, ACE_Event_Handler::WRITE_MASK) == -1) {
        spdlog::warn("data connection {}: cannot return to the reactor: {}", peer_, std::strerror(errno));
        if (in_transfer()) transfer_->fail(Errc::transfer_failed, "cannot return to the reactor", false);
        handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);
        return;
    }
    mask_ = ACE_Event_Handler::WRITE_MASK;
}

}  // namespace blobstreaming::server
