#include <blobstreaming/blobstore/Reservation.h>

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <algorithm>
#include <cstring>

namespace blobstreaming {

Reservation::Window Reservation::window(std::size_t max, std::error_code& ec)
{
    ec.clear();
    last_ = {};
    if (state_ != State::open) {
        ec = Errc::reservation_closed;
        return {};
    }
    if (parted_) {
        ec = Errc::invalid_argument;
        error_message_ = "reservation for " + quote_name(name_) + " is filled in parts: bytes go to window_at()";
        return {};
    }
    if (max == 0) return {};
    if (remaining() == 0 && (!open_ended() || !grow(ec))) return {};
    if (hash_.algorithm() == ChecksumAlgorithm::sha256) {
        hash_.run_in_background();  // a no-op when running, inline when no thread can be had
        if (written_ > hash_base_ + kMaxHashLag) hash_.wait_hashed(written_ - hash_base_ - kMaxHashLag);
    }
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(max, remaining()));
    last_ = do_window(written_, want, ec);
    if (ec) last_ = {};
    return last_;
}

Reservation::Window Reservation::window_at(std::uint64_t offset, std::size_t max, std::error_code& ec)
{
    ec.clear();
    last_ = {};
    if (state_ != State::open) {
        ec = Errc::reservation_closed;
        return {};
    }
    if (!parted_ && !takes_parts()) {
        ec = Errc::invalid_argument;
        error_message_ = "reservation for " + quote_name(name_) + " cannot be filled in parts (" +
                         (written_ > 0 ? std::string("it is being filled in order")
                          : hash_.algorithm() != ChecksumAlgorithm::crc32c
                              ? "its checksum is " + std::string(to_string(hash_.algorithm())) +
                                    ", which does not combine from parts; CRC32C does"
                              : std::string("its store writes in order only")) +
                         ")";
        return {};
    }
    if (offset >= size_) {
        ec = Errc::invalid_range;
        error_message_ = "reservation for " + quote_name(name_) + ": byte " + std::to_string(offset) +
                         " is past its end (" + std::to_string(size_) + " bytes)";
        return {};
    }
    parted_ = true;
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(max, size_ - offset));
    if (want == 0) return {};
    last_ = do_window(offset, want, ec);
    if (ec) last_ = {};
    last_at_ = offset;
    return last_;
}

std::error_code Reservation::advance_at(std::size_t n)
{
    if (state_ != State::open) return Errc::reservation_closed;
    if (!parted_ || n > last_.size) return Errc::invalid_range;
    if (n > 0) {
        if (auto ec = do_advance(last_.data, n, last_at_)) {
            last_ = {};
            return ec;
        }
    }
    last_at_ += n;
    last_.data += n;
    last_.size -= n;
    return {};
}

std::error_code Reservation::do_read_back(std::uint64_t, std::uint8_t*, std::size_t) const
{
    return std::make_error_code(std::errc::operation_not_supported);
}

std::error_code Reservation::advance(std::size_t n)
{
    if (state_ != State::open) return Errc::reservation_closed;
    if (n > last_.size) return Errc::invalid_range;
    if (n > 0) {
        if (auto ec = do_advance(last_.data, n, written_)) {
            last_ = {};
            return ec;
        }
    }
    hash_.update(last_.data, n);
    written_ += n;
    last_.data += n;
    last_.size -= n;
    return {};
}

bool Reservation::make_open_ended(std::uint64_t max, std::string& why)
{
    if (state_ != State::open || written_ != 0 || parted_ || max == 0 || max < size_) {
        why = "reservation for " + quote_name(name_) + " cannot become open-ended: " +
              (state_ != State::open      ? std::string("it is closed")
               : written_ != 0 || parted_ ? std::string("bytes were written to it")
                                          : "its maximum of " + std::to_string(max) + " bytes is below the " +
                                                std::to_string(size_) + " it holds");
        return false;
    }
    if (!can_grow()) {
        why = "its store cannot grow a reservation as the bytes arrive: give the Blob's size";
        return false;
    }
    if (!do_open_ended(max, why)) return false;
    max_size_ = max;
    return true;
}

bool Reservation::grow(std::error_code& ec)
{
    if (size_ >= max_size_) {
        ec = fail(Errc::out_of_space, "no room for blob " + quote_name(name_) +
                                          ": a push of unknown length may take at most " + std::to_string(max_size_) +
                                          " bytes here, and all of them were received");
        return false;
    }
    const std::uint64_t at_most = size_ + std::min(kGrowStep, max_size_ - size_);
    const std::uint64_t grown = do_grow(at_most, ec);
    if (ec) return false;
    size_ = grown;
    return true;
}

