#include <blobstreaming/transporter/client/DataConnection.h>

#include <blobstreaming/common/Error.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

namespace blobstreaming::dataplane {

namespace {

constexpr std::size_t kSendChunk = 1 << 20;
constexpr auto kProgressInterval = std::chrono::milliseconds(20);

double seconds_since(std::chrono::steady_clock::time_point t)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

DataConnection::DataConnection(EventLoop& loop, std::string endpoint, const SocketOptions& options,
                                   Released released, const TlsContext* tls)
    : loop_(loop), endpoint_(std::move(endpoint)), options_(options), released_(std::move(released)), tls_(tls)
{}

DataConnection::~DataConnection()
{
    if (io_) io_->close_notify();
    io_.reset();
    if (fd_ && watched_) loop_.unwatch(fd_.get());
}

std::string DataConnection::lost_message(const char* how) const
{
    const bool streamed = job_->type == protocol::FrameType::push && job_->source->streamed();
    return job_->what + ": data connection to " + endpoint_ + " " + how + " after " + std::to_string(done_bytes_) +
           (streamed ? " bytes of a push of unknown length" : " of " + std::to_string(total_) + " bytes");
}

void DataConnection::start(std::unique_ptr<TransferJob> job)
{
    job_ = std::move(job);
    protocol::Request request;
    request.type = job_->type;
    std::copy(job_->ticket.id.begin(), job_->ticket.id.end(), request.ticket.begin());
    request.offset = job_->ticket.offset;
    request.length = job_->ticket.length;
    request.streamed = job_->type == protocol::FrameType::push && job_->source->streamed();
    // Compression on the wire: a ticket's Request only (a named request
    // carries no such flags; the operations take tickets when they compress).
    frames_ = !job_->named && wants_frames();
    request.compress = frames_;
    request.compress_auto = frames_ && job_->type == protocol::FrameType::pull &&
                            job_->compress == wire::CompressMode::automatic;
    out_.clear();
    if (job_->named) {
        out_.append(protocol::encode(*job_->named));
    } else {
        std::uint8_t frame[protocol::kRequestSize];
        protocol::encode(request, frame);
        out_.append(frame, sizeof frame);
    }
    answered_ = false;
    in_.expect(protocol::kResponseHeaderSize);
    header_in_ = false;
    hash_.reset(job_->prefix_hash ? std::move(*job_->prefix_hash) : ChecksumState(job_->ticket.checksum));
    // A push of unknown length has no total until its end (progress: 0).
    total_ = request.streamed ? 0 : job_->ticket.length;
    if (job_->type == protocol::FrameType::push && job_->source->stable() && total_ >= HashPipeline::kBackgroundFrom)
        hash_.run_in_background();
    done_bytes_ = 0;
    started_ = std::chrono::steady_clock::now();
    last_report_ = started_ - kProgressInterval;  // the first bytes are reported at once
    touch();

    if (fd_) {
        phase_ = Phase::request;
        if (!here_) watch(interest());
        drive();
        return;
    }
    open_socket();  // the first job: connect
}

void DataConnection::watch(short events)
{
    if (watched_) {
        loop_.modify(fd_.get(), events);
        return;
    }
    loop_.watch(fd_.get(), events, [this](short revents) { on_event(revents); });
    watched_ = true;
}

void DataConnection::run_here(std::unique_ptr<TransferJob> job, std::chrono::milliseconds limit)
{
    here_ = true;
    start(std::move(job));
    while (job_) {
        const auto now = std::chrono::steady_clock::now();
        const auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_progress_);
        if (quiet >= limit) {
            check_progress(now, limit);  // fails the job: the loop ends
            break;
        }
        pollfd p{fd_.get(), interest(), 0};
        const int rc = ::poll(&p, 1, static_cast<int>((limit - quiet).count()) + 1);
        if (rc < 0 && errno != EINTR) {
            const int err = errno;
            fail(Errc::transfer_failed,
                 job_->what + ": cannot wait for data connection to " + endpoint_ + ": " + std::strerror(err));
            break;
        }
        // An error or hang-up is seen by the next read (as the loop reports it).
        if (rc > 0) on_event(static_cast<short>(p.revents & (POLLERR | POLLHUP) ? p.revents | POLLIN : p.revents));
    }
    here_ = false;
}

void DataConnection::park()
{
    if (!watched_) return;
    loop_.unwatch(fd_.get());
    watched_ = false;
}

bool DataConnection::still_open()
{
    if (phase_ != Phase::idle) return false;
    // The store closed an idle connection (or sent garbage): drop it.
    // TLS: a record without application data is not a close.
    const IoResult r = peek(*io_);
    if (!r.eof() && !r.failed()) return true;
    phase_ = Phase::closed;
    return false;
}

void DataConnection::open_socket()
{
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
    watched_ = false;
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
    watch(POLLOUT);
}

void DataConnection::on_event(short revents)
{
    if (phase_ == Phase::idle || phase_ == Phase::closed) return;  // not watched
    // The store answers before the end of a push: a refusal. Read it.
    const bool sending = phase_ == Phase::request || phase_ == Phase::push_body || phase_ == Phase::push_trailer;
    if (sending && (revents & POLLIN)) phase_ = Phase::response;
    drive();
}

void DataConnection::drive()
{
    try {
        run();
    } catch (const Error& e) {  // the source or sink failed (e.g. a producer, a full disk)
        fail(e.code(), e.what());
    }
}

void DataConnection::run()
{
    for (;;) {
        Step step = Step::stop;
        switch (phase_) {
        case Phase::connecting: step = finish_connect(); break;
        case Phase::handshake: step = step_handshake(); break;
        case Phase::request:
            step = send_queued(job_->type == protocol::FrameType::push ? Phase::push_body : Phase::response);
            break;
        case Phase::push_body: step = send_push_body(); break;
        case Phase::push_trailer: step = send_queued(Phase::response); break;
        case Phase::response: step = read_response(); break;
        case Phase::pull_body: step = read_pull_body(); break;
        case Phase::idle:
        case Phase::closed: return;
        }
        if (step == Step::stop) return;
        if (step == Step::wait) {
            if (!here_) loop_.modify(fd_.get(), interest());  // run_here() polls for interest()
            return;
        }
    }
}

short DataConnection::interest() const noexcept
{
    switch (phase_) {
    case Phase::connecting: return POLLOUT;
    case Phase::handshake: return io_->wants_write() ? POLLOUT : POLLIN;
    case Phase::request:
    case Phase::push_body:
    case Phase::push_trailer: return POLLOUT | POLLIN;  // POLLIN: a refusal before the end
    case Phase::response:
    case Phase::pull_body:
    case Phase::idle:
    case Phase::closed: break;
    }
    return POLLIN;
}

DataConnection::Step DataConnection::finish_connect()
{
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0)
        return failed(Errc::unreachable,
                      job_->what + ": cannot connect to data endpoint " + endpoint_ + ": " + std::strerror(err));
    touch();
    if (tls_) {
        io_ = std::make_unique<Channel>(fd_.get(), *tls_, endpoint_.substr(0, endpoint_.rfind(':')));
        phase_ = Phase::handshake;
    } else {
        io_ = std::make_unique<Channel>(fd_.get());
        phase_ = Phase::request;
    }
    return Step::next;
}

