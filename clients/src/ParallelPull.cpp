// One pull over several data connections (ParallelPull.h).
#include "ParallelPull.h"

#include "AutoStreams.h"

#include "Streams.h"
#include "TransferResult.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <blobstreaming/transporter/Log.h>

#include <algorithm>
#include <sys/stat.h>

namespace blobstreaming::client {

namespace {

/// Whether `sink` takes bytes anywhere in the range once open (see
/// Sink::positional): decided before any ticket is issued.
bool takes_ranges(const PullSink& sink)
{
    switch (sink.kind()) {
    case PullSink::Kind::memory:
    case PullSink::Kind::buffer: return true;
    case PullSink::Kind::file: {
        const std::string& path = sink.path();
        if (path.empty() || path == "-" || path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0) return false;
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return errno == ENOENT;
        return S_ISREG(st.st_mode);
    }
    default: return false;
    }
}

}  // namespace

bool stream_can_continue(const std::error_code& e) noexcept
{
    if (e.category() != error_category()) return false;
    const auto code = static_cast<Errc>(e.value());
    return code == Errc::transfer_failed || code == Errc::timeout || code == Errc::unreachable;
}

/// The destination seen by one part's data connection: its bytes go to the
/// pull's destination at the part's place, through a bounce buffer, and
/// into the part's CRC.
class ParallelPull::PartSink final : public Sink {
public:
    PartSink(std::shared_ptr<ParallelPull> pull, std::size_t part) : pull_(std::move(pull)), part_(part) {}
    void open(std::uint64_t length) override
    {
        buffer_.resize(static_cast<std::size_t>(std::clamp<std::uint64_t>(length, 1, 256 * 1024)));
    }
    std::pair<std::uint8_t*, std::size_t> window() override { return {buffer_.data(), buffer_.size()}; }
    void commit(std::size_t n) override
    {
        ParallelPull& pull = *pull_;
        if (pull.failure_.failed)
            throw Error(Errc::cancelled, pull.what_ + ": stream " + std::to_string(part_ + 1) +
                                             " stopped: another stream of the pull failed");
        Part& p = pull.parts_[part_];
        pull.destination_->write_at(p.offset - pull.begin_ + p.received, buffer_.data(), n);
        p.hash.update(buffer_.data(), n);
        p.received += n;
        pull.moved_ += n;
        if (pull.options_.progress) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last_report_ >= std::chrono::milliseconds(100)) {
                last_report_ = now;
                std::uint64_t done = 0;
                for (const Part& q : pull.parts_) done += q.received;
                pull.options_.progress(done, pull.length_);
            }
        }
    }
    void finish() override {}

private:
    std::shared_ptr<ParallelPull> pull_;
    std::size_t part_;
    std::vector<std::uint8_t> buffer_;
    std::chrono::steady_clock::time_point last_report_{};
};

ParallelPull::ParallelPull(Session::Impl& session, std::string name, std::string store, PullSink sink,
                           PullOptions options, Completion done)
    : session_(session), name_(std::move(name)), store_(std::move(store)), sink_(std::move(sink)),
      options_(std::move(options)), done_(std::move(done)),
      what_("pull " + quote_name(name_) + ": store \"" + store_ + "\"")
{}

