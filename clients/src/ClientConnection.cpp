#include "ClientConnection.h"
#include "UserCallback.h"

#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace blobstreaming::client {

namespace {

constexpr std::size_t kSendChunk = 1 << 20;
constexpr auto kProgressInterval = std::chrono::milliseconds(20);

double seconds_since(std::chrono::steady_clock::time_point t)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

ClientConnection::ClientConnection(EventLoop& loop, std::string endpoint, const SocketOptions& options,
                                   Released released, const TlsContext* tls)
    : loop_(loop), endpoint_(std::move(endpoint)), options_(options), released_(std::move(released)), tls_(tls)
{}

ClientConnection::~ClientConnection()
{
    if (io_) io_->close_notify();
    io_.reset();
    if (fd_) loop_.unwatch(fd_.get());
}

void ClientConnection::failed_io(const char* how, int err)
{
    if (io_ && io_->tls() && err == EPROTO)
        fail(Errc::transfer_failed, lost_message(how) + ": " + io_->error_text(err));
    else fail(Errc::transfer_failed, lost_message(how));
}

std::string ClientConnection::lost_message(const char* how) const
{
    return job_->what + ": data connection to " + endpoint_ + " " + how + " after " + std::to_string(done_bytes_) +
           " of " + std::to_string(total_) + " bytes";
}

void ClientConnection::start(std::unique_ptr<TransferJob> job)
{
    job_ = std::move(job);
    out_.assign(protocol::kRequestSize, '\0');
    protocol::Request request;
    request.type = job_->type;
    std::copy(job_->ticket.id.begin(), job_->ticket.id.end(), request.ticket.begin());
    request.offset = job_->ticket.offset;
    request.length = job_->ticket.length;
    protocol::encode(request, reinterpret_cast<std::uint8_t(&)[protocol::kRequestSize]>(out_[0]));
    out_pos_ = 0;
    header_pos_ = 0;
    message_.clear();
    message_size_ = 0;
    hash_.reset(job_->prefix_hash ? std::move(*job_->prefix_hash) : ChecksumState(job_->ticket.checksum));
    total_ = job_->ticket.length;
    if (job_->type == protocol::FrameType::push && job_->source->stable() && total_ >= HashPipeline::kBackgroundFrom)
        hash_.run_in_background();
    done_bytes_ = 0;
    started_ = std::chrono::steady_clock::now();
    last_report_ = started_;
    touch();

    if (fd_) {
        phase_ = Phase::request;
        try {
            advance_send();
        } catch (const Error& e) {  // the source failed (e.g. a producer)
            fail(e.code(), e.what());
        }
        return;
    }
    // First job: connect.
    const auto colon = endpoint_.rfind(':');
    const std::string host = endpoint_.substr(0, colon);
    const std::string port = endpoint_.substr(colon + 1);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
    if (rc != 0) {
        fail(Errc::unreachable, job_->what + ": cannot resolve data endpoint " + endpoint_ + ": " + gai_strerror(rc));
        return;
    }
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
    fd_.reset(::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd_) {
        fail(Errc::unreachable, job_->what + ": cannot create a socket: " + std::strerror(errno));
        return;
    }
    apply_socket_options(fd_.get(), options_, endpoint_);
    phase_ = Phase::connecting;
    if (::connect(fd_.get(), found->ai_addr, found->ai_addrlen) != 0 && errno != EINPROGRESS) {
        const int err = errno;
        fail(Errc::unreachable,
             job_->what + ": cannot connect to data endpoint " + endpoint_ + ": " + std::strerror(err));
        return;
    }
    loop_.watch(fd_.get(), POLLOUT, [this](short revents) { on_event(revents); });
}

void ClientConnection::update_interest()
{
    short events = POLLIN;
    if (phase_ == Phase::connecting || phase_ == Phase::request || phase_ == Phase::body || phase_ == Phase::trailer)
        events = static_cast<short>(POLLOUT | POLLIN);
    loop_.modify(fd_.get(), events);
}

void ClientConnection::on_event(short revents)
{
    try {
        if (phase_ == Phase::connecting) {
            int err = 0;
            socklen_t len = sizeof err;
            ::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
            if (err != 0) {
                fail(Errc::unreachable,
                     job_->what + ": cannot connect to data endpoint " + endpoint_ + ": " + std::strerror(err));
                return;
            }
            on_connected();
            return;
        }
        if (phase_ == Phase::handshake) {
            advance_handshake();
            return;
        }
        if (phase_ == Phase::idle) {
            // The store closed an idle connection (or sent garbage): drop it.
            // TLS: a record without application data is not a close.
            const long n = io_->probe();
            if (n == 0 || (n < 0 && errno != EAGAIN) || (revents & (POLLERR | POLLHUP))) {
                phase_ = Phase::closed;
                released_(this, false);
            }
            return;
        }
        const bool sending = phase_ == Phase::request || phase_ == Phase::body || phase_ == Phase::trailer;
        if (sending && (revents & POLLIN)) {
            // The store answers before the end of a push: a refusal. Read it.
            phase_ = Phase::response;
        }
        if (phase_ == Phase::request || phase_ == Phase::body || phase_ == Phase::trailer) advance_send();
        else advance_receive();
    } catch (const Error& e) {
        fail(e.code(), e.what());
    }
}

void ClientConnection::on_connected()
{
    touch();
    if (tls_) {
        io_ = std::make_unique<Channel>(fd_.get(), *tls_, endpoint_.substr(0, endpoint_.rfind(':')));
        phase_ = Phase::handshake;
        advance_handshake();
        return;
    }
    io_ = std::make_unique<Channel>(fd_.get());
    phase_ = Phase::request;
    advance_send();  // Error: caught by on_event
}

void ClientConnection::advance_handshake()
{
    switch (io_->handshake()) {
    case Channel::Handshake::want_read: loop_.modify(fd_.get(), POLLIN); return;
    case Channel::Handshake::want_write: loop_.modify(fd_.get(), POLLOUT); return;
    case Channel::Handshake::failed:
        fail(Errc::unreachable,
             job_->what + ": TLS handshake with data endpoint " + endpoint_ + " failed: " + io_->handshake_error());
        return;
    case Channel::Handshake::done: break;
    }
    touch();
    phase_ = Phase::request;
    advance_send();
}

bool ClientConnection::send_pending()
{
    while (out_pos_ < out_.size()) {
        const long n = io_->write(out_.data() + out_pos_, out_.size() - out_pos_);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
            if (errno == EINTR) continue;
            phase_ = Phase::response;  // perhaps the store said why
            advance_receive();
            return false;
        }
        out_pos_ += static_cast<std::size_t>(n);
        touch();
    }
    return true;
}