std::uint64_t Reservation::do_grow(std::uint64_t, std::error_code& ec)
{
    ec = fail(Errc::invalid_argument, "reservation for " + quote_name(name_) + " cannot grow");
    return 0;
}

std::error_code Reservation::end_stream()
{
    if (state_ != State::open) return Errc::reservation_closed;
    if (!open_ended()) return Errc::invalid_argument;
    last_ = {};
    do_shrink(written_);
    size_ = written_;
    max_size_ = 0;
    return {};
}

std::error_code Reservation::write(const void* data, std::size_t size)
{
    if (state_ != State::open) return Errc::reservation_closed;
    if (size > remaining() && !open_ended()) return Errc::invalid_range;
    const auto* p = static_cast<const std::uint8_t*>(data);
    while (size > 0) {
        std::error_code ec;
        const Window w = window(size, ec);
        if (ec) return ec;
        std::memcpy(w.data, p, w.size);
        if (auto e = advance(w.size)) return e;
        p += w.size;
        size -= w.size;
    }
    return {};
}

bool Reservation::adopt(std::shared_ptr<const std::uint8_t> bytes, const Checksum* verified)
{
    if (state_ != State::open || parted_ || written_ != 0 || size_ == 0 || open_ended() || !bytes) return false;
    if (verified && verified->algorithm != hash_.algorithm()) verified = nullptr;  // hashed here instead
    if (!do_adopt(bytes)) return false;
    if (verified) adopted_ = *verified;
    else hash_.update(bytes.get(), static_cast<std::size_t>(size_));
    written_ = size_;
    return true;
}

BlobInfo Reservation::commit(const Checksum* expected)
{
    if (state_ != State::open)
        throw Error(Errc::reservation_closed, "commit " + quote_name(name_) + ": the reservation was already " +
                                                  (state_ == State::committed ? "committed" : "aborted"));
    if (parted_)
        throw Error(Errc::incomplete, "commit " + quote_name(name_) +
                                          ": the reservation was filled in parts; it commits with their checksum");
    if (open_ended())
        throw Error(Errc::incomplete, "commit " + quote_name(name_) + ": the push of unknown length has not ended (" +
                                          std::to_string(written_) + " bytes received so far)");
    if (written_ != size_)
        throw Error(Errc::incomplete, "commit " + quote_name(name_) + ": " + std::to_string(written_) + " of " +
                                          std::to_string(size_) + " bytes written");
    if (adopted_) {
        hash_.stop();
        return finish_commit(*adopted_, expected);
    }
    return finish_commit(hash_.finish(), expected);
}

BlobInfo Reservation::commit_assembled(const Checksum& assembled, const Checksum* expected)
{
    if (state_ != State::open)
        throw Error(Errc::reservation_closed, "commit " + quote_name(name_) + ": the reservation was already " +
                                                  (state_ == State::committed ? "committed" : "aborted"));
    if (!parted_ && size_ > 0)
        throw Error(Errc::incomplete, "commit " + quote_name(name_) + ": the reservation was not filled in parts");
    hash_.stop();
    return finish_commit(assembled, expected);
}

BlobInfo Reservation::finish_commit(const Checksum& checksum, const Checksum* expected)
{
    if (expected && expected->algorithm != checksum.algorithm) {
        abort();
        throw Error(Errc::digest_mismatch, "commit " + quote_name(name_) + ": the sender announced a " +
                                               std::string(to_string(expected->algorithm)) +
                                               " checksum, the push was granted for " +
                                               std::string(to_string(checksum.algorithm)) + "; nothing was stored");
    }
    if (expected && *expected != checksum) {
        abort();
        throw Error(Errc::digest_mismatch, "commit " + quote_name(name_) + ": the received bytes have checksum " +
                                               checksum.text() + ", the sender announced " + expected->text() +
                                               "; nothing was stored");
    }
    try {
        BlobInfo info = do_commit(checksum);
        state_ = State::committed;
        if (on_commit_) on_commit_(info);
        return info;
    } catch (...) {
        abort();
        throw;
    }
}

std::error_code Reservation::do_advance(const std::uint8_t*, std::size_t, std::uint64_t) { return {}; }

std::error_code Reservation::fail(std::error_code ec, std::string message)
{
    error_message_ = std::move(message);
    return ec;
}

void Reservation::suspend() noexcept
{
    if (state_ != State::open) return;
    last_ = {};
    hash_.settle();
    do_suspend();
}

void Reservation::abort() noexcept
{
    if (state_ != State::open) return;
    state_ = State::aborted;
    last_ = {};
    hash_.stop();
    do_abort();
}

}  // namespace blobstreaming
