#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <system_error>

namespace blobstreaming {

/// Streams the bytes of one committed Blob version from a store that keeps
/// them neither in memory nor in a file of its own (an object store): the
/// third form of a BlobRange (BlobRange.h), read in pieces through a bounded
/// buffer of the caller's.
///
/// One thread at a time; copies of a BlobRange share their reader. A read
/// may block while the store fetches the bytes (an implementation reads
/// ahead so that the next read usually does not); read_or_wait() never does.
class BlobReader {
public:
    virtual ~BlobReader() = default;

    /// Copies bytes of the Blob from Blob offset `offset` (within the
    /// range it was made for) into `out`: at least 1 and at most `max`,
    /// fewer at the end of the range or of a piece the store fetched.
    /// Returns how many; 0 with `ec` set on failure (Errc::io_error,
    /// Errc::corrupt), error_message() saying what failed and why.
    virtual std::size_t read(std::uint64_t offset, std::uint8_t* out, std::size_t max, std::error_code& ec) = 0;

    /// read() that does not wait for the store: when the bytes at `offset`
    /// are still on their way, returns 0 with `ec` clear and `pending` true,
    /// and `wake` runs (once, on any thread) when they may have arrived; the
    /// caller then calls again. How the daemon's reactor thread reads, which
    /// serves every other connection meanwhile. By default read(), never
    /// pending.
    virtual std::size_t read_or_wait(std::uint64_t offset, std::uint8_t* out, std::size_t max, std::error_code& ec,
                                     bool& pending, const std::function<void()>& wake)
    {
        (void)wake;
        pending = false;
        return read(offset, out, max, ec);
    }

    /// Letting the reader go now would wait for the store: a read it
    /// started is still on its way and must complete before its buffer may
    /// go (a RadosStore's read-ahead, up to the cluster's operation timeout
    /// when an OSD stops answering). The daemon then lets it go on a thread
    /// of its own, not on the reactor thread. By default false.
    virtual bool close_waits() const noexcept { return false; }

    /// The message of the last failed read(); "" before any.
    virtual const std::string& error_message() const noexcept = 0;
};

}  // namespace blobstreaming
