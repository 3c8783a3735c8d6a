#include "SourceReader.h"

#include <blobstreaming/common/Error.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>

namespace blobstreaming::corba {

namespace {

/// How often the pool checks its transfers for inactivity: a tenth of the
/// timeout, within [10 ms, 1 s].
std::chrono::milliseconds tick_period(std::chrono::milliseconds timeout)
{
    return std::clamp(timeout / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

/// How long the loop waits for an event before it looks at quit_.
constexpr std::chrono::milliseconds kWakeUp{200};

}  // namespace

SourceReader::SourceReader(dataplane::PoolOptions options)
    : loop_([this] { pool_.tick(); }, tick_period(options.timeout)), pool_(loop_, std::move(options))
{
    thread_ = std::thread([this] {
        while (!quit_.load()) loop_.run_once(kWakeUp);
    });
}

SourceReader::~SourceReader()
{
    stop();
    quit_.store(true);
    loop_.post([] {});  // wakes the loop now
    thread_.join();
}

dataplane::JobOutcome SourceReader::run(std::unique_ptr<dataplane::TransferJob> job)
{
    auto promise = std::make_shared<std::promise<dataplane::JobOutcome>>();
    std::future<dataplane::JobOutcome> outcome = promise->get_future();
    job->done = [promise](dataplane::JobOutcome o) { promise->set_value(std::move(o)); };
    if (stopping_.load()) {
        dataplane::JobOutcome o;
        o.error = make_error_code(Errc::cancelled);
        o.message = job->what + ": cancelled: the store is shutting down";
        return o;
    }
    auto held = std::make_shared<std::unique_ptr<dataplane::TransferJob>>(std::move(job));
    loop_.post([this, held] {
        std::unique_ptr<dataplane::TransferJob> owned = std::move(*held);
        if (stopping_.load()) {
            dataplane::JobOutcome o;
            o.error = make_error_code(Errc::cancelled);
            o.message = owned->what + ": cancelled: the store is shutting down";
            owned->done(std::move(o));
            return;
        }
        pool_.submit(std::move(owned));
    });
    return outcome.get();
}

void SourceReader::stop() noexcept
{
    if (stopping_.exchange(true)) return;
    try {
        loop_.post([this] { pool_.cancel_all(); });
    } catch (...) {
        // Out of memory: the jobs still end by the pool's timeout.
    }
}

}  // namespace blobstreaming::corba
