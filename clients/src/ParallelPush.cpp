// One push over several data connections (ParallelPush.h).
#include "ParallelPush.h"

#include "AutoStreams.h"

#include "Streams.h"
#include "TransferResult.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>

#include <blobstreaming/transporter/Log.h>

#include <algorithm>
#include <thread>

namespace blobstreaming::client {

namespace {

/// A part asked for again right after its connection broke may still be
/// receiving at the store (it has not seen the break yet): the store then
/// answers invalid_range ("being received"). Asked again for this long.
constexpr auto kRetryWindow = std::chrono::seconds(5);

}  // namespace

/// The bytes of one part for its data connection: the push's source at the
/// part's place; stops at the next bytes once another part failed.
class ParallelPush::PartSource final : public Source {
public:
    PartSource(std::shared_ptr<ParallelPush> push, std::size_t part, std::unique_ptr<Source> inner)
        : push_(std::move(push)), part_(part), inner_(std::move(inner))
    {}
    std::uint64_t size() const noexcept override { return inner_->size(); }
    long send(Channel& channel, std::size_t max, HashPipeline& hash) override
    {
        ParallelPush& push = *push_;
        if (push.failure_.failed)
            throw Error(Errc::cancelled, push.what_ + ": stream " + std::to_string(part_ + 1) +
                                             " stopped: another stream of the push failed");
        const long n = inner_->send(channel, max, hash);
        if (n > 0) {
            push.parts_[part_].sent += static_cast<std::uint64_t>(n);
            if (push.options_.progress) {
                const auto now = std::chrono::steady_clock::now();
                if (now - last_report_ >= std::chrono::milliseconds(100)) {
                    last_report_ = now;
                    std::uint64_t done = 0;
                    for (const Part& p : push.parts_) done += p.head + p.sent;
                    push.options_.progress(std::min(done, push.size_), push.size_);
                }
            }
        }
        return n;
    }
    void skip(std::uint64_t offset, ChecksumState& hash) override { inner_->skip(offset, hash); }
    bool stable() const noexcept override { return inner_->stable(); }

private:
    std::shared_ptr<ParallelPush> push_;
    std::size_t part_;
    std::unique_ptr<Source> inner_;
    std::chrono::steady_clock::time_point last_report_{};
};

ParallelPush::ParallelPush(Session::Impl& session, PushSource source, std::string name, std::string store,
                           PushOptions options)
    : session_(session), source_(std::move(source)), name_(std::move(name)), store_(std::move(store)),
      options_(std::move(options)), what_("push " + quote_name(name_) + ": store \"" + store_ + "\"")
{}

bool ParallelPush::start(Session::Impl& session, const PushSource& source, const std::string& name,
                         const std::string& store, std::uint64_t size, const PushOptions& options, Completion& done)
{
    if (options.streams <= 1 || options.resume || source.kind() == PushSource::Kind::producer ||
        source.kind() == PushSource::Kind::stream)
        return false;
    if (options.notices != NoticeMode::none) {
        library_log()->debug("push {}: notices come for whole transfers, not parts: one stream", quote_name(name));
        return false;
    }
    if (options.checksum && *options.checksum != ChecksumAlgorithm::crc32c) {
        library_log()->debug("push {}: a {} checksum does not combine from parts: one stream", quote_name(name),
                             to_string(*options.checksum));
        return false;
    }
    const std::uint64_t count = std::min<std::uint64_t>(options.streams, size / kMinStreamRange);
    if (count <= 1) return false;

    std::shared_ptr<ParallelPush> push(new ParallelPush(session, source, name, store, options));
    push->size_ = size;
    ControlPlane& control = *session.control;
    push->reservation_ = control.reserve_parts(store, name, size, options.replace);
    std::vector<Ticket> tickets;
    try {
        push->parts_.resize(count);
        for (std::uint64_t i = 0, at = 0; i < count; ++i) {
            Part& p = push->parts_[i];
            p.offset = at;
            p.length = size / count + (i < size % count ? 1 : 0);
            at += p.length;
            tickets.push_back(control.part_ticket(store, name, push->reservation_, p.offset, p.length));
        }
        warn_streams_on_loopback(push->what_, tickets.front(), tickets.size());
    } catch (const Error& e) {
        control.abort(store, push->reservation_);
        // A store that writes in order only (RADOS) fills no parts.
        if (e.code() == Errc::refused && tickets.empty()) {
            library_log()->info("{}: one stream: {}", push->what_, e.what());
            return false;
        }
        throw;
    }
    push->done_ = std::move(done);
    push->started_ = std::chrono::steady_clock::now();
    library_log()->debug("{}: {} bytes over {} streams", push->what_, size, count);
    session.loop.post([push, tickets = std::move(tickets)] { push->on_loop_thread_open(tickets); });
    return true;
}

void ParallelPush::on_loop_thread_open(std::vector<Ticket> tickets)
{
    running_ = parts_.size();
    for (std::size_t i = 0; i < parts_.size(); ++i) submit(i, tickets[i]);
}

void ParallelPush::submit(std::size_t part, const Ticket& ticket)
{
    Part& p = parts_[part];
    auto job = std::make_unique<TransferJob>();
    try {
        if (ticket.offset < p.offset || ticket.offset + ticket.length != p.offset + p.length)
            throw Error(Errc::protocol_error, what_ + ": stream " + std::to_string(part + 1) +
                                                  ": the store's ticket [" + std::to_string(ticket.offset) + ", +" +
                                                  std::to_string(ticket.length) + ") is not the rest of the part [" +
                                                  std::to_string(p.offset) + ", +" + std::to_string(p.length) + ")");
        std::unique_ptr<Source> inner = open_source(source_, what_);
        if (inner->size() != size_)
            throw Error(Errc::io_error, what_ + ": the source has " + std::to_string(inner->size()) + " bytes now, " +
                                            std::to_string(size_) + " when the push started");
        // The bytes the store already holds of this part: hashed here, so
        // that the part's CRC covers all of it.
        p.head = ticket.offset - p.offset;
        if (p.retries > 0)
            library_log()->info("{}: stream {} continues at byte {}: the store holds {} of its {} bytes", what_,
                                part + 1, ticket.offset, p.head, p.length);
        ChecksumState head(ChecksumAlgorithm::crc32c);
        if (p.head > 0) inner->hash_range(p.offset, p.head, head);
        p.head_crc = head.finish().crc();
        p.sent = 0;
        if (ticket.length > 0) {
            inner->select(ticket.offset, ticket.offset + ticket.length);
            job->source = std::make_unique<PartSource>(shared_from_this(), part, std::move(inner));
        }
    } catch (const Error& e) {
        return record_failure(e.error_code(), e.what());
    }
    // The store holds the whole part (its acknowledgement was lost): the
    // head is all of it.
    if (ticket.length == 0) return on_loop_thread_part_done(part, ticket, JobOutcome{});
    job->type = protocol::FrameType::push;
    job->ticket = ticket;
    job->what = what_ + ": stream " + std::to_string(part + 1) + " of " + std::to_string(parts_.size());
    job->done = [push = shared_from_this(), part, ticket](JobOutcome o) {
        push->on_loop_thread_part_done(part, ticket, o);
    };
    session_.pool.submit(std::move(job));
}

bool ParallelPush::part_can_continue(const std::error_code& e) noexcept
{
    return stream_can_continue(e) ||
           (e.category() == error_category() && static_cast<Errc>(e.value()) == Errc::invalid_range);
}

void ParallelPush::on_loop_thread_part_done(std::size_t part, const Ticket& ticket, const JobOutcome& o)
{
    Part& p = parts_[part];
    if (o.error && !failure_.failed && part_can_continue(o.error) && p.retries < kStreamRetries) {
        ++p.retries;
        library_log()->info("{}: stream {} broke after {} of its {} bytes ({}); continuing its part", what_, part + 1,
                            p.head + p.sent, p.length, o.message);
        auto retry = [push = shared_from_this(), part] { push->on_control_thread_retry(part); };
        auto closed = [push = shared_from_this()] {
            push->record_failure(make_error_code(Errc::cancelled), push->what_ + ": the session is closing");
        };
        return session_.control_call(retry, closed, name_);
    }
    if (o.error) return record_failure(o.error, o.message);
    if (ticket.length > 0) {
        if (!o.response.checksum || o.response.checksum->algorithm != ChecksumAlgorithm::crc32c)
            return record_failure(make_error_code(Errc::protocol_error),
                                  what_ + ": stream " + std::to_string(part + 1) +
                                      ": the store acknowledged the part without its CRC32C");
        const std::uint32_t sent_crc = o.response.checksum->crc();
        p.crc = p.head == 0 ? sent_crc : crc32c_combine(p.head_crc, sent_crc, ticket.length);
    } else {
        p.crc = p.head_crc;  // held already: hashed from the source by submit()
    }
    part_finished();
}

void ParallelPush::on_control_thread_retry(std::size_t part)
{
    const Part& p = parts_[part];
    try {
        Ticket ticket;
        const auto give_up = std::chrono::steady_clock::now() + kRetryWindow;
        for (auto pause = std::chrono::milliseconds(10);; pause = std::min(pause * 2, std::chrono::milliseconds(500))) {
            try {
                ticket = session_.control->part_ticket(store_, name_, reservation_, p.offset, p.length);
                break;
            } catch (const Error& e) {
                // The store has not seen the broken connection yet.
                if (e.code() != Errc::invalid_range || std::chrono::steady_clock::now() >= give_up) throw;
            }
            std::this_thread::sleep_for(pause);
        }
        session_.loop.post([push = shared_from_this(), part, ticket] {
            if (push->failure_.failed) return push->record_failure({}, {});
            push->submit(part, ticket);
        });
    } catch (const Error& e) {
        session_.loop.post([push = shared_from_this(), code = e.error_code(), message = std::string(e.what())] {
            push->record_failure(code, message);
        });
    }
}

void ParallelPush::record_failure(std::error_code code, const std::string& message)
{
    failure_.record(code, message);
    part_finished();
}

void ParallelPush::part_finished()
{
    if (--running_ > 0) return;
    auto end = [push = shared_from_this()] { push->on_control_thread_end(); };
    session_.control_call(end, end, name_);
}

void ParallelPush::on_control_thread_end()
{
    Result r;
    r.store = store_;
    r.length = size_;
    for (const Part& p : parts_) r.bytes += p.sent;
    r.streams = parts_.size();
    if (!failure_.failed) {
        std::uint32_t crc = 0;
        for (std::size_t i = 0; i < parts_.size(); ++i)
            crc = i == 0 ? parts_[i].crc : crc32c_combine(crc, parts_[i].crc, parts_[i].length);
        try {
            r.info = session_.control->commit(store_, name_, reservation_, Checksum::crc32c(crc));
        } catch (const Error& e) {
            failure_.record(e.error_code(), e.what());
        }
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (failure_.failed) {
        session_.control->abort(store_, reservation_);  // nothing partial stays
        r.error = failure_.error;
        r.message = failure_.message;
        return session_.complete(done_, std::move(r));
    }
    r.info.name = name_;
    log_transfer("pushed", "to", name_, store_, r, std::to_string(parts_.size()) + " streams");
    session_.complete(done_, std::move(r));
}

}  // namespace blobstreaming::client
