/// RadosReader (RadosReader.h): pieces of a Blob's data objects, one read
/// ahead with librados' asynchronous read.
#include "RadosReader.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>

namespace blobstreaming::detail {
namespace {

using namespace rados_index;

class RadosReader final : public BlobReader {
public:
    RadosReader(std::shared_ptr<RadosStore::State> state, BlobRecord record, std::uint64_t start, std::uint64_t end)
        : state_(std::move(state)), record_(std::move(record)), start_(start), end_(end)
    {}

    std::size_t read(std::uint64_t offset, std::uint8_t* out, std::size_t max, std::error_code& ec) override
    {
        bool pending = false;
        return read_or_wait(offset, out, max, ec, pending, nullptr);
    }

    /// read() and read_or_wait(): without `wake`, waits for the piece.
    std::size_t read_or_wait(std::uint64_t offset, std::uint8_t* out, std::size_t max, std::error_code& ec,
                             bool& pending, const std::function<void()>& wake) override
    {
        ec.clear();
        pending = false;
        if (offset < start_ || offset >= end_ || max == 0) {
            ec = fail(Errc::invalid_range, "read " + quote_name(record_.info.name) + ": byte " +
                                               std::to_string(offset) + " is outside the range [" +
                                               std::to_string(start_) + ", " + std::to_string(end_) + ")");
            return 0;
        }
        if (!current_.holds(offset)) {
            // A call after a pending one finds its piece on its way already.
            const bool on_its_way =
                !current_.ready && current_.start == offset && (current_.read.armed() || current_.submit_error);
            if (!on_its_way) {
                if (next_.read.armed() && next_.start == offset) {
                    std::swap(current_, next_);
                } else {
                    next_.read.reset();  // read ahead for another offset: not needed
                    fetch(current_, offset);
                }
            }
            if (wake && current_.read.armed() && current_.signal && current_.signal->wait_with(wake)) {
                pending = true;
                return 0;
            }
            if (!complete(current_, ec)) return 0;
            if (current_.start + current_.length < end_) fetch(next_, current_.start + current_.length);
        }
        const std::size_t at = static_cast<std::size_t>(offset - current_.start);
        const std::size_t n = std::min(max, current_.length - at);
        std::memcpy(out, current_.bytes.get() + at, n);
        return n;
    }

    /// A piece still on its way: destroying it waits for librados, which
    /// writes into its bytes until the read completes.
    bool close_waits() const noexcept override { return !current_.read.ready() || !next_.read.ready(); }

    const std::string& error_message() const noexcept override { return message_; }

private:
    /// A piece's read has completed: runs the wake-up a reader left, or
    /// lets the next wait_with() see it done. Shared with librados'
    /// completion callback, which holds its own reference until it ran.
    class Signal {
    public:
        /// False when the read has completed already (do not wait); true
        /// when `wake` will run once it does.
        bool wait_with(const std::function<void()>& wake)
        {
            std::lock_guard lock(mutex_);
            if (done_) return false;
            wake_ = wake;
            return true;
        }
        void fire()
        {
            std::function<void()> wake;
            {
                std::lock_guard lock(mutex_);
                done_ = true;
                wake.swap(wake_);
            }
            if (wake) wake();
        }

    private:
        std::mutex mutex_;
        bool done_ = false;
        std::function<void()> wake_;
    };

    /// librados' completion callback (a librados thread): `arg` is a
    /// heap-held reference to the piece's Signal, let go here.
    static void completed(rados_completion_t, void* arg)
    {
        std::unique_ptr<std::shared_ptr<Signal>> signal(static_cast<std::shared_ptr<Signal>*>(arg));
        (*signal)->fire();
    }

    /// Bytes [start, start + length) of the Blob, within one data object.
    struct Piece {
        std::unique_ptr<std::uint8_t[]> bytes;
        std::uint64_t start = 0;
        std::size_t length = 0;
        bool ready = false;              ///< bytes hold the piece
        int submit_error = 0;            ///< the read could not even start
        std::shared_ptr<Signal> signal;  ///< of `read`'s completion
        rados::Completion read;          ///< after `bytes` and `signal`: waited for before they go

