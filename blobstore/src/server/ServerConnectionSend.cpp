/// ServerConnection's send path: a Response and, for a pull, the bytes of
/// exactly the version its ticket names (sendfile for file-backed Blobs;
/// under TLS SSL_write from the Blob's mapping, sendfile cannot encrypt; a
/// streamed Blob read by its store's reader into a bounded buffer; a Blob
/// still being received read back as it lands, BlobInFlight; the last two
/// off the reactor while the bytes are on their way); then back to reading
/// Requests, or draining after a refusal.
#include "ServerConnection.h"

#include "CommitPool.h"
#include "DataPath.h"

#include <blobstreaming/blobstore/Store.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <ace/Reactor.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace blobstreaming::server {

using data_path::bytes_of;
using data_path::kChunk;
using data_path::kDispatchBudget;
using data_path::kStreamBuffer;

int ServerConnection::start_pull()
{
    if (!binding_.follow && server_->store.read_waits()) return open_pull_away();
    try {
        if (binding_.follow && binding_.follow->receiving()) {
            // Still arriving: sent on as it lands (fill_follow()).
            follow_ = binding_.follow;
            range_ = BlobRange(follow_->expected(), request_.offset, request_.offset + request_.length, nullptr);
        } else {
            range_ = read_ticket_version();
        }
    } catch (const Error& e) {
        return refuse_pull(e);
    }
    return answer_pull();
}

int ServerConnection::open_pull_away()
{
    if (reactor()->remove_handler(this, ACE_Event_Handler::ALL_EVENTS_MASK | ACE_Event_Handler::DONT_CALL) == -1) {
        spdlog::warn("data connection {}: cannot leave the reactor to open {} ({}): opening here", peer_,
                     quote_name(binding_.blob), std::strerror(errno));
        try {
            range_ = read_ticket_version();
        } catch (const Error& e) {
            return refuse_pull(e);
        }
        return answer_pull();
    }
    mask_ = ACE_Event_Handler::NULL_MASK;
    disarm_timer();
    phase_ = Phase::opening;
    away_ = true;
    struct Job {
        BlobRange range;
        std::optional<Error> error;
    };
    auto job = std::make_shared<Job>();
    // Nothing else touches request_ and binding_ meanwhile: the connection
    // has no events and no timer, and a close leaves them to on_opened().
    server_->commits->submit(
        [this, job] {
            try {
                job->range = read_ticket_version();
            } catch (const Error& e) {
                job->error = e;
            } catch (const std::exception& e) {
                job->error = Error(Errc::io_error, e.what());
            }
        },
        [this, job] { on_opened(std::move(job->range), job->error); });
    return 0;
}

void ServerConnection::on_opened(BlobRange range, const std::optional<Error>& error) noexcept
{
    if (!come_back("opening")) return;  // closed while the store looked the Blob up: ended, deleted
    int rc = -1;
    try {
        if (error) {
            rc = refuse_pull(*error);
        } else {
            range_ = std::move(range);
            rc = answer_pull();
        }
    } catch (const std::exception& e) {
        spdlog::warn("data connection {}: cannot answer the pull of {}: {}", peer_, quote_name(binding_.blob),
                     e.what());
    }
    if (rc == -1) handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);  // deletes this
}

int ServerConnection::refuse_pull(const Error& e)
{
    release_range();
    spdlog::warn("data connection {}: pull {} failed: {}", peer_, quote_name(binding_.blob), e.what());
    end_transfer(false, e.what());
    protocol::Response response;
    response.status = e.code();
    response.message = e.what();
    return send_response(protocol::encode(response), Then::next_request);
}

int ServerConnection::answer_pull()
{
    spdlog::debug("data connection {}: pull {} [{}, +{}) (ticket {}) started, {}", peer_, quote_name(binding_.blob),
                  request_.offset, request_.length, protocol::ticket_tag(request_.ticket),
                  follow_            ? "following its fetch"
                  : range_.fd() >= 0 ? "sendfile"
                  : range_.data()    ? "from memory"
                                     : "streamed");
    protocol::Response response;
    response.length = range_.size();
    response.blob_size = range_.blob().size;
    response.checksum = range_.blob().checksum;
    return send_response(protocol::encode(response), Then::pull_body);
}

