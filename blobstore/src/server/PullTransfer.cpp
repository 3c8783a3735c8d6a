/// A pull: the range of the ticket's version opened (off the reactor when the
/// store's read waits), the Response, then the bytes from a file, memory or
/// a store's reader.
#include "PullTransfer.h"

#include "CommitPool.h"
#include "DataPath.h"

#include <blobstreaming/blobstore/Store.h>
#include <blobstreaming/common/BlobName.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

namespace blobstreaming::server {

using data_path::bytes_of;
using data_path::kChunk;
using data_path::kDispatchBudget;
using data_path::kStreamBuffer;

PullTransfer::~PullTransfer() { release(); }

Step PullTransfer::start()
{
    if (server_.store.read_waits()) return open_away();
    try {
        range_ = read_ticket_version();
    } catch (const Error& e) {
        return refuse(e);
    }
    return answer();
}

Step PullTransfer::open_away()
{
    struct Job {
        BlobRange range;
        std::optional<Error> error;
    };
    auto job = std::make_shared<Job>();
    // Nothing else touches request_ and binding_ meanwhile: the connection
    // has no events and no timer, and a close leaves them to the continuation.
    const bool away = link_.run_off_reactor(
        {"opening", "answer the pull of"},
        [this, job] {
            try {
                job->range = read_ticket_version();
            } catch (const Error& e) {
                job->error = e;
            } catch (const std::exception& e) {
                job->error = Error(Errc::io_error, e.what());
            }
        },
        [this, job](bool connected) {
            if (!connected) return Step::close;  // closed while the store looked the Blob up: ended
            if (job->error) return refuse(*job->error);
            range_ = std::move(job->range);
            return answer();
        });
    if (away) return Step::away;
    spdlog::warn("data connection {}: cannot leave the reactor to open {} ({}): opening here", link_.peer_name(),
                 quote_name(binding_.blob), std::strerror(errno));
    try {
        range_ = read_ticket_version();
    } catch (const Error& e) {
        return refuse(e);
    }
    return answer();
}

Step PullTransfer::refuse(const Error& e)
{
    release();
    spdlog::warn("data connection {}: pull {} failed: {}", link_.peer_name(), quote_name(binding_.blob), e.what());
    end(false, e.what());
    protocol::Response response;
    response.status = e.code();
    response.message = e.what();
    return link_.respond(protocol::encode(response), AfterResponse::next_request);
}

const char* PullTransfer::method() const noexcept
{
    return range_.fd() >= 0 && !from_mapping_ ? "sendfile" : range_.data() ? "from memory" : "streamed";
}

Step PullTransfer::answer()
{
    // A file's bytes come from its mapping only when sendfile cannot send
    // them (TLS, compression): mapped here, where a failure is answered.
    const bool from_mapping =
        range_.fd() >= 0 && range_.size() > 0 && (link_.io().tls() || (request_.compress && server_.config.compress));
    if (from_mapping && !range_.data()) return refuse(Error(Errc::io_error, range_.mapping_error()));
    from_mapping_ =
        from_mapping || (range_.fd() >= 0 && range_.size() <= data_path::kFromMappingAtMost && range_.mapped());
    spdlog::debug("data connection {}: pull {} [{}, +{}) (ticket {}) started, {}", link_.peer_name(),
                  quote_name(binding_.blob), request_.offset, request_.length, protocol::ticket_tag(request_.ticket),
                  method());
    protocol::Response response;
    response.length = range_.size();
    response.blob_size = range_.blob().size;
    response.checksum = range_.blob().checksum;
    if (binding_.named && binding_.version)  // the client has no ticket naming the version: say when it was committed
        response.message = protocol::encode_commit_time(
            std::chrono::duration_cast<std::chrono::nanoseconds>(binding_.version->committed.time_since_epoch())
                .count());
    if (request_.compress && server_.config.compress && range_.size() > 0) {
        // Compression on the wire: frames instead of the raw bytes.
        encoder_ = std::make_unique<wire::FrameEncoder>();
        policy_.emplace(request_.compress_auto ? wire::CompressMode::automatic : wire::CompressMode::zstd);
        response.compressed = compressed_ = true;
    }
    // Frames are written by pump_frames(), never together with the header.
    const bool at_once = !compressed_ && range_.size() > 0 && (range_.fd() >= 0 || range_.data());
    return link_.respond(protocol::encode(response), at_once ? AfterResponse::body_at_once : AfterResponse::body);
}

namespace {

/// Whether `got` is the version `want` a ticket names. A ticket issued while
/// the store was receiving the Blob names the version being received, which
/// has no commit time yet: that fill (a range that follows it) or what it
/// committed, the same size and checksum, is it.
bool is_version(const BlobInfo& got, const BlobInfo& want) noexcept
{
    if (want.committed == std::chrono::system_clock::time_point{})
        return got.size == want.size && got.checksum == want.checksum;
    return same_version(got, want);
}

}  // namespace

BlobRange PullTransfer::read_ticket_version()
{
    const std::uint64_t offset = request_.offset;
    const std::uint64_t length = request_.length;
    if (!binding_.version) return server_.store.read_at(binding_.blob, offset, length);
    const BlobInfo& want = *binding_.version;
    // The messages are made only for a refusal: formatting the versions
    // costs more than a small pull's lookup.
    const auto changed = [&] {
        return "pull " + quote_name(binding_.blob) + ": the Blob changed since ticket " +
               protocol::ticket_tag(request_.ticket) + "... was issued for its version of " + describe_version(want);
    };
    const auto replaced = [&](const BlobInfo& now) {
        return Error(Errc::blob_changed, changed() + "; the store now holds " + describe_version(now) +
                                             "; pull again for the current version");
    };
    const auto removed = [&] { return Error(Errc::blob_changed, changed() + "; it was removed since"); };
    BlobRange range;
    try {
        // A committed version is read as committed, also while a newer one
        // is being filled (that read would follow the fill); a version being
        // received is read as any read: the fill, or what it committed.
        // (offset + length within the version: checked when it was issued.)
        range = want.committed != std::chrono::system_clock::time_point{}
                    ? server_.store.read_committed(binding_.blob, offset, offset + length)
                    : server_.store.read_at(binding_.blob, offset, length);
    } catch (const Error& e) {
        // The range was checked against that version when the ticket was
        // issued: a Blob that is gone or now too short was removed or replaced.
        if (e.code() == Errc::no_such_blob) throw removed();
        if (e.code() != Errc::invalid_range) throw;
        BlobInfo now;
        try {
            now = server_.store.stat(binding_.blob);
        } catch (const Error& gone) {
            if (gone.code() == Errc::no_such_blob) throw removed();
            throw;
        }
        throw replaced(now);
    }
    // The view re-read the Blob's own header: it is one version throughout.
    if (!is_version(range.blob(), want)) throw replaced(range.blob());
    return range;
}

Step PullTransfer::on_writable()
{
    switch (pump()) {
    case Pump::failed: return Step::close;
    case Pump::again: return Step::write;
    case Pump::wait: return Step::wait;
    case Pump::done: break;
    }
    record_throughput(body_done_);
    end(true, "");
    release();
    return Step::done;
}

PullTransfer::Pump PullTransfer::pump()
{
    if (encoder_) return pump_frames();
    std::uint64_t budget = kDispatchBudget;
    const std::uint64_t total = range_.size();
    while (body_done_ < total) {
        if (cancelled()) {
            fail(Errc::cancelled, "cancelled on the control plane after " + bytes_of(body_done_, total), false);
            return Pump::failed;
        }
        if (budget == 0) return Pump::again;
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>({kChunk, total - body_done_, budget}));
        IoResult r;
        switch (send_chunk(want, r)) {
        case Fill::failed: return Pump::failed;
        case Fill::wait: return Pump::wait;
        case Fill::ready: break;
        }
        if (r.done()) {
            body_done_ += r.bytes();
            budget -= std::min<std::uint64_t>(budget, r.bytes());
            link_.progress();
            continue;
        }
        if (r.blocked()) return Pump::again;
        fail(Errc::transfer_failed,
             "send failed after " + bytes_of(body_done_, total) + ": " +
                 (r.eof() ? std::string("the Blob's file ended early") : r.text()),
             false);
        return Pump::failed;
    }
    return Pump::done;
}

