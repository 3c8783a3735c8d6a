// Compression on the wire, the client's side (docs/PROTOCOL.md,
// "Compression on the wire"): a push's bytes encoded into frames, a pull's
// frames decoded straight into the sink's windows. The raw paths (sendfile,
// reads into the window) stay as they are: a job without compression never
// comes here.
#include <blobstreaming/transporter/client/DataConnection.h>

#include <blobstreaming/common/Error.h>

#include <algorithm>
#include <cerrno>

namespace blobstreaming::dataplane {

bool DataConnection::wants_frames()
{
    if (job_->compress == wire::CompressMode::none) return false;
    if (job_->type == protocol::FrameType::push && job_->source->streamed()) return false;
    if (job_->compress == wire::CompressMode::automatic) {
        // Off on loopback: nothing to gain, the zero-copy paths to lose.
        if (!loopback_) loopback_ = wire::host_is_loopback(endpoint_.substr(0, endpoint_.rfind(':')));
        if (*loopback_) return false;
    }
    wire_bytes_ = 0;
    raw_left_ = 0;
    // Kept for the connection's next jobs (a series): what it measured holds.
    if (!policy_ || policy_->mode() != job_->compress) policy_.emplace(job_->compress);
    if (job_->type == protocol::FrameType::push) {
        if (!encoder_) encoder_ = std::make_unique<wire::FrameEncoder>();
    } else {
        decoder_ = std::make_unique<wire::FrameDecoder>();  // a fresh one per pull
    }
    return true;
}

DataConnection::Step DataConnection::send_push_frames()
{
    Source& source = *job_->source;
    while (done_bytes_ < total_ || !out_.empty()) {
        if (out_.empty() && raw_left_ > 0) {
            // A raw frame's bytes straight from the source, as an
            // uncompressed push sends them (sendfile: no copy).
            const long n = source.send(*io_, raw_left_, hash_);
            if (n == 0) {
                report_progress(false);
                return Step::wait;
            }
            if (n < 0) {
                phase_ = Phase::response;  // the store may have answered why
                return Step::next;
            }
            raw_left_ -= static_cast<std::size_t>(n);
            done_bytes_ += static_cast<std::uint64_t>(n);
            wire_bytes_ += static_cast<std::uint64_t>(n);
            touch();
            report_progress(false);
            continue;
        }
        if (out_.empty()) {
            const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(wire::kMaxFrame, total_ - done_bytes_));
            if (!policy_->compress_next(fd_.get())) {
                // Not worth compressing: the header here, the bytes above.
                std::uint8_t header[wire::kFrameHeaderSize];
                const auto length = static_cast<std::uint32_t>(want);
                wire::encode(wire::FrameHeader{wire::FrameKind::raw, length, length}, header);
                out_.append(header, sizeof header);
                raw_left_ = want;
            } else {
                const auto [bytes, n] = source.next(want, hash_);
                if (n == 0)
                    return failed(Errc::io_error, job_->what + ": the source ended after " +
                                                      std::to_string(done_bytes_) + " of " + std::to_string(total_) +
                                                      " bytes");
                const auto t0 = std::chrono::steady_clock::now();
                encoder_->encode(bytes, n, true, out_);
                policy_->encoded(n, out_.pending(),
                                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), true);
                done_bytes_ += n;
            }
        }
        const IoResult r = out_.drain(*io_);
        wire_bytes_ += r.bytes();
        if (r.bytes() > 0) touch();
        if (r.blocked()) {
            report_progress(false);
            return Step::wait;
        }
        if (!r.done()) {
            phase_ = Phase::response;  // the store may have answered why
            return Step::next;
        }
        report_progress(false);
    }
    report_progress(true);
    queue_trailer();
    phase_ = Phase::push_trailer;
    return Step::next;
}

DataConnection::Step DataConnection::read_pull_frames()
{
    if (!frames_ || !decoder_)
        return failed(Errc::protocol_error, job_->what + ": the store answered with compressed frames, which this "
                                                         "pull did not ask for");
    while (done_bytes_ < total_) {
        auto [data, room] = job_->sink->window();
        const std::uint64_t left = total_ - done_bytes_;
        std::size_t produced = 0;
        const IoResult r =
            decoder_->step(*io_, data, static_cast<std::size_t>(std::min<std::uint64_t>(room, left)), left, produced);
        wire_bytes_ = decoder_->wire_bytes();
        if (produced > 0) {
            if (job_->verify) hash_.update(data, produced);
            job_->sink->commit(produced);
            done_bytes_ += produced;
        }
        if (r.bytes() > 0 || produced > 0) touch();
        if (r.done()) continue;
        if (r.blocked()) {
            report_progress(false);
            return Step::wait;
        }
        if (r.failed() && r.error_number() == EBADMSG)
            // The sink is abandoned: nothing of this pull is kept.
            return failed(Errc::protocol_error, job_->what + ": corrupt compressed frame from " + endpoint_ + " after " +
                                                    std::to_string(done_bytes_) + " of " + std::to_string(total_) +
                                                    " bytes: " + r.text() + "; nothing was kept");
        return lost("closed", r);
    }
    report_progress(true);
    if (job_->verify && !pull_checksum_matches()) return Step::stop;
    job_->sink->finish();
    complete(true);
    return Step::stop;
}

}  // namespace blobstreaming::dataplane
