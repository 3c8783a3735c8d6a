// One pull across the caller, control and loop threads (PullOperation.h).
#include "PullOperation.h"

#include "AutoStreams.h"
#include "LocalRead.h"
#include "NoticeBoard.h"
#include "ParallelPull.h"
#include "StoreChoice.h"
#include "Streams.h"
#include "UserCallback.h"
#include "TransferResult.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <blobstreaming/transporter/Log.h>

namespace blobstreaming::client {

PullOperation::PullOperation(Session::Impl& session, std::string name, PullSink sink, PullOptions options,
                             Completion done)
    : session_(session), name_(std::move(name)), sink_(std::move(sink)), options_(std::move(options)),
      done_(std::move(done)), what_("pull " + quote_name(name_))
{}

void PullOperation::start(Session::Impl& session, std::string name, PullSink sink, PullOptions options, Completion done,
                          bool caller_waits)
{
    std::shared_ptr<PullOperation> op(
        new PullOperation(session, std::move(name), std::move(sink), std::move(options), std::move(done)));
    if (caller_waits) op->caller_.waits_here();
    if (op->named_now()) return;
    op->on_control_thread(&PullOperation::on_control_thread_choose);
}

bool PullOperation::named_now()
{
    // Not with the same-host path on: asking for the store's file is a control call.
    if (options_.resume || options_.notices != NoticeMode::none || options_.streams != 1 ||
        session_.options.local_fast_path)
        return false;
    const std::string& store = options_.store.empty() ? session_.options.default_store : options_.store;
    if (store.empty()) return false;
    const auto route = session_.named.find(store, options_.compress);
    if (!route) return false;
    store_ = store;
    try {
        validate_blob_name(name_);
    } catch (const Error& e) {
        fail(e);
        return true;
    }
    if (run_here(*route)) return true;
    session_.loop.post([op = shared_from_this(), route = *route] { op->on_loop_thread_named(route); });
    return true;
}

bool PullOperation::run_here(const NamedRoutes::Route& route)
{
    if (!caller_.is_this_thread() || options_.progress || sink_.kind() == PullSink::Kind::consumer) return false;
    return session_.pool.run_leased(NamedRoutes::endpoint(route), session_.options.timeout, [&] {
        caller_.ran_here();
        Ticket ticket;
        ticket.host = route.host;
        ticket.port = route.port;
        ticket.offset = options_.offset;
        ticket.length = options_.length;
        return make_job(ticket, std::nullopt, options_.offset == 0 && options_.length == 0, &route);
    });
}

void PullOperation::on_control_thread(void (PullOperation::*step)(), std::optional<Result> if_closed)
{
    if (!if_closed) if_closed = failure(Error(Errc::cancelled, what_ + ": the session is closing"));
    session_.control_call([op = shared_from_this(), step] { ((*op).*step)(); },
                          [op = shared_from_this(), r = std::move(*if_closed)] { op->session_.complete(op->done_, r); },
                          name_);
}

void PullOperation::fail(const Error& e) { finish(failure(e, store_)); }

void PullOperation::on_control_thread_choose()
{
    try {
        validate_blob_name(name_);
        if (options_.streams > kMaxStreams)
            throw Error(Errc::invalid_argument, what_ + ": streams " + std::to_string(options_.streams) +
                                                    ": expected 1 to " + std::to_string(kMaxStreams) +
                                                    ", or kAutoStreams (0)");
        check_notice_mode(options_.notices, session_.options, what_);
        store_ = store_holding(*session_.control, options_.store, session_.options.default_store, name_, what_);
        if (options_.resume) return on_control_thread_resume();
        // The store sees no same-host read: a notice needs its data connection.
        if (session_.options.local_fast_path && options_.notices == NoticeMode::none) {
            auto local = session_.control->find_local(store_, name_);
            if (local && local_file_readable(local->path)) {
                session_.loop.post([op = shared_from_this(), local = *local] { op->on_loop_thread_read_local(local); });
                return;
            }
        }
        if (ParallelPull::start(session_, name_, store_, sink_, options_, done_, &probe_)) return;
        if (options_.notices == NoticeMode::none) {
            if (auto route = session_.named.find(store_, options_.compress)) {
                // No control call: the store decides on a pooled connection.
                session_.loop.post([op = shared_from_this(), route = *route] { op->on_loop_thread_named(route); });
                return;
            }
        }
    } catch (const Error& e) {
        return fail(e);
    }
    on_control_thread_ticket();
}

void PullOperation::on_loop_thread_named(const NamedRoutes::Route& route)
{
    if (!session_.pool.can_run_named(NamedRoutes::endpoint(route))) {
        // Every pooled connection is busy (or gone): a ticket opens another.
        return on_control_thread(&PullOperation::on_control_thread_ticket);
    }
    Ticket ticket;
    ticket.host = route.host;
    ticket.port = route.port;
    ticket.offset = options_.offset;
    ticket.length = options_.length;
    on_loop_thread_transfer(ticket, std::nullopt, !retried_ && options_.offset == 0 && options_.length == 0, &route);
}

void PullOperation::on_loop_thread_read_local(const LocalFile& local)
{
    Result r = local_result(store_, local, options_.offset);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string where = what_ + ": store \"" + store_ + "\"";
    try {
        LocalRange range;
        try {
            range = open_local(local, options_.offset, options_.length, where);
        } catch (const Error& e) {
            if (e.code() != Errc::io_error && e.code() != Errc::blob_changed) throw;
            // The file cannot be used, or it holds another version now;
            // nothing was written: take the socket.
            library_log()->debug("{}; pulling over the network instead", e.what());
            return on_control_thread(&PullOperation::on_control_thread_ticket, failure(e));
        }
        if (auto* place = sink_.place()) {
            // Nothing copied: the range itself, checked, to the caller.
            *place = keep_in_place(std::move(range), options_.verify, where, options_.progress);
            r.bytes = r.length = (*place)->size();
            r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            log_transfer("pulled in place", "from", name_, store_, r, "local file " + local.path);
            return session_.complete(done_, std::move(r));
        }
        // From here a failure is the destination's or the checksum's: bytes
        // may be out already (a FIFO, standard output), so the pull fails
        // instead of starting over on another path.
        auto sink = make_sink(sink_, where);
        try {
            r.bytes = copy_local(range, *sink, options_.verify, where, options_.progress);
        } catch (...) {
            sink->abandon();
            throw;
        }
        r.length = r.bytes;
    } catch (const Error& e) {
        r.error = e.error_code();
        r.message = e.what();
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.ok()) log_transfer("pulled", "from", name_, store_, r, "local file " + local.path);
    session_.complete(done_, std::move(r));
}

void PullOperation::on_control_thread_ticket()
{
    try {
        // The ticket ParallelPull asked for to choose (one stream after all), else a new one.
        const Ticket ticket =
            probe_ ? *probe_
                   : session_.control->begin_pull(store_, name_, options_.offset, options_.length, options_.notices);
        probe_.reset();
        const bool retry = !retried_ && options_.offset == 0 && options_.length == 0;
        session_.loop.post(
            [op = shared_from_this(), ticket, retry] { op->on_loop_thread_transfer(ticket, std::nullopt, retry); });
    } catch (const Error& e) {
        fail(e);
    }
}

void PullOperation::on_control_thread_resume()
{
    const std::string what = what_ + ": store \"" + store_ + "\"";
    if (sink_.kind() != PullSink::Kind::file || sink_.path() == "-")
        throw Error(Errc::invalid_argument,
                    what + ": resume needs a file to continue (not standard output, memory or a consumer)");
    if (options_.offset != 0 || options_.length != 0)
        throw Error(Errc::invalid_argument, what + ": resume continues a whole-Blob pull; it cannot be combined "
                                                   "with an offset or a length");
    const BlobInfo info = session_.control->stat(store_, name_);
    auto [have, prefix] = hash_existing_file(sink_.path(), info.checksum.algorithm, what);
    if (have > info.size)
        throw Error(Errc::invalid_range, what + ": cannot resume: " + sink_.path() + " holds " + std::to_string(have) +
                                             " bytes, more than the " + std::to_string(info.size) +
                                             " of the Blob (not a partial copy of it)");
    const Ticket ticket = session_.control->begin_pull(store_, name_, have, 0, options_.notices);
    if (ticket.checksum != prefix.algorithm())
        throw Error(Errc::blob_changed, what + ": the Blob was replaced (now with a " +
                                            std::string(to_string(ticket.checksum)) +
                                            " checksum) while the pull was resuming; pull it again");
    session_.loop.post([op = shared_from_this(), ticket, prefix = std::make_shared<ChecksumState>(std::move(prefix))] {
        op->on_loop_thread_transfer(ticket, std::move(*prefix), false);
    });
}

void PullOperation::on_loop_thread_transfer(const Ticket& ticket, std::optional<ChecksumState> prefix,
                                            bool retry_if_changed, const NamedRoutes::Route* named)
{
    auto job = make_job(ticket, std::move(prefix), retry_if_changed, named);
    if (!job) return;
    if (!named) return session_.pool.submit(std::move(job));
    auto back = session_.pool.submit_named(std::move(job));
    if (!back) return;
    // Taken meanwhile (a caller's lease): a ticket opens another connection.
    back->sink->abandon();
    on_control_thread(&PullOperation::on_control_thread_ticket);
}

std::unique_ptr<TransferJob> PullOperation::make_job(const Ticket& ticket, std::optional<ChecksumState> prefix,
                                                     bool retry_if_changed, const NamedRoutes::Route* named)
{
    auto job = std::make_unique<TransferJob>();
    job->type = protocol::FrameType::pull;
    job->ticket = ticket;
    if (named)
        NamedRoutes::name_job(*job, *named, protocol::FrameType::pull, name_, ticket.offset, ticket.length, false,
                              std::nullopt);
    job->what = what_ + ": store \"" + store_ + "\"";
    const bool resumed = prefix.has_value();
    try {
        job->sink = make_sink(sink_, job->what, resumed ? std::optional<std::uint64_t>(ticket.offset) : std::nullopt);
    } catch (const Error& e) {
        fail(e);
        return nullptr;
    }
    job->prefix_hash = std::move(prefix);
    job->verify = options_.verify;
    job->whole = options_.offset == 0 && options_.length == 0;
    job->compress = wire_mode(options_.compress);
    if (options_.progress)
        job->progress = [progress = options_.progress, what = job->what](std::uint64_t done, std::uint64_t total) {
            call_user("progress callback", what, progress, done, total);
        };
    job->done = [op = shared_from_this(), ticket, retry_if_changed, named = named != nullptr](JobOutcome o) {
        op->on_loop_thread_finished(ticket, retry_if_changed, o, named);
    };
    return job;
}

void PullOperation::on_loop_thread_finished(const Ticket& ticket, bool retry_if_changed, const JobOutcome& o,
                                            bool named)
{
    session_.named.learn(store_, ticket, o);
    if (retry_if_changed && o.error == make_error_code(Errc::blob_changed)) {
        library_log()->info(
            "pull {}: store \"{}\": the Blob changed since the ticket was issued; pulling the current version",
            quote_name(name_), store_);
        retried_ = true;
        return on_control_thread(&PullOperation::on_control_thread_ticket);
    }
    // The store was still receiving the Blob (read-through: no commit time
    // in the ticket) and the data connection broke off: its fetch may have
    // failed, which only the control plane can say. Ask once: the store
    // answers that reason, or serves the Blob again. Not when bytes went
    // where they cannot be taken back (standard output, a consumer).
    const bool in_flight = ticket.version && ticket.version->committed.time_since_epoch().count() == 0;
    const bool restartable = o.bytes == 0 || (sink_.kind() == PullSink::Kind::file && sink_.path() != "-");
    if (retry_if_changed && in_flight && restartable && o.error == make_error_code(Errc::transfer_failed)) {
        library_log()->info("pull {}: store \"{}\": the transfer of a Blob it was still receiving broke off ({}); "
                            "asking the store again",
                            quote_name(name_), store_, o.message);
        retried_ = true;
        return on_control_thread(&PullOperation::on_control_thread_ticket);
    }
    Result r = result_of(o, store_, ticket);
    if (!o.error) {
        // The data connection checked the Response against the version.
        if (ticket.version) r.info = *ticket.version;
        if (named)  // the store said when the version it bound the pull to was committed
            r.info.committed = std::chrono::system_clock::time_point(
                std::chrono::duration_cast<std::chrono::system_clock::duration>(
                    std::chrono::nanoseconds(protocol::decode_commit_time(o.response.message))));
        r.info.name = name_;
        r.info.size = o.response.blob_size;
        if (named) r.length = o.response.length;  // the ticket of a named pull asked for "to the end" (0)
        if (o.response.checksum) r.info.checksum = *o.response.checksum;
        log_transfer("pulled", "from", name_, store_, r, ticket.endpoint());
    }
    finish(std::move(r));
}

}  // namespace blobstreaming::client