DataConnection::Step DataConnection::step_handshake()
{
    switch (io_->handshake()) {
    case Channel::Handshake::want_read:
    case Channel::Handshake::want_write: return Step::wait;
    case Channel::Handshake::failed:
        return failed(Errc::unreachable, job_->what + ": TLS handshake with data endpoint " + endpoint_ +
                                             " failed: " + io_->handshake_error());
    case Channel::Handshake::done: break;
    }
    touch();
    phase_ = Phase::request;
    return Step::next;
}

DataConnection::Step DataConnection::send_queued(Phase then)
{
    const IoResult r = out_.drain(*io_);
    if (r.bytes() > 0) touch();
    if (r.blocked()) return Step::wait;
    // Sent; or the connection failed: perhaps the store said why.
    phase_ = r.done() ? then : Phase::response;
    return Step::next;
}

DataConnection::Step DataConnection::send_push_body()
{
    if (frames_) return send_push_frames();
    Source& source = *job_->source;
    const bool streamed = source.streamed();
    while (streamed ? !source.ended() : done_bytes_ < total_) {
        const long n = source.send(*io_, kSendChunk, hash_);
        if (n == 0) {
            report_progress(false);
            return Step::wait;
        }
        if (n < 0) {
            phase_ = Phase::response;  // the store may have answered why
            return Step::next;
        }
        done_bytes_ = streamed ? source.produced() : done_bytes_ + static_cast<std::uint64_t>(n);
        touch();
        // Also between chunks: a source that blocks (a producer waiting for
        // its stream) never lets the socket block, and its progress would
        // otherwise show only at the end.
        report_progress(false);
    }
    report_progress(true);
    queue_trailer();
    phase_ = Phase::push_trailer;
    return Step::next;
}

void DataConnection::queue_trailer()
{
    std::uint8_t frame[protocol::kTrailerSize];
    protocol::encode(protocol::Trailer{hash_.finish()}, frame);
    out_.append(frame, sizeof frame);
}