BlobRange ServerConnection::read_ticket_version()
{
    const std::uint64_t offset = request_.offset;
    const std::uint64_t length = request_.length;
    if (binding_.follow) {
        // The fetch it was issued for has ended: the version is the one
        // this store committed (its commit time, the same bytes), or none.
        if (binding_.follow->failed()) throw binding_.follow->error();
        binding_.version = binding_.follow->committed();
        binding_.follow.reset();
    }
    if (!binding_.version) return server_->store.read_at(binding_.blob, offset, length);
    const BlobInfo& want = *binding_.version;
    const std::string changed = "pull " + quote_name(binding_.blob) + ": the Blob changed since ticket " +
                                protocol::ticket_tag(request_.ticket) + "... was issued for its version of " +
                                describe_version(want);
    const auto replaced = [&](const BlobInfo& now) {
        return Error(Errc::blob_changed, changed + "; the store now holds " + describe_version(now) +
                                             "; pull again for the current version");
    };
    const Error removed(Errc::blob_changed, changed + "; it was removed since");
    BlobRange range;
    try {
        range = server_->store.read_at(binding_.blob, offset, length);
    } catch (const Error& e) {
        // The range was checked against that version when the ticket was
        // issued: a Blob that is gone or now too short was removed or replaced.
        if (e.code() == Errc::no_such_blob) throw removed;
        if (e.code() != Errc::invalid_range) throw;
        BlobInfo now;
        try {
            now = server_->store.stat(binding_.blob);
        } catch (const Error& gone) {
            if (gone.code() == Errc::no_such_blob) throw removed;
            throw;
        }
        throw replaced(now);
    }
    // The view re-read the Blob's own header: it is one version throughout.
    if (!same_version(range.blob(), want)) throw replaced(range.blob());
    return range;
}
int ServerConnection::send_response(const std::string& frame, Then then)
{
    out_.append(frame);
    then_ = then;
    phase_ = Phase::response;
    return continue_sending();
}

int ServerConnection::continue_sending()
{
    if (phase_ == Phase::response) {
        const IoResult r = out_.drain(*io_);
        if (r.bytes() > 0) progress();
        if (r.blocked()) return set_mask(ACE_Event_Handler::WRITE_MASK) ? 0 : -1;
        if (!r.done()) {
            const std::string why = "cannot send the Response: " + r.text();
            if (in_transfer_) fail_transfer(Errc::transfer_failed, why, false);
            else spdlog::warn("data connection {}: {}", peer_, why);
            return -1;
        }
        switch (then_) {
        case Then::next_request: return next_request();
        case Then::drain: return start_draining();
        case Then::pull_body: phase_ = Phase::pull_body; break;
        }
    }
    switch (send_pull_body()) {
    case Pump::failed: return -1;
    case Pump::again: return set_mask(ACE_Event_Handler::WRITE_MASK) ? 0 : -1;
    case Pump::wait: return wait_off_reactor();
    case Pump::done: break;
    }
    return finish_pull();
}

ServerConnection::Pump ServerConnection::send_pull_body()
{
    std::uint64_t budget = kDispatchBudget;
    const std::uint64_t total = range_.size();
    while (body_done_ < total) {
        if (binding_.control && binding_.control->cancelled) {
            fail_transfer(Errc::cancelled, "cancelled on the control plane after " + bytes_of(body_done_, total),
                          false);
            return Pump::failed;
        }
        if (budget == 0) return Pump::again;
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>({kChunk, total - body_done_, budget}));
        IoResult r;
        if (follow_) {
            switch (fill_follow()) {
            case Fill::failed: return Pump::failed;
            case Fill::wait: return Pump::wait;
            case Fill::switched: continue;
            case Fill::ready: break;
            }
            r = write_some(*io_, stream_.data() + stream_at_, std::min(want, stream_end_ - stream_at_));
            if (r.done()) stream_at_ += r.bytes();
        } else if (range_.fd() >= 0 && !io_->tls()) {
            r = send_file(*io_, range_.fd(), range_.file_offset() + body_done_, want);
        } else if (range_.fd() < 0 && !range_.data() && range_.reader()) {
            const Fill fill = fill_stream();
            if (fill == Fill::failed) return Pump::failed;
            if (fill == Fill::wait) return Pump::wait;
            r = write_some(*io_, stream_.data() + stream_at_, std::min(want, stream_end_ - stream_at_));
            if (r.done()) stream_at_ += r.bytes();
        } else {
            // Memory, or TLS (sendfile cannot encrypt): from the mapping.
            r = write_some(*io_, range_.data() + body_done_, want);
        }
        if (r.done()) {
            body_done_ += r.bytes();
            budget -= std::min<std::uint64_t>(budget, r.bytes());
            progress();
            continue;
        }
        if (r.blocked()) return Pump::again;
        fail_transfer(Errc::transfer_failed,
                      "send failed after " + bytes_of(body_done_, total) + ": " +
                          (r.eof() ? std::string("the Blob's file ended early") : r.text()),
                      false);
        return Pump::failed;
    }
    return Pump::done;
}

