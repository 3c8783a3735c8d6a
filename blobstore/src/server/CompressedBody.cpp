/// Compression on the wire, the store's side (docs/PROTOCOL.md,
/// "Compression on the wire"): a push's compressed frames decoded straight
/// into the reservation's windows, where the reservation checksums the
/// uncompressed bytes as it does for a raw body; a pull's bytes encoded
/// into frames. The raw paths (sendfile, reads into the window) are not
/// touched: a transfer without Request::compress never comes here.
#include "PullTransfer.h"
#include "ReceiveTransfer.h"

#include "DataPath.h"

#include <blobstreaming/common/BlobName.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace blobstreaming::server {

using data_path::bytes_of;
using data_path::kChunk;
using data_path::kDispatchBudget;

std::optional<Step> ReceiveTransfer::refuse_compressed()
{
    if (!request_.compress || server_.config.compress) return std::nullopt;
    const std::string why = "push " + quote_name(binding_.blob) +
                            ": this store takes no compressed data connections (blobstored --compress none); "
                            "push with --compress none";
    end(false, why);
    return link_.refuse(Errc::refused, why);
}

Step ReceiveTransfer::read_frames()
{
    if (!frames_) {
        frames_ = std::make_unique<wire::FrameDecoder>();
        compressed_ = true;
    }
    Channel& io = link_.io();
    std::uint64_t budget = kDispatchBudget;
    while (body_done_ < request_.length) {
        if (cancelled()) {
            fail(Errc::cancelled, "cancelled on the control plane after " + received_text(), true);
            return Step::close;
        }
        // Past the budget, only what needs no readable event: TLS bytes
        // already decrypted, or a frame that is all in memory.
        if (budget == 0 && io.pending() == 0 && !frames_->in_frame()) return Step::read;
        if (wait_for_store()) return Step::away;
        std::error_code ec;
        const std::uint64_t left = request_.length - body_done_;
        const Reservation::Window w = window(static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, left)), ec);
        if (ec || w.size == 0) return no_window(ec);
        std::size_t produced = 0;
        const IoResult r = frames_->step(io, w.data, w.size, left, produced);
        wire_bytes_ = frames_->wire_bytes();
        if (produced > 0) {
            if (auto adv = advance(w.data, produced)) return not_taken(adv);
            body_done_ += produced;
            budget -= std::min<std::uint64_t>(budget, produced);
        }
        if (r.bytes() > 0 || produced > 0) link_.progress();
        if (r.done()) continue;
        if (r.blocked()) return acknowledge_and_wait();
        if (r.failed() && r.error_number() == EBADMSG) {
            // Nothing after a corrupt frame can be trusted: the push fails
            // whole (the reservation is aborted, nothing becomes visible).
            fail(Errc::protocol_error,
                 "corrupt compressed frame after " + received_text() + ": " + r.text() + "; nothing was stored", true);
            return Step::close;
        }
        return broken(r);
    }
    return body_received();
}

PullTransfer::Pump PullTransfer::pump_frames()
{
    std::uint64_t budget = kDispatchBudget;
    const std::uint64_t total = range_.size();
    Channel& io = link_.io();
    while (body_done_ < total || !frames_out_.empty()) {
        if (cancelled()) {
            fail(Errc::cancelled, "cancelled on the control plane after " + bytes_of(body_done_, total), false);
            return Pump::failed;
        }
        if (frames_out_.empty()) {
            if (budget == 0) return Pump::again;
            auto want = static_cast<std::size_t>(std::min<std::uint64_t>(wire::kMaxFrame, total - body_done_));
            const std::uint8_t* bytes = nullptr;
            if (range_.data()) {
                bytes = range_.data() + body_done_;  // memory, or the file's mapping
            } else {
                switch (fill_stream()) {
                case Fill::failed: return Pump::failed;
                case Fill::wait: return Pump::wait;
                case Fill::ready: break;
                }
                want = std::min(want, stream_end_ - stream_at_);
                bytes = stream_.data() + stream_at_;
                stream_at_ += want;
            }
            const bool compress = policy_->compress_next(io.fd());
            const auto before = frames_out_.pending();
            const auto t0 = std::chrono::steady_clock::now();
            try {
                encoder_->encode(bytes, want, compress, frames_out_);
            } catch (const Error& e) {
                fail(e.code(), e.what(), false);
                return Pump::failed;
            }
            policy_->encoded(want, frames_out_.pending() - before,
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), compress);
            body_done_ += want;
            budget -= std::min<std::uint64_t>(budget, want);
        }
        const IoResult r = frames_out_.drain(io);
        wire_bytes_ += r.bytes();
        if (r.bytes() > 0) link_.progress();
        if (r.done()) continue;
        if (r.blocked()) return Pump::again;
        fail(Errc::transfer_failed, "send failed after " + bytes_of(body_done_, total) + ": " + r.text(), false);
        return Pump::failed;
    }
    return Pump::done;
}

}  // namespace blobstreaming::server