void ClientConnection::advance_send()
{
    if (phase_ == Phase::request) {
        if (!send_pending()) return update_interest();
        phase_ = job_->type == protocol::FrameType::push ? Phase::body : Phase::response;
    }
    if (phase_ == Phase::body) {
        while (done_bytes_ < total_) {
            const long n = job_->source->send(*io_, kSendChunk, hash_);
            if (n == 0) {
                report_progress(false);
                return update_interest();
            }
            if (n < 0) {
                phase_ = Phase::response;  // the store may have answered why
                advance_receive();
                return;
            }
            done_bytes_ += static_cast<std::uint64_t>(n);
            touch();
        }
        report_progress(true);
        out_.assign(protocol::kTrailerSize, '\0');
        protocol::encode(protocol::Trailer{hash_.finish()},
                         reinterpret_cast<std::uint8_t(&)[protocol::kTrailerSize]>(out_[0]));
        out_pos_ = 0;
        phase_ = Phase::trailer;
    }
    if (phase_ == Phase::trailer) {
        if (!send_pending()) return update_interest();
        phase_ = Phase::response;
    }
    update_interest();
}

void ClientConnection::advance_receive()
{
    for (;;) {
        if (phase_ == Phase::response) {
            const long n = io_->read(header_ + header_pos_, sizeof header_ - header_pos_);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                failed_io("closed", n == 0 ? 0 : errno);
                return;
            }
            if (n < 0) return update_interest();
            header_pos_ += static_cast<std::size_t>(n);
            touch();
            if (header_pos_ < sizeof header_) continue;
            std::string why;
            if (auto ec = protocol::decode(header_, response_, message_size_, why)) {
                fail(Errc::protocol_error,
                     job_->what + ": bad response on data connection to " + endpoint_ + ": " + why);
                return;
            }
            phase_ = Phase::message;
        }
        if (phase_ == Phase::message) {
            while (message_.size() < message_size_) {
                char buf[protocol::kMaxMessageSize];
                const long n = io_->read(buf, message_size_ - message_.size());
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                    failed_io("closed", n == 0 ? 0 : errno);
                    return;
                }
                if (n < 0) return update_interest();
                message_.append(buf, static_cast<std::size_t>(n));
            }
            response_.message = message_;
            handle_response();
            return;
        }
        if (phase_ == Phase::pull_body) {
            while (done_bytes_ < total_) {
                auto [data, room] = job_->sink->window();
                const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(room, total_ - done_bytes_));
                const long n = io_->read(data, want);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                    failed_io("closed", n == 0 ? 0 : errno);
                    return;
                }
                if (n < 0) {
                    report_progress(false);
                    return update_interest();
                }
                if (job_->verify) hash_.update(data, static_cast<std::size_t>(n));
                job_->sink->commit(static_cast<std::size_t>(n));
                done_bytes_ += static_cast<std::uint64_t>(n);
                touch();
            }
            report_progress(true);
            // Checked before the sink finishes: a mismatch abandons the
            // output (a file this pull created is removed), never shows it.
            if (job_->verify) {
                const Checksum received = hash_.finish();
                if (received != *response_.checksum) {
                    const std::string kept = job_->ticket.offset == 0
                                                 ? std::string()
                                                 : " together with the " + std::to_string(job_->ticket.offset) +
                                                       " bytes the file already held (not a copy of this Blob?)";
                    fail(Errc::digest_mismatch, job_->what + ": the " + std::to_string(total_) + " bytes received" +
                                                    kept + " have checksum " + received.text() + ", not the Blob's " +
                                                    response_.checksum->text() + "; nothing was kept");
                    return;
                }
            }
            job_->sink->finish();
            complete(true);
            return;
        }
        return;
    }
}

