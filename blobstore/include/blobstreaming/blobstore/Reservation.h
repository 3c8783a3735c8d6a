#pragma once

#include <blobstreaming/blobstore/BlobInfo.h>
#include <blobstreaming/blobstore/Sha256.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>

namespace blobstreaming {

/// Writable space for one new Blob of a fixed size, invisible until commit.
///
/// Bytes are appended in order. The zero-copy way is `window()` (a region of
/// the store's own memory or mapped file to receive into, e.g. with recv())
/// followed by `advance(n)`; `write()` copies from a caller's buffer. The
/// SHA-256 is computed as bytes are advanced over, never in a second pass.
///
/// Exactly one of commit() or abort() ends a reservation; the destructor
/// aborts one that is still open. A reservation may outlive its Store object.
/// One reservation is used by one thread at a time.
class Reservation {
public:
    struct Window {
        std::uint8_t* data = nullptr;
        std::size_t size = 0;
    };

    virtual ~Reservation() = default;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;

    const std::string& name() const noexcept { return name_; }
    std::uint64_t size() const noexcept { return size_; }
    std::uint64_t written() const noexcept { return written_; }
    std::uint64_t remaining() const noexcept { return size_ - written_; }
    bool is_open() const noexcept { return state_ == State::open; }

    /// Where the next bytes go: at most `max` bytes (fewer at the end of the
    /// reservation or of an internal mapping window). size 0 only when the
    /// reservation is full or closed, or on error (`ec` set).
    Window window(std::size_t max, std::error_code& ec);

    /// Declares that the first `n` bytes of the last window now hold data.
    /// Errc::invalid_range if n exceeds that window.
    std::error_code advance(std::size_t n);

    /// Copies `size` bytes in (through window()/advance()).
    std::error_code write(const void* data, std::size_t size);

    /// Makes the Blob visible, durably and atomically, and returns what the
    /// store now holds. Throws Error: Errc::incomplete when not all bytes
    /// were written, Errc::digest_mismatch when `expected` is given and
    /// differs (the reservation is then aborted), Errc::reservation_closed
    /// after commit() or abort(), Errc::already_exists when the name was
    /// committed meanwhile and the reservation does not replace.
    BlobInfo commit(const Digest* expected = nullptr);

    /// Discards the bytes and releases the space. No-op when already closed.
    void abort() noexcept;

protected:
    Reservation(std::string name, std::uint64_t size) : name_(std::move(name)), size_(size) {}

    /// A writable region for bytes starting at `offset` (< size()), at most
    /// `max` bytes.
    virtual Window do_window(std::uint64_t offset, std::size_t max, std::error_code& ec) = 0;
    /// Publishes the complete Blob with its digest.
    virtual BlobInfo do_commit(const Digest& digest) = 0;
    virtual void do_abort() noexcept = 0;

private:
    enum class State { open, committed, aborted };

    std::string name_;
    std::uint64_t size_;
    std::uint64_t written_ = 0;
    Window last_{};
    Sha256 sha_;
    State state_ = State::open;
};

}  // namespace blobstreaming
