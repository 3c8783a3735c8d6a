/// FlightReader (FlightReader.h): a read that follows a fill, then its commit.
#include "FlightReader.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>

namespace blobstreaming::detail {

std::error_code FlightReader::fail(Errc code, std::string message)
{
    message_ = std::move(message);
    return code;
}

std::size_t FlightReader::read(std::uint64_t offset, std::uint8_t* out, std::size_t max, std::error_code& ec)
{
    struct Woken {
        std::mutex mutex;
        std::condition_variable cv;
        bool woken = false;
    };
    for (;;) {
        auto woken = std::make_shared<Woken>();
        bool pending = false;
        const std::size_t n = read_or_wait(offset, out, max, ec, pending, [woken] {
            {
                std::lock_guard lock(woken->mutex);
                woken->woken = true;
            }
            woken->cv.notify_all();
        });
        if (!pending) return n;
        // The fill lands bytes, commits or fails: each wakes its followers.
        std::unique_lock lock(woken->mutex);
        woken->cv.wait(lock, [&] { return woken->woken; });
    }
}

std::size_t FlightReader::read_or_wait(std::uint64_t offset, std::uint8_t* out, std::size_t max,
                                       std::error_code& ec, bool& pending, const std::function<void()>& wake)
{
    ec.clear();
    pending = false;
    if (offset < start_ || offset >= end_ || max == 0) {
        ec = fail(Errc::invalid_range, "read " + quote_name(name_) + ": byte " + std::to_string(offset) +
                                           " is outside the range [" + std::to_string(start_) + ", " +
                                           std::to_string(end_) + ")");
        return 0;
    }
    max = static_cast<std::size_t>(std::min<std::uint64_t>(max, end_ - offset));
    if (flight_) {
        const BlobInFlight::Read r = flight_->read(offset, out, max, wake);
        switch (r.state) {
        case BlobInFlight::State::bytes: return r.bytes;
        case BlobInFlight::State::wait: pending = true; return 0;
        case BlobInFlight::State::failed: {
            const Error e = flight_->error();
            ec = fail(e.code(), std::string("the fill it followed failed: ") + e.what());
            return 0;
        }
        case BlobInFlight::State::committed:
            if ((ec = open_committed())) return 0;
            break;
        }
    }
    return from_committed(offset, out, max, ec, pending, wake);
}

std::error_code FlightReader::open_committed()
{
    const BlobInfo info = flight_->committed();
    try {
        committed_ = store_.read(info.name, start_, end_);
    } catch (const Error& e) {
        if (e.code() != Errc::no_such_blob && e.code() != Errc::invalid_range) return fail(e.code(), e.what());
        return fail(Errc::blob_changed, "read " + quote_name(info.name) + ": the Blob was " +
                                            (e.code() == Errc::no_such_blob ? "removed" : "replaced") +
                                            " after the fill it followed committed");
    }
    if (!same_version(committed_.blob(), info)) {
        const BlobInfo now = committed_.blob();
        committed_ = BlobRange{};
        return fail(Errc::blob_changed, "read " + quote_name(info.name) +
                                            ": the Blob was replaced after the fill it followed committed; the "
                                            "store now holds " +
                                            describe_version(now));
    }
    flight_.reset();
    return {};
}

std::size_t FlightReader::from_committed(std::uint64_t offset, std::uint8_t* out, std::size_t max,
                                         std::error_code& ec, bool& pending, const std::function<void()>& wake)
{
    const std::uint64_t at = offset - committed_.start();
    if (committed_.data()) {
        std::memcpy(out, committed_.data() + at, max);
        return max;
    }
    if (committed_.fd() >= 0) {
        for (;;) {
            const ssize_t r =
                ::pread(committed_.fd(), out, max, static_cast<off_t>(committed_.file_offset() + at));
            if (r < 0 && errno == EINTR) continue;
            if (r > 0) return static_cast<std::size_t>(r);
            ec = fail(Errc::io_error, "read " + quote_name(committed_.blob().name) + ": its file " +
                                          (r < 0 ? std::string("cannot be read: ") + std::strerror(errno)
                                                 : std::string("ended early")));
            return 0;
        }
    }
    if (BlobReader* reader = committed_.reader()) {
        const std::size_t n = reader->read_or_wait(offset, out, max, ec, pending, wake);
        if (ec) message_ = reader->error_message();
        return n;
    }
    ec = fail(Errc::io_error, "read " + quote_name(committed_.blob().name) + ": the store gave an empty view");
    return 0;
}

}  // namespace blobstreaming::detail