void ClientConnection::handle_response()
{
    if (response_.status != Errc::ok) {
        const std::string text =
            response_.message.empty() ? std::string("refused without a reason") : response_.message;
        fail(response_.status, job_->what + ": " + text);
        return;
    }
    if (job_->type == protocol::FrameType::push) {
        if (phase_ != Phase::message || done_bytes_ < total_) {
            fail(Errc::protocol_error, job_->what + ": store acknowledged before all bytes were sent");
            return;
        }
        complete(true);
        return;
    }
    if (response_.length != job_->ticket.length) {
        fail(Errc::protocol_error, job_->what + ": the store announced " + std::to_string(response_.length) +
                                       " bytes, the ticket " + std::to_string(job_->ticket.length));
        return;
    }
    if (!response_.checksum || response_.checksum->algorithm != hash_.algorithm()) {
        fail(Errc::protocol_error,
             job_->what + ": the store's answer carries " +
                 (response_.checksum ? "a " + std::string(to_string(response_.checksum->algorithm)) + " checksum"
                                     : std::string("no checksum")) +
                 ", the ticket names " + std::string(to_string(hash_.algorithm())));
        return;
    }
    if (const auto& version = job_->ticket.version;
        version && (response_.blob_size != version->size || *response_.checksum != version->checksum)) {
        fail(Errc::blob_changed, job_->what + ": the store announced a version of " +
                                     std::to_string(response_.blob_size) + " bytes with checksum " +
                                     response_.checksum->text() + ", not the version of the ticket (" +
                                     describe_version(*version) + ")");
        return;
    }
    const bool reaches_end = job_->ticket.offset + total_ == response_.blob_size;
    if (job_->whole && !reaches_end) {
        fail(Errc::protocol_error, job_->what + ": a whole-Blob pull was answered with bytes [" +
                                       std::to_string(job_->ticket.offset) + ", " +
                                       std::to_string(job_->ticket.offset + total_) + ") of a Blob of " +
                                       std::to_string(response_.blob_size) + " bytes");
        return;
    }
    job_->sink->open(total_);
    // The whole Blob's checksum is checked for a whole-Blob pull, and for a
    // range that happens to cover the Blob (from byte 0, or after the bytes
    // a resumed pull hashed).
    const std::uint64_t hashed_before = job_->prefix_hash ? job_->ticket.offset : 0;
    job_->verify = job_->verify && (job_->whole || (job_->ticket.offset == hashed_before && reaches_end));
    if (job_->verify && job_->sink->stable() && total_ >= HashPipeline::kBackgroundFrom) hash_.run_in_background();
    phase_ = Phase::pull_body;
    advance_receive();
}

void ClientConnection::report_progress(bool force)
{
    if (!job_->progress) return;
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_report_ < kProgressInterval) return;
    last_report_ = now;
    call_user("progress callback", job_->what, job_->progress, done_bytes_, total_);
}

void ClientConnection::complete(bool reusable)
{
    hash_.stop();  // a no-op: finish() has waited for the helper
    JobOutcome outcome;
    outcome.response = response_;
    outcome.bytes = done_bytes_;
    outcome.seconds = seconds_since(started_);
    auto job = std::move(job_);
    phase_ = reusable ? Phase::idle : Phase::closed;
    if (reusable) loop_.modify(fd_.get(), POLLIN);
    job->done(std::move(outcome));
    released_(this, reusable);
}

void ClientConnection::fail(Errc code, const std::string& message)
{
    if (!job_) return;
    hash_.stop();  // before the source or sink (perhaps the caller's buffer) goes
    JobOutcome outcome;
    outcome.error = make_error_code(code);
    outcome.message = message;
    outcome.bytes = done_bytes_;
    outcome.seconds = seconds_since(started_);
    if (job_->sink) job_->sink->abandon();
    auto job = std::move(job_);
    phase_ = Phase::closed;
    io_.reset();
    if (fd_) {
        loop_.unwatch(fd_.get());
        fd_.reset();
    }
    job->done(std::move(outcome));
    released_(this, false);
}

void ClientConnection::check_progress(std::chrono::steady_clock::time_point now, std::chrono::milliseconds limit)
{
    if (!job_ || now - last_progress_ < limit) return;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3f", static_cast<double>(limit.count()) / 1000.0);
    fail(Errc::timeout, job_->what + ": no progress for " + seconds + " s on data connection to " + endpoint_ + " (" +
                            std::to_string(done_bytes_) + " of " + std::to_string(total_) + " bytes)");
}

}  // namespace blobstreaming::client