ServerConnection::Fill ServerConnection::fill_stream()
{
    if (stream_at_ < stream_end_) return Fill::ready;
    const std::uint64_t total = range_.size();
    if (stream_.empty()) stream_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kStreamBuffer, total)));
    std::error_code ec;
    bool pending = false;
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(stream_.size(), total - body_done_));
    const std::size_t n =
        range_.reader()->read_or_wait(range_.start() + body_done_, stream_.data(), want, ec, pending, waker());
    if (pending) return Fill::wait;  // the store's read is on its way: off the reactor meanwhile
    if (ec || n == 0) {
        const Errc status = ec && ec.category() == error_category() ? static_cast<Errc>(ec.value()) : Errc::io_error;
        fail_transfer(status,
                      "the store cannot deliver byte " + std::to_string(range_.start() + body_done_) + " after " +
                          bytes_of(body_done_, total) + ": " +
                          (ec ? range_.reader()->error_message() : std::string("its reader returned nothing")),
                      false);
        return Fill::failed;
    }
    stream_at_ = 0;
    stream_end_ = n;
    return Fill::ready;
}

ServerConnection::Fill ServerConnection::fill_follow()
{
    if (stream_at_ < stream_end_) return Fill::ready;
    const std::uint64_t total = range_.size();
    if (stream_.empty()) stream_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kStreamBuffer, total)));
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(stream_.size(), total - body_done_));
    const BlobInFlight::Read read = follow_->read(range_.start() + body_done_, stream_.data(), want, waker());
    switch (read.state) {
    case BlobInFlight::State::bytes:
        stream_at_ = 0;
        stream_end_ = read.bytes;
        return Fill::ready;
    case BlobInFlight::State::wait: return Fill::wait;
    case BlobInFlight::State::committed:
        // Go on from the committed Blob, where the sent bytes end.
        follow_.reset();
        stream_at_ = stream_end_ = 0;
        try {
            range_ = read_ticket_version();
        } catch (const Error& e) {
            fail_transfer(e.code(), "after " + bytes_of(body_done_, total) + ": " + e.what(), false);
            return Fill::failed;
        }
        return Fill::switched;
    case BlobInFlight::State::failed: {
        const Error e = follow_->error();
        fail_transfer(e.code(), "the fetch it followed failed after " + bytes_of(body_done_, total) + ": " + e.what(),
                      false);
        return Fill::failed;
    }
    }
    return Fill::failed;
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
    // Out of the reactor, as for a commit (ServerConnectionPush.cpp): an
    // epoll registration without events would still report a reset. The
    // inactivity timer stays: a fetch or a store read that stalls ends the
    // pull. The wake-up cannot come before this returns: it runs on this
    // (the reactor) thread.
    if (reactor()->remove_handler(this, ACE_Event_Handler::ALL_EVENTS_MASK | ACE_Event_Handler::DONT_CALL) == -1) {
        fail_transfer(Errc::transfer_failed,
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
        if (in_transfer_) fail_transfer(Errc::transfer_failed, "cannot return to the reactor", false);
        handle_close(ACE_INVALID_HANDLE, ACE_Event_Handler::ALL_EVENTS_MASK);
        return;
    }
    mask_ = ACE_Event_Handler::WRITE_MASK;
}

void ServerConnection::release_range() noexcept
{
    if (wake_token_) wake_token_->connection = nullptr;
    wake_token_.reset();
    follow_.reset();
    if (range_.reader() && range_.reader()->close_waits() && server_->commits) {
        // The store's read-ahead is still on its way (a RadosStore's: an
        // OSD that stops answering holds it up to the operation timeout):
        // the reader goes on a CommitPool thread, which waits for it there.
        try {
            auto held = std::make_shared<BlobRange>(std::move(range_));
            server_->commits->submit([held] { *held = BlobRange{}; }, [] {});
        } catch (const std::exception& e) {
            spdlog::warn("data connection {}: the reader of {} is let go here, waiting for its store: {}", peer_,
                         quote_name(binding_.blob), e.what());
        }
    }
    range_ = BlobRange{};
    std::vector<std::uint8_t>().swap(stream_);
    stream_at_ = stream_end_ = 0;
}

int ServerConnection::finish_pull()
{
    record_throughput(body_done_);
    end_transfer(true, "");
    release_range();
    return next_request();
}

int ServerConnection::start_draining()
{
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

int ServerConnection::next_request()
{
    phase_ = Phase::request;
    frame_.expect(protocol::kRequestSize);
    arm_timer();  // now for the idle timeout
    if (!set_mask(ACE_Event_Handler::READ_MASK)) return -1;
    return io_->pending() > 0 ? handle_input(get_handle()) : 0;
}

}  // namespace blobstreaming::server
