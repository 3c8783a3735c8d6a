/// The receive path of pushes and parts: the body into the reservation's
/// window at most a dispatch budget at a time, the trailer, then the kind's
/// finish().
#include "ReceiveTransfer.h"

#include "DataPath.h"

#include <algorithm>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace blobstreaming::server {

using data_path::bytes_of;
using data_path::kChunk;
using data_path::kDispatchBudget;

namespace {

/// The Errc of a store's failure to take bytes: its own when it is one of
/// ours (out_of_space), else io_error.
Errc store_errc(const std::error_code& ec)
{
    return ec.category() == error_category() ? static_cast<Errc>(ec.value()) : Errc::io_error;
}

std::string store_error_text(const Reservation& r, const std::error_code& ec)
{
    return r.error_message().empty() ? ec.message() : r.error_message();
}

}  // namespace

Step ReceiveTransfer::on_readable() { return in_trailer_ ? read_trailer() : read_body(); }

std::string ReceiveTransfer::received_text() const
{
    return request_.streamed ? std::to_string(body_done_) + " bytes of a push of unknown length"
                             : bytes_of(body_done_, request_.length);
}

ReceiveTransfer::ChunkStep ReceiveTransfer::read_chunk_header()
{
    if (chunk_header_.size() == 0) chunk_header_.expect(protocol::kChunkHeaderSize);  // the first
    const IoResult r = chunk_header_.fill(link_.io());
    if (r.bytes() > 0) link_.progress();
    if (r.blocked()) return ChunkStep::wait;
    if (!r.done()) {
        fail(Errc::transfer_failed,
             r.eof() ? "the peer closed the connection after " + received_text() + ", before its end"
                     : "receive failed after " + received_text() + ": " + r.text(),
             false);
        return ChunkStep::failed;
    }
    std::uint32_t length = 0;
    std::string why;
    if (protocol::decode_chunk_header(chunk_header_.first<protocol::kChunkHeaderSize>(), length, why)) {
        fail(Errc::protocol_error, why + " after " + received_text(), true);
        return ChunkStep::failed;
    }
    chunk_header_.expect(protocol::kChunkHeaderSize);
    if (length > 0) {
        chunk_left_ = length;
        return ChunkStep::next;
    }
    body_ended_ = true;
    if (auto ec = end_of_body()) {
        fail(Errc::transfer_failed, into().error_message().empty() ? ec.message() : into().error_message(), true);
        return ChunkStep::failed;
    }
    return ChunkStep::next;
}

Step ReceiveTransfer::read_body()
{
    if (request_.compress) return read_frames();
    Channel& io = link_.io();
    std::uint64_t budget = kDispatchBudget;
    const bool streamed = request_.streamed;
    while (streamed ? !body_ended_ : body_done_ < request_.length) {
        if (cancelled()) {
            fail(Errc::cancelled, "cancelled on the control plane after " + received_text(), true);
            return Step::close;
        }
        if (streamed && chunk_left_ == 0) {
            switch (read_chunk_header()) {
            case ChunkStep::next: continue;
            case ChunkStep::wait: return Step::read;
            case ChunkStep::failed: return Step::close;
            }
        }
        // More later, after the other connections; but bytes already
        // decrypted would not make the socket readable again: take them.
        const std::uint64_t allowance = budget > 0 ? budget : io.pending();
        if (allowance == 0) return Step::read;
        std::error_code ec;
        const std::uint64_t left = streamed ? chunk_left_ : request_.length - body_done_;
        const std::uint64_t want = std::min<std::uint64_t>({kChunk, left, allowance});
        if (wait_for_store()) return Step::away;
        const Reservation::Window w = window(static_cast<std::size_t>(want), ec);
        if (ec || w.size == 0) return no_window(ec);
        const IoResult r = read_some(io, w.data, w.size);
        if (r.done()) {
            if (auto adv = advance(w.data, r.bytes())) return not_taken(adv);
            body_done_ += r.bytes();
            if (streamed) chunk_left_ -= r.bytes();
            budget -= std::min<std::uint64_t>(budget, r.bytes());
            link_.progress();
            continue;
        }
        if (r.blocked()) return acknowledge_and_wait();
        return broken(r);
    }
    return body_received();
}

Step ReceiveTransfer::no_window(const std::error_code& ec)
{
    fail(ec ? store_errc(ec) : Errc::transfer_failed,
         "the store cannot take byte " + std::to_string(request_.offset + body_done_) + ": " +
             (ec ? store_error_text(into(), ec) : std::string("no room left in the reservation")),
         true);
    return Step::close;
}

Step ReceiveTransfer::not_taken(const std::error_code& ec)
{
    // The store writes the bytes out here on some file systems: a full disk
    // is out_of_space (and the reservation is aborted).
    fail(store_errc(ec), store_error_text(into(), ec), true);
    return Step::close;
}

Step ReceiveTransfer::acknowledge_and_wait()
{
    // Everything received so far is consumed: acknowledge it now. A sender
    // with a send buffer smaller than the MSS (64 KiB on loopback) otherwise
    // waits for the delayed ACK, ~40 ms per buffer (a 16 KiB SO_SNDBUF push
    // ran at 1.6 MB/s).
    const int one = 1;
    ::setsockopt(link_.io().fd(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
    return Step::read;
}

Step ReceiveTransfer::broken(const IoResult& r)
{
    fail(Errc::transfer_failed,
         r.eof() ? "the peer closed the connection after " + received_text()
                 : "receive failed after " + received_text() + ": " + r.text(),
         false);
    return Step::close;
}

Step ReceiveTransfer::body_received()
{
    in_trailer_ = true;
    trailer_.expect(protocol::kTrailerSize);
    return read_trailer();
}

Step ReceiveTransfer::read_trailer()
{
    const IoResult r = trailer_.fill(link_.io());
    if (r.bytes() > 0) link_.progress();
    if (r.done()) return finish();
    if (r.blocked()) return Step::read;
    fail(Errc::transfer_failed,
         r.eof() ? "the peer closed the connection after all " + std::to_string(body_done_) +
                       " bytes but before the checksum trailer"
                 : "receive of the checksum trailer failed: " + r.text(),
         false);
    return Step::close;
}

}  // namespace blobstreaming::server
