// One push across the caller, control and loop threads (PushOperation.h).
#include "PushOperation.h"

#include "AutoStreams.h"
#include "NoticeBoard.h"
#include "ParallelPush.h"
#include "StoreChoice.h"
#include "Streams.h"
#include "UserCallback.h"
#include "TransferResult.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

namespace blobstreaming::client {

PushOperation::PushOperation(Session::Impl& session, PushSource source, std::string name, PushOptions options,
                             Completion done)
    : session_(session), source_(std::move(source)), name_(std::move(name)), options_(std::move(options)),
      done_(std::move(done)), what_("push " + quote_name(name_))
{}

void PushOperation::start(Session::Impl& session, PushSource source, std::string name, PushOptions options,
                          Completion done, bool caller_waits)
{
    // The slot is given back when the completion runs, whatever the path.
    Completion released = [&session, done = std::move(done)](const Result& r) {
        session.release_push();
        if (done) done(r);
    };
    std::shared_ptr<PushOperation> op(
        new PushOperation(session, std::move(source), std::move(name), std::move(options), std::move(released)));
    if (caller_waits) op->caller_.waits_here();
    session.admit_push([op] { op->reserve(); });
}

bool PushOperation::named_now()
{
    if (options_.resume || options_.notices != NoticeMode::none || options_.streams != 1 || options_.tier ||
        source_.kind() == PushSource::Kind::stream)
        return false;
    const std::string& store = options_.store.empty() ? session_.options.default_store : options_.store;
    if (store.empty()) return false;
    const auto route = session_.named.find(store, options_.compress);
    if (!route) return false;
    store_ = store;
    auto job = std::make_shared<TransferJob>();
    try {
        validate_blob_name(name_);
        job->source = open_source(source_, what_);
    } catch (const Error& e) {
        session_.complete(done_, failure(e, store_));
        return true;
    }
    if (run_here(job, *route)) return true;
    send_named(job, *route);
    return true;
}

void PushOperation::name(TransferJob& job, const NamedRoutes::Route& route)
{
    NamedRoutes::name_job(job, route, protocol::FrameType::push, name_, 0, job.source->size(), options_.replace,
                          options_.checksum);
    grant_ = PushGrant{};
    grant_.ticket = job.ticket;
    named_ = true;
}

void PushOperation::send_named(const std::shared_ptr<TransferJob>& job, const NamedRoutes::Route& route)
{
    name(*job, route);
    prepare(job);
    session_.loop.post([op = shared_from_this(), job] { op->on_loop_thread_send_named(job); });
}

bool PushOperation::run_here(const std::shared_ptr<TransferJob>& job, const NamedRoutes::Route& route)
{
    // Only the caller that waits, on its own thread (admit_push() may have
    // started this push from another push's completion).
    if (!caller_.is_this_thread() || options_.progress || source_.kind() == PushSource::Kind::producer)
        return false;
    return session_.pool.run_leased(NamedRoutes::endpoint(route), session_.options.timeout, [&] {
        name(*job, route);
        prepare(job);
        caller_.ran_here();
        return std::make_unique<TransferJob>(std::move(*job));
    });
}

void PushOperation::reserve()
{
    // A store known without asking whose pooled connections take named
    // requests: no control thread either.
    if (named_now()) return;
    auto op = shared_from_this();
    session_.control_call([op] { op->on_control_thread_reserve(); },
                          [op] {
                              op->session_.complete(
                                  op->done_, failure(Error(Errc::cancelled, op->what_ + ": the session is closing")));
                          },
                          op->name_);
}

void PushOperation::on_control_thread_reserve()
{
    ControlPlane& control = *session_.control;
    auto job = std::make_shared<TransferJob>();
    try {
        validate_blob_name(name_);
        if (options_.streams > kMaxStreams)
            throw Error(Errc::invalid_argument, what_ + ": streams " + std::to_string(options_.streams) +
                                                    ": expected 1 to " + std::to_string(kMaxStreams) +
                                                    ", or kAutoStreams (0)");
        check_notice_mode(options_.notices, session_.options, what_);
        job->source = open_source(source_, what_);
        const bool streamed = job->source->streamed();
        // Placed by what a streamed push may come to (its --max-size; 0: unknown).
        const std::uint64_t size = streamed ? options_.max_size : job->source->size();
        store_ = store_to_write(control, options_.store, options_.tier, session_.options.default_store, size, what_);
        if (streamed && options_.compress == Compression::zstd)
            throw Error(Errc::invalid_argument, what_ + ": a push of unknown length cannot be compressed on the wire "
                                                        "(compression zstd); push it with compression auto or none");
        if (streamed) {
            // Length known only at its end: one stream, a reservation that grows.
            if (options_.resume)
                throw Error(Errc::invalid_argument,
                            what_ + ": a push of unknown length cannot resume (its producer cannot give the same "
                                    "bytes again)");
            grant_ = control.begin_stream_push(store_, name_, options_.max_size, options_.replace,
                                               options_.checksum, options_.notices);
        } else {
            if (ParallelPush::start(session_, source_, name_, store_, size, options_, done_)) return;
            if (!options_.resume && options_.notices == NoticeMode::none) {
                if (auto route = session_.named.find(store_, options_.compress)) {
                    // No control call: the store decides on a pooled connection.
                    send_named(job, *route);
                    return;
                }
            }
            std::optional<PushGrant> resumed;
            if (options_.resume)
                resumed = control.resume_push(store_, name_, size, options_.checksum, options_.notices);
            grant_ = resumed ? std::move(*resumed)
                             : control.begin_push(store_, name_, size, options_.replace, options_.checksum,
                                                  options_.notices);
            // Several streams combine CRC32C parts and report no notice: auto
            // keeps one for a SHA-256 Blob (asked for, or the store's default).
            if (options_.streams == kAutoStreams && !resumed && options_.notices == NoticeMode::none &&
                grant_.ticket.checksum == ChecksumAlgorithm::crc32c && auto_streams(what_, grant_.ticket, size, options_.compress) > 1) {
                // Several streams pay off on this link: the parts' reservation instead.
                PushOptions parallel = options_;
                parallel.streams = kAutoStreamCount;
                control.abort(store_, grant_.reservation);
                if (ParallelPush::start(session_, source_, name_, store_, size, parallel, done_)) return;
                grant_ = control.begin_push(store_, name_, size, options_.replace, options_.checksum,
                                            options_.notices);
            }
        }
    } catch (const Error& e) {
        return session_.complete(done_, failure(e, store_));
    }
    send_with_ticket(job);
}

void PushOperation::on_control_thread_ticket(std::shared_ptr<TransferJob> job)
{
    try {
        grant_ = session_.control->begin_push(store_, name_, job->source->size(), options_.replace, options_.checksum,
                                              options_.notices);
    } catch (const Error& e) {
        return session_.complete(done_, failure(e, store_));
    }
    job->named.reset();
    named_ = false;
    send_with_ticket(job);
}

void PushOperation::on_loop_thread_send_named(std::shared_ptr<TransferJob> job)
{
    auto back = session_.pool.submit_named(std::make_unique<TransferJob>(std::move(*job)));
    if (!back) return;
    *job = std::move(*back);
    // Every pooled connection is busy (or gone): a ticket opens another.
    auto op = shared_from_this();
    session_.control_call([op, job] { op->on_control_thread_ticket(job); },
                          [op] {
                              op->session_.complete(
                                  op->done_, failure(Error(Errc::cancelled, op->what_ + ": the session is closing")));
                          },
                          name_);
}

void PushOperation::send_with_ticket(const std::shared_ptr<TransferJob>& job)
{
    job->ticket = grant_.ticket;
    prepare(job);
    session_.loop.post([op = shared_from_this(), job] { op->on_loop_thread_send(job); });
}

void PushOperation::prepare(const std::shared_ptr<TransferJob>& job)
{
    job->type = protocol::FrameType::push;
    job->compress = wire_mode(options_.compress);
    job->what = what_ + ": store \"" + store_ + "\"";
    if (options_.progress)
        job->progress = [progress = options_.progress, what = job->what](std::uint64_t done, std::uint64_t total) {
            call_user("progress callback", what, progress, done, total);
        };
    job->done = [op = shared_from_this()](JobOutcome o) { op->on_loop_thread_finished(o); };
}

void PushOperation::on_loop_thread_send(std::shared_ptr<TransferJob> job)
{
    if (job->ticket.offset > 0) {
        // Resumed: the store has the first bytes; hash them here so that
        // the trailer covers the whole Blob.
        try {
            ChecksumState prefix(job->ticket.checksum);
            job->source->skip(job->ticket.offset, prefix);
            job->prefix_hash = std::move(prefix);
        } catch (const Error& e) {
            JobOutcome o;
            o.error = e.error_code();
            o.message = e.what();
            job->done(std::move(o));
            return;
        }
    }
    session_.pool.submit(std::make_unique<TransferJob>(std::move(*job)));
}

void PushOperation::on_loop_thread_finished(const JobOutcome& o)
{
    session_.named.learn(store_, grant_.ticket, o);
    Result r = result_of(o, store_, grant_.ticket);
    if (o.error) {
        const auto code = static_cast<Errc>(o.error.value());
        if (options_.resume && o.error.category() == error_category() &&
            (code == Errc::transfer_failed || code == Errc::timeout || code == Errc::unreachable)) {
            // The store keeps what it received for its grace period.
            r.message += "; the store keeps the bytes it received for a while: push again with resume to continue";
            return session_.complete(done_, std::move(r));
        }
        // A named push holds no reservation id here: the store aborted it.
        if (named_) return finish(std::move(r));
        // Nothing partial may stay. Closing: the worker is gone but the
        // references live until the loop has drained, so abort from the loop.
        auto abort = [op = shared_from_this(), r] { op->on_control_thread_abort(r); };
        return session_.control_call(abort, abort, name_);
    }
    if (source_.kind() == PushSource::Kind::stream) r.length = o.response.blob_size;  // the ticket's is its maximum
    r.info.name = name_;
    r.info.size = o.response.blob_size;
    if (o.response.checksum) r.info.checksum = *o.response.checksum;
    r.info.committed = std::chrono::system_clock::now();
    log_transfer("pushed", "to", name_, store_, r, grant_.ticket.endpoint());
    finish(std::move(r));
}

void PushOperation::on_control_thread_abort(const Result& r)
{
    session_.control->abort(store_, grant_.reservation);
    session_.complete(done_, r);
}

}  // namespace blobstreaming::client