bool ParallelPull::start(Session::Impl& session, const std::string& name, const std::string& store,
                         const PullSink& sink, const PullOptions& options, Completion& done,
                         std::optional<Ticket>* single)
{
    if (options.streams == 1 || options.resume || !takes_ranges(sink)) return false;
    if (options.notices != NoticeMode::none) return false;  // one notice for the pull, not one per part
    ControlPlane& control = *session.control;
    const bool whole = options.offset == 0 && options.length == 0;
    // The version from a ticket for the whole range, not from a stat: a
    // read-through store begins to fetch a Blob it lacks for a ticket (the
    // streams then follow that fetch), and a stat there would say it has
    // none. That ticket goes unused (it expires). A Blob replaced between
    // it and the streams' tickets is split again, once.
    for (int attempt = 0; attempt < 2; ++attempt) {
        const Ticket probe = control.begin_pull(store, name, options.offset, options.length);
        const auto one_stream = [&] {
            if (single) *single = probe;
            return false;
        };
        if (!probe.version) return one_stream();
        const BlobInfo info = *probe.version;
        if (whole && options.verify && info.checksum.algorithm != ChecksumAlgorithm::crc32c) {
            library_log()->debug("pull {}: a {} checksum does not combine from parts: one stream", quote_name(name),
                                 to_string(info.checksum.algorithm));
            return one_stream();
        }
        if (options.offset > info.size) return one_stream();
        const std::uint64_t end = options.length == 0 ? info.size : options.offset + options.length;
        if (end > info.size || end < options.offset) return one_stream();
        const std::uint64_t length = end - options.offset;
        const std::string what = "pull " + quote_name(name);
        std::size_t streams = options.streams;
        if (streams == kAutoStreams) streams = auto_streams(what, probe, length, options.compress);
        else warn_streams_on_loopback(what, probe, streams);
        const std::uint64_t count = std::min<std::uint64_t>(streams, length / kMinStreamRange);
        if (count <= 1) return one_stream();

        std::shared_ptr<ParallelPull> pull(new ParallelPull(session, name, store, sink, options, nullptr));
        pull->begin_ = options.offset;
        pull->length_ = length;
        pull->whole_ = whole;
        pull->parts_.resize(count);
        std::vector<Ticket> tickets;
        bool same = true;
        for (std::uint64_t i = 0, at = options.offset; i < count; ++i) {
            Part& p = pull->parts_[i];
            p.offset = at;
            p.length = length / count + (i < length % count ? 1 : 0);
            at += p.length;
            try {
                tickets.push_back(control.begin_pull(store, name, p.offset, p.length));
            } catch (const Error& e) {
                // Replaced by a shorter version since the first ticket.
                if (e.code() != Errc::invalid_range) throw;
                same = false;
                break;
            }
            const auto& version = tickets.back().version;
            if (!version || !same_version(*version, info)) {
                same = false;
                break;
            }
        }
        if (!same) {
            library_log()->info("pull {}: store \"{}\": the Blob changed while the streams' tickets were issued; "
                                "splitting the current version",
                                quote_name(name), store);
            continue;
        }
        pull->version_ = info;
        pull->version_.name = name;
        pull->done_ = std::move(done);
        pull->started_ = std::chrono::steady_clock::now();
        library_log()->debug("{}: {} bytes over {} streams", pull->what_, length, count);
        session.loop.post([pull, tickets = std::move(tickets)] { pull->on_loop_thread_open(tickets); });
        return true;
    }
    throw Error(Errc::blob_changed, "pull " + quote_name(name) + ": store \"" + store +
                                        "\": the Blob was replaced twice while the streams' tickets were issued; "
                                        "pull it again");
}

void ParallelPull::on_loop_thread_open(std::vector<Ticket> tickets)
{
    try {
        destination_ = make_sink(sink_, what_);
        destination_->open(length_);
        if (!destination_->positional())
            throw Error(Errc::io_error, what_ + ": the destination " + sink_.path() +
                                            " became a device or FIFO while the pull started; pull with one stream");
    } catch (const Error& e) {
        if (destination_) destination_->abandon();
        return session_.complete(done_, failure(e, store_));
    }
    running_ = parts_.size();
    for (std::size_t i = 0; i < parts_.size(); ++i) submit(i, tickets[i]);
}

void ParallelPull::submit(std::size_t part, const Ticket& ticket)
{
    auto job = std::make_unique<TransferJob>();
    job->type = protocol::FrameType::pull;
    job->ticket = ticket;
    job->what = what_ + ": stream " + std::to_string(part + 1) + " of " + std::to_string(parts_.size());
    job->sink = std::make_unique<PartSink>(shared_from_this(), part);
    job->verify = false;
    job->whole = false;
    job->done = [pull = shared_from_this(), part](JobOutcome o) { pull->on_loop_thread_part_done(part, o); };
    session_.pool.submit(std::move(job));
}