        bool holds(std::uint64_t offset) const noexcept { return ready && offset >= start && offset < start + length; }
    };

    std::uint32_t chunk() const noexcept { return record_.chunk; }

    /// Starts reading the piece that begins at `offset` into `p`.
    void fetch(Piece& p, std::uint64_t offset)
    {
        p.read.reset();
        if (!p.bytes) {
            const auto size = static_cast<std::size_t>(std::min<std::uint64_t>(chunk(), end_ - start_));
            p.bytes.reset(new (std::nothrow) std::uint8_t[size]);
        }
        p.start = offset;
        p.length = static_cast<std::size_t>(std::min<std::uint64_t>(chunk() - offset % chunk(), end_ - offset));
        p.ready = false;
        p.submit_error = 0;
        if (!p.bytes) {
            p.submit_error = -ENOMEM;
            return;
        }
        const std::string oid = data_object(record_.data, offset / chunk());
        p.signal = std::make_shared<Signal>();
        auto arg = std::make_unique<std::shared_ptr<Signal>>(p.signal);
        rados_completion_t c = p.read.arm(&RadosReader::completed, arg.get());
        const int rc = c ? rados_aio_read(state_->io(), oid.c_str(), c, reinterpret_cast<char*>(p.bytes.get()),
                                          p.length, offset % chunk())
                         : -ENOMEM;
        if (rc < 0) {
            p.read.reset();  // never started: the callback will not run, `arg` goes here
            p.submit_error = rc;
            p.signal.reset();
            return;
        }
        arg.release();  // the callback's now
    }

    /// Waits for `p`; false (ec, message) when it does not hold its bytes.
    bool complete(Piece& p, std::error_code& ec)
    {
        const int rc = p.submit_error ? p.submit_error : p.read.wait();
        const std::string oid = data_object(record_.data, p.start / chunk());
        const std::string what = "read " + quote_name(record_.info.name) + ": " + state_->store() + ": ";
        if (rc == -ENOENT) {
            ec = fail(Errc::corrupt,
                      what + "data object " + oid +
                          " is missing (deleted behind the store's back, or this version was replaced or removed "
                          "more than the grace of " +
                          fmt::format("{:g}", static_cast<double>(state_->options.grace.count()) / 1000.0) + " s ago)");
            return false;
        }
        if (rc < 0) {
            ec = fail(RadosStore::State::errc_of(rc), what + "reading bytes [" + std::to_string(p.start) + ", " +
                                                          std::to_string(p.start + p.length) + ") from " + oid +
                                                          " failed: " + rados::errno_text(rc));
            return false;
        }
        if (static_cast<std::size_t>(rc) < p.length) {
            ec = fail(Errc::corrupt, what + "data object " + oid + " holds " + std::to_string(rc) + " of the " +
                                         std::to_string(p.length) + " bytes expected from its offset " +
                                         std::to_string(p.start % chunk()) + " (truncated behind the store's back)");
            return false;
        }
        p.ready = true;
        return true;
    }

    std::error_code fail(Errc code, std::string message)
    {
        message_ = std::move(message);
        return code;
    }

    std::shared_ptr<RadosStore::State> state_;
    BlobRecord record_;
    std::uint64_t start_;
    std::uint64_t end_;
    Piece current_;  ///< the piece read() copies from
    Piece next_;     ///< the one after it, on its way
    std::string message_;
};

}  // namespace

std::shared_ptr<BlobReader> make_rados_reader(std::shared_ptr<RadosStore::State> state, rados_index::BlobRecord record,
                                              std::uint64_t start, std::uint64_t end)
{
    return std::make_shared<RadosReader>(std::move(state), std::move(record), start, end);
}

}  // namespace blobstreaming::detail