PullTransfer::Fill PullTransfer::send_chunk(std::size_t want, IoResult& r)
{
    Channel& io = link_.io();
    if (range_.fd() >= 0 && !io.tls() && !from_mapping_) {
        r = send_file(io, range_.fd(), range_.file_offset() + body_done_, want);
    } else if (range_.fd() < 0 && !range_.data() && range_.reader()) {
        const Fill fill = fill_stream();
        if (fill != Fill::ready) return fill;
        r = send_buffered(want);
    } else {
        // Memory, or TLS (sendfile cannot encrypt): from the mapping.
        r = write_some(io, range_.data() + body_done_, want);
    }
    return Fill::ready;
}

IoResult PullTransfer::send_buffered(std::size_t want)
{
    const IoResult r = write_some(link_.io(), stream_.data() + stream_at_, std::min(want, stream_end_ - stream_at_));
    if (r.done()) stream_at_ += r.bytes();
    return r;
}

void PullTransfer::ensure_buffer()
{
    if (stream_.empty())
        stream_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kStreamBuffer, range_.size())));
}

PullTransfer::Fill PullTransfer::fill_stream()
{
    if (stream_at_ < stream_end_) return Fill::ready;
    const std::uint64_t total = range_.size();
    ensure_buffer();
    std::error_code ec;
    bool pending = false;
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(stream_.size(), total - body_done_));
    const std::size_t n = range_.reader()->read_or_wait(range_.start() + body_done_, stream_.data(), want, ec,
                                                        pending, link_.waker());
    if (pending) return Fill::wait;  // the store's read is on its way: off the reactor meanwhile
    if (ec || n == 0) {
        const Errc status = ec && ec.category() == error_category() ? static_cast<Errc>(ec.value()) : Errc::io_error;
        fail(status,
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

void PullTransfer::release() noexcept
{
    if (range_.reader() && range_.reader()->close_waits() && server_.commits) {
        // The store's read-ahead is still on its way (a RadosStore's: an
        // OSD that stops answering holds it up to the operation timeout):
        // the reader goes on a CommitPool thread, which waits for it there.
        try {
            auto held = std::make_shared<BlobRange>(std::move(range_));
            server_.commits->submit([held] { *held = BlobRange{}; }, [] {});
        } catch (const std::exception& e) {
            spdlog::warn("data connection {}: the reader of {} is let go here, waiting for its store: {}",
                         link_.peer_name(), quote_name(binding_.blob), e.what());
        }
    }
    range_ = BlobRange{};
    std::vector<std::uint8_t>().swap(stream_);
    stream_at_ = stream_end_ = 0;
}

}  // namespace blobstreaming::server
