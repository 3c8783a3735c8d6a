// A series of pushes or pulls, pipelined over the single operations
// (SeriesOperation.h), and SeriesResult.
#include "SeriesOperation.h"

#include "InPlaceSeries.h"
#include "PullOperation.h"
#include "PushOperation.h"
#include "TransferResult.h"
#include "UserCallback.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <blobstreaming/transporter/Log.h>

namespace blobstreaming::client {

void SeriesOperation::push(Session::Impl& session, std::vector<PushSlice> slices, PushOptions options, Mode mode,
                           SeriesCompletion done, SliceCompletion slice_done)
{
    run(session, "push", std::move(slices), std::move(options), mode, std::move(done), std::move(slice_done),
        [](Session::Impl& s, std::size_t, PushSlice&& slice, const PushOptions& o, Completion c) {
            PushOperation::start(s, std::move(slice.source), std::move(slice.name), o, std::move(c));
        });
}

void SeriesOperation::pull(Session::Impl& session, std::vector<PullSlice> slices, PullOptions options, Mode mode,
                           SeriesCompletion done, SliceCompletion slice_done)
{
    // Every slice in place from one store: their files asked for in one
    // control call before the first starts (InPlaceSeries.h).
    std::shared_ptr<InPlaceSeries> in_place;
    std::function<void()> prepare;
    std::function<std::string()> detail;
    if (InPlaceSeries::applies(session, slices, options)) {
        std::vector<std::string> names;
        for (const PullSlice& slice : slices) names.push_back(slice.name);
        in_place = std::make_shared<InPlaceSeries>(options.store, std::move(names));
        prepare = [&session, in_place] { in_place->ask(*session.control); };
        detail = [in_place] { return in_place->summary(); };
    }
    run(session, "pull", std::move(slices), std::move(options), mode, std::move(done), std::move(slice_done),
        [in_place](Session::Impl& s, std::size_t index, PullSlice&& slice, const PullOptions& o, Completion c) {
            if (in_place) return in_place->start(s, index, std::move(slice), o, std::move(c));
            PullOperation::start(s, std::move(slice.name), std::move(slice.sink), o, std::move(c));
        },
        std::move(prepare), std::move(detail));
}

template <class Slice, class Options, class StartOne>
void SeriesOperation::run(Session::Impl& session, const char* verb, std::vector<Slice> slices, Options options,
                          Mode mode, SeriesCompletion done, SliceCompletion slice_done, StartOne start_one,
                          std::function<void()> prepare, std::function<std::string()> detail)
{
    std::vector<std::string> names;
    names.reserve(slices.size());
    for (const auto& s : slices) names.push_back(s.name);
    // Each slice moves into its operation when it starts.
    auto waiting = std::make_shared<std::vector<Slice>>(std::move(slices));
    StartSlice start = [&session, waiting, options = std::move(options), start_one](std::size_t i, Completion c) {
        start_one(session, i, std::move((*waiting)[i]), options, std::move(c));
    };
    std::shared_ptr<SeriesOperation> series(
        new SeriesOperation(session, verb, std::move(names), std::move(start), std::move(slice_done)));
    series->detail_ = std::move(detail);
    // The series' own completion carries an empty Result; `done` gets the
    // SeriesResult, complete by then (every slice has ended).
    Completion finished = [series, done = std::move(done)](const Result&) {
        if (done) call_logged("series completion callback", [&] { done(series->result_); });
    };
    if (!prepare)
        return session.run(mode, std::move(finished), [&series](Completion c) { series->begin(std::move(c)); });
    session.run(mode, std::move(finished), [&session, &series, &prepare](Completion c) {
        // The Session closing: begin() completes every slice cancelled.
        session.control_call([series, prepare = std::move(prepare), c] {
                                 prepare();
                                 series->begin(c);
                             },
                             [series, c] { series->begin(c); });
    });
}

SeriesOperation::SeriesOperation(Session::Impl& session, const char* verb, std::vector<std::string> names,
                                 StartSlice start, SliceCompletion slice_done)
    : session_(session), verb_(verb), names_(std::move(names)), start_(std::move(start)),
      slice_done_(std::move(slice_done)), window_(session.series_window())
{
    result_.slices.resize(names_.size());
}

void SeriesOperation::begin(Completion done)
{
    done_ = std::move(done);
    started_ = std::chrono::steady_clock::now();
    if (names_.empty()) return finish();
    launch();
}

void SeriesOperation::launch()
{
    for (;;) {
        std::size_t index = 0;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (next_ == names_.size() || next_ - ended_ >= window_) return;
            index = next_++;
        }
        ++session_.pending;  // each slice's completion counts itself off
        Completion c = [op = shared_from_this(), index](const Result& r) { op->on_loop_thread_slice_done(index, r); };
        if (session_.closing()) {
            session_.complete(c, failure(Error(Errc::cancelled, std::string(verb_) + " " + quote_name(names_[index]) +
                                                                    ": the session is closing")));
        } else {
            start_(index, std::move(c));
        }
    }
}

void SeriesOperation::on_loop_thread_slice_done(std::size_t index, const Result& r)
{
    bool last = false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        result_.slices[index] = r;
        last = ++ended_ == names_.size();
    }
    if (slice_done_) call_logged("slice completion callback", [&] { slice_done_(index, r); });
    if (last) finish();
    else launch();
}

void SeriesOperation::finish()
{
    result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    for (const Result& r : result_.slices) {
        if (r.ok()) ++result_.succeeded;
        else ++result_.failed;
        result_.bytes += r.bytes;
    }
    const double mbps = result_.seconds > 0 ? static_cast<double>(result_.bytes) / result_.seconds / 1e6 : 0.0;
    library_log()->info("{} series of {} Blobs: {} bytes in {:.3f} s ({:.2f} MB/s), {} failed{}", verb_, names_.size(),
                        result_.bytes, result_.seconds, mbps, result_.failed, detail_ ? "; " + detail_() : "");
    // Handed over, not kept: `done_` refers to this series (a cycle).
    const Completion done = std::move(done_);
    session_.complete(done, Result{});
}

// ---- SeriesResult --------------------------------------------------------------

const Result* SeriesResult::first_failure() const noexcept
{
    for (const Result& r : slices)
        if (!r.ok()) return &r;
    return nullptr;
}

void SeriesResult::throw_if_error() const
{
    const Result* first = first_failure();
    if (first == nullptr) return;
    const auto index = static_cast<std::size_t>(first - slices.data());
    std::size_t failures = 0;
    for (const Result& r : slices) failures += r.ok() ? 0 : 1;
    throw Error(first->errc(), "series: " + std::to_string(failures) + " of " + std::to_string(slices.size()) +
                                   " slices failed, the first (slice " + std::to_string(index) +
                                   "): " + first->message);
}

}  // namespace blobstreaming::client
