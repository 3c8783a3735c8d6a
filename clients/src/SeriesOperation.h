#pragma once
/// One series (Session::push_series, pull_series): its slices are ordinary
/// PushOperations or PullOperations, started in series order with at most
/// Session::Impl::series_window() of them in flight, so that the control
/// calls (reservation, ticket) of the next slices run on the control threads
/// while the current slices' bytes move on the loop thread. No transfer of
/// its own: it only decides when each slice starts and gathers the Results.
/// The completions it hands to its slices keep it alive:
///   control: prepare                       a pull series in place: its files asked for at once (InPlaceSeries.h)
///   caller:  begin()                       starts the first window (an empty series: finish())
///   loop:    on_loop_thread_slice_done()   records a slice, starts the next one or, after the last, finish()

#include "SessionImpl.h"

#include <blobstreaming/client/Series.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace blobstreaming::client {

class SeriesOperation : public std::enable_shared_from_this<SeriesOperation> {
public:
    /// Caller thread: Session::push_series() in `mode`.
    static void push(Session::Impl& session, std::vector<PushSlice> slices, PushOptions options, Mode mode,
                     SeriesCompletion done, SliceCompletion slice_done);
    /// Caller thread: Session::pull_series() in `mode`.
    static void pull(Session::Impl& session, std::vector<PullSlice> slices, PullOptions options, Mode mode,
                     SeriesCompletion done, SliceCompletion slice_done);

private:
    /// Starts slice `index` as an ordinary operation with `done` as its
    /// completion (any thread).
    using StartSlice = std::function<void(std::size_t index, Completion done)>;

    /// `verb` ("push", "pull") and `names` (one per slice) name the slices
    /// that are not started because the Session is closing.
    SeriesOperation(Session::Impl& session, const char* verb, std::vector<std::string> names, StartSlice start,
                    SliceCompletion slice_done);

    /// Caller thread: runs the series of `slices` in `mode`
    /// (Session::Impl::run), `done` receiving its SeriesResult;
    /// `start_one(session, index, slice, options, completion)` starts one
    /// slice; `prepare`, when given, runs on a control thread before the
    /// first slice starts; `detail`, when given, completes the series' log
    /// line after its last slice.
    template <class Slice, class Options, class StartOne>
    static void run(Session::Impl& session, const char* verb, std::vector<Slice> slices, Options options, Mode mode,
                    SeriesCompletion done, SliceCompletion slice_done, StartOne start_one,
                    std::function<void()> prepare = {}, std::function<std::string()> detail = {});
    /// Caller thread (a control thread after `prepare`, the loop thread when
    /// the Session closed meanwhile): starts the first window; `done` runs
    /// once every slice has ended (its Result is empty: the series' outcome
    /// is result_).
    void begin(Completion done);
    /// Any thread: starts slices while the window has room. A slice due
    /// while the Session closes is not started: it completes cancelled.
    void launch();
    /// Loop thread: slice `index` ended with `r`.
    void on_loop_thread_slice_done(std::size_t index, const Result& r);
    /// Loop thread, after the last slice (the caller's, for an empty
    /// series): the totals, one log line (`detail_` appended), then
    /// `done_`, later.
    void finish();

    Session::Impl& session_;
    const char* verb_;
    std::vector<std::string> names_;
    StartSlice start_;
    SliceCompletion slice_done_;
    std::function<std::string()> detail_;
    const std::size_t window_;
    Completion done_;
    std::chrono::steady_clock::time_point started_;

    std::mutex mutex_;       ///< guards next_, ended_ and result_.slices
    std::size_t next_ = 0;   ///< slices started so far (in series order)
    std::size_t ended_ = 0;  ///< slices whose completion has run
    SeriesResult result_;
};

}  // namespace blobstreaming::client