void ParallelPull::on_loop_thread_part_done(std::size_t part, const JobOutcome& o)
{
    Part& p = parts_[part];
    if (o.error && !failure_.failed && stream_can_continue(o.error) && p.retries < kStreamRetries &&
        p.received < p.length) {
        ++p.retries;
        library_log()->info("{}: stream {} broke after {} of its {} bytes ({}); continuing its range", what_, part + 1,
                            p.received, p.length, o.message);
        auto retry = [pull = shared_from_this(), part] { pull->on_control_thread_retry(part); };
        auto closed = [pull = shared_from_this()] {
            pull->record_failure(make_error_code(Errc::cancelled), pull->what_ + ": the session is closing");
        };
        return session_.control_call(retry, closed, name_);
    }
    if (o.error) record_failure(o.error, o.message);
    else if (--running_ == 0) on_loop_thread_finish();
}

void ParallelPull::on_control_thread_retry(std::size_t part)
{
    const Part& p = parts_[part];
    try {
        Ticket ticket;
        try {
            ticket = session_.control->begin_pull(store_, name_, p.offset + p.received, p.length - p.received);
        } catch (const Error& e) {
            if (e.code() != Errc::invalid_range) throw;
            throw Error(Errc::blob_changed, what_ + ": stream " + std::to_string(part + 1) +
                                                " cannot continue: the Blob was replaced by a shorter one (" +
                                                e.what() + "); pull it again");
        }
        if (!ticket.version || !same_version(*ticket.version, version_))
            throw Error(Errc::blob_changed, what_ + ": stream " + std::to_string(part + 1) +
                                                " cannot continue: the Blob was replaced (now " +
                                                (ticket.version ? describe_version(*ticket.version) : "unknown") +
                                                ", was " + describe_version(version_) + "); pull it again");
        session_.loop.post([pull = shared_from_this(), part, ticket] {
            if (pull->failure_.failed) return pull->record_failure({}, {});
            pull->submit(part, ticket);
        });
    } catch (const Error& e) {
        session_.loop.post([pull = shared_from_this(), code = e.error_code(), message = std::string(e.what())] {
            pull->record_failure(code, message);
        });
    }
}

void ParallelPull::record_failure(std::error_code code, const std::string& message)
{
    failure_.record(code, message);
    if (--running_ == 0) on_loop_thread_finish();
}

void ParallelPull::on_loop_thread_finish()
{
    Result r;
    r.store = store_;
    r.offset = begin_;
    r.length = length_;
    r.bytes = moved_;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    r.streams = parts_.size();
    if (failure_.failed) {
        destination_->abandon();
        r.error = failure_.error;
        r.message = failure_.message;
        return session_.complete(done_, std::move(r));
    }
    try {
        std::uint32_t crc = 0;
        for (std::size_t i = 0; i < parts_.size(); ++i) {
            const std::uint32_t part = parts_[i].hash.finish().crc();
            crc = i == 0 ? part : crc32c_combine(crc, part, parts_[i].length);
        }
        if (whole_ && options_.verify && Checksum::crc32c(crc) != version_.checksum)
            throw Error(Errc::digest_mismatch, what_ + ": the " + std::to_string(length_) + " bytes received over " +
                                                   std::to_string(parts_.size()) + " streams have checksum " +
                                                   Checksum::crc32c(crc).text() + ", not the Blob's " +
                                                   version_.checksum.text() + "; nothing was kept");
        destination_->finish();
    } catch (const Error& e) {
        destination_->abandon();
        r.error = e.error_code();
        r.message = e.what();
        return session_.complete(done_, std::move(r));
    }
    r.info = version_;
    log_transfer("pulled", "from", name_, store_, r, std::to_string(parts_.size()) + " streams");
    session_.complete(done_, std::move(r));
}

}  // namespace blobstreaming::client