DataConnection::Step DataConnection::read_response()
{
    const IoResult r = in_.fill(*io_);
    if (r.bytes() > 0) touch();
    if (r.blocked()) return Step::wait;
    if (!r.done()) return lost("closed", r);
    if (header_in_) {
        const auto* message = reinterpret_cast<const char*>(in_.data()) + protocol::kResponseHeaderSize;
        response_.message.assign(message, in_.size() - protocol::kResponseHeaderSize);
        return on_response();
    }
    std::size_t message_size = 0;
    std::string why;
    if (protocol::decode(in_.first<protocol::kResponseHeaderSize>(), response_, message_size, why))
        return failed(Errc::protocol_error,
                      job_->what + ": bad response on data connection to " + endpoint_ + ": " + why);
    header_in_ = true;
    answered_ = true;
    advertised_ = protocol::advertised(in_.first<protocol::kResponseHeaderSize>());
    in_.extend(message_size);
    return Step::next;  // its message (none: complete at once)
}

DataConnection::Step DataConnection::on_response()
{
    if (response_.status != Errc::ok) {
        const std::string text =
            response_.message.empty() ? std::string("refused without a reason") : response_.message;
        return failed(response_.status, job_->what + ": " + text);
    }
    if (job_->type == protocol::FrameType::push) {
        const bool streamed = job_->source->streamed();
        if (streamed ? !job_->source->ended() : done_bytes_ < total_)
            return failed(Errc::protocol_error, job_->what + ": store acknowledged before all bytes were sent");
        if (streamed && response_.blob_size != done_bytes_)
            return failed(Errc::protocol_error, job_->what + ": the store committed a Blob of " +
                                                    std::to_string(response_.blob_size) + " bytes, " +
                                                    std::to_string(done_bytes_) + " were sent");
        complete(true);
        return Step::stop;
    }
    if (job_->named && !take_named_answer()) return Step::stop;
    if (response_.length != job_->ticket.length)
        return failed(Errc::protocol_error, job_->what + ": the store announced " + std::to_string(response_.length) +
                                                " bytes, the ticket " + std::to_string(job_->ticket.length));
    if (!response_.checksum || response_.checksum->algorithm != hash_.algorithm())
        return failed(Errc::protocol_error,
                      job_->what + ": the store's answer carries " +
                          (response_.checksum
                               ? "a " + std::string(to_string(response_.checksum->algorithm)) + " checksum"
                               : std::string("no checksum")) +
                          ", the ticket names " + std::string(to_string(hash_.algorithm())));
    if (const auto& version = job_->ticket.version;
        version && (response_.blob_size != version->size || *response_.checksum != version->checksum))
        return failed(Errc::blob_changed, job_->what + ": the store announced a version of " +
                                              std::to_string(response_.blob_size) + " bytes with checksum " +
                                              response_.checksum->text() + ", not the version of the ticket (" +
                                              describe_version(*version) + ")");
    const bool reaches_end = job_->ticket.offset + total_ == response_.blob_size;
    if (job_->whole && !reaches_end)
        return failed(Errc::protocol_error, job_->what + ": a whole-Blob pull was answered with bytes [" +
                                                std::to_string(job_->ticket.offset) + ", " +
                                                std::to_string(job_->ticket.offset + total_) + ") of a Blob of " +
                                                std::to_string(response_.blob_size) + " bytes");
    job_->sink->open(total_);
    // The whole Blob's checksum is checked for a whole-Blob pull, and for a
    // range that happens to cover the Blob (from byte 0, or after the bytes
    // a resumed pull hashed).
    const std::uint64_t hashed_before = job_->prefix_hash ? job_->ticket.offset : 0;
    job_->verify = job_->verify && (job_->whole || (job_->ticket.offset == hashed_before && reaches_end));
    if (job_->verify && job_->sink->stable() && total_ >= HashPipeline::kBackgroundFrom) hash_.run_in_background();
    phase_ = Phase::pull_body;
    return Step::next;
}

DataConnection::Step DataConnection::read_pull_body()
{
    if (response_.compressed) return read_pull_frames();
    while (done_bytes_ < total_) {
        auto [data, room] = job_->sink->window();
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(room, total_ - done_bytes_));
        const IoResult r = read_some(*io_, data, want);
        if (r.blocked()) {
            report_progress(false);
            return Step::wait;
        }
        if (!r.done()) return lost("closed", r);
        if (job_->verify) hash_.update(data, r.bytes());
        job_->sink->commit(r.bytes());
        done_bytes_ += r.bytes();
        touch();
    }
    report_progress(true);
    // Checked before the sink finishes: a mismatch abandons the output (a
    // file this pull created is removed), never shows it.
    if (job_->verify && !pull_checksum_matches()) return Step::stop;
    job_->sink->finish();
    complete(true);
    return Step::stop;
}

bool DataConnection::take_named_answer()
{
    const protocol::NamedRequest& asked = *job_->named;
    if (asked.length != 0 && response_.length != asked.length) {
        fail(Errc::protocol_error, job_->what + ": the store announced " + std::to_string(response_.length) +
                                       " bytes, " + std::to_string(asked.length) + " were asked for");
        return false;
    }
    if (!response_.checksum) {
        fail(Errc::protocol_error, job_->what + ": the store's answer to a named pull carries no checksum");
        return false;
    }
    // The store bound the pull to the version it held when the request
    // came: that is the ticket's version now (what the checks below and
    // the caller's Result use).
    BlobInfo version;
    version.size = response_.blob_size;
    version.checksum = *response_.checksum;
    version.committed = std::chrono::system_clock::time_point(std::chrono::duration_cast<
                                                              std::chrono::system_clock::duration>(
        std::chrono::nanoseconds(protocol::decode_commit_time(response_.message))));
    job_->ticket.version = version;
    job_->ticket.length = response_.length;
    job_->ticket.checksum = response_.checksum->algorithm;
    total_ = response_.length;
    hash_.reset(ChecksumState(response_.checksum->algorithm));
    return true;
}

bool DataConnection::pull_checksum_matches()
{
    const Checksum received = hash_.finish();
    if (received == *response_.checksum) return true;
    const std::string kept = job_->ticket.offset == 0 ? std::string()
                                                      : " together with the " + std::to_string(job_->ticket.offset) +
                                                            " bytes the file already held (not a copy of this Blob?)";
    fail(Errc::digest_mismatch, job_->what + ": the " + std::to_string(total_) + " bytes received" + kept +
                                    " have checksum " + received.text() + ", not the Blob's " +
                                    response_.checksum->text() + "; nothing was kept");
    return false;
}

DataConnection::Step DataConnection::lost(const char* how, const IoResult& result)
{
    if (io_ && io_->tls() && result.error_number() == EPROTO)
        return failed(Errc::transfer_failed, lost_message(how) + ": " + result.text());
    return failed(Errc::transfer_failed, lost_message(how));
}

DataConnection::Step DataConnection::failed(Errc code, const std::string& message)
{
    fail(code, message);
    return Step::stop;
}

void DataConnection::report_progress(bool force)
{
    if (!job_->progress) return;
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_report_ < kProgressInterval) return;
    last_report_ = now;
    job_->progress(done_bytes_, total_);
}

void DataConnection::complete(bool reusable)
{
    hash_.stop();  // a no-op: finish() has waited for the helper
    JobOutcome outcome;
    outcome.response = response_;
    outcome.bytes = done_bytes_;
    outcome.seconds = seconds_since(started_);
    outcome.advertised = advertised_;
    outcome.compressed = frames_ && (job_->type == protocol::FrameType::push || response_.compressed);
    outcome.wire_bytes = outcome.compressed ? wire_bytes_ : done_bytes_;
    auto job = std::move(job_);
    phase_ = reusable ? Phase::idle : Phase::closed;
    job->done(std::move(outcome));
    if (!here_) released_(this, reusable);
}

void DataConnection::fail(Errc code, const std::string& message)
{
    if (!job_) return;
    hash_.stop();  // before the source or sink (perhaps the caller's buffer) goes
    JobOutcome outcome;
    outcome.error = make_error_code(code);
    outcome.message = message;
    outcome.bytes = done_bytes_;
    outcome.seconds = seconds_since(started_);
    if (answered_) outcome.advertised = advertised_;
    if (job_->sink) job_->sink->abandon();
    auto job = std::move(job_);
    phase_ = Phase::closed;
    io_.reset();
    if (here_) {
        // Off the loop's thread: the descriptor is closed when the loop
        // discards the connection (ConnectionPool::give_back()); the store
        // sees the end now.
        if (fd_) ::shutdown(fd_.get(), SHUT_RDWR);
        job->done(std::move(outcome));
        return;
    }
    if (fd_) {
        if (watched_) loop_.unwatch(fd_.get());
        watched_ = false;
        fd_.reset();
    }
    job->done(std::move(outcome));
    released_(this, false);
}

void DataConnection::check_progress(std::chrono::steady_clock::time_point now, std::chrono::milliseconds limit)
{
    if (!job_ || now - last_progress_ < limit) return;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3f", static_cast<double>(limit.count()) / 1000.0);
    fail(Errc::timeout, job_->what + ": no progress for " + seconds + " s on data connection to " + endpoint_ + " (" +
                            std::to_string(done_bytes_) + " of " + std::to_string(total_) + " bytes)");
}

}  // namespace blobstreaming::dataplane
