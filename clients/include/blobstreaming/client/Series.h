#pragma once
/// A series: many Blobs moved as one operation (the slices of a CT or MR
/// study), with Session::push_series() and Session::pull_series(). The
/// contract (completions, pipelining, failures) is in Session.h.

#include <blobstreaming/client/Result.h>
#include <blobstreaming/client/Transfer.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace blobstreaming::client {

/// One Blob of a pushed series: its bytes and the name it is stored under.
struct PushSlice {
    PushSource source;
    std::string name;
};

/// One Blob of a pulled series: its name and where its bytes go.
struct PullSlice {
    std::string name;
    PullSink sink;
};

/// What a series produced: one Result per slice and the totals.
struct SeriesResult {
    /// One per slice, in the order the slices were given (not the order in
    /// which they ended); each as Session::push() or pull() reports it.
    std::vector<Result> slices;
    std::size_t succeeded = 0;
    std::size_t failed = 0;
    std::uint64_t bytes = 0;  ///< bytes moved by every slice (a failed one: how far it got)
    double seconds = 0;       ///< wall time from the call to the end of the last slice

    bool ok() const noexcept { return failed == 0; }
    /// The first failed slice in series order, or nullptr.
    const Result* first_failure() const noexcept;
    /// Throws Error when a slice failed: the first failure's code, and
    /// "series: F of N slices failed, the first (slice I): <its message>".
    void throw_if_error() const;
};

/// Runs exactly once per series, after every slice has ended, on the
/// reactor thread, like a Completion (Result.h): must not throw (what it
/// throws is logged and dropped); it may start new operations.
using SeriesCompletion = std::function<void(const SeriesResult&)>;

/// Optional: runs once per slice as it ends (slices end roughly, not
/// strictly, in series order), on the reactor thread, before the series'
/// completion; `index` is the slice's position in the series. For showing
/// slices as they arrive. What it throws is logged and dropped.
using SliceCompletion = std::function<void(std::size_t index, const Result& result)>;

}  // namespace blobstreaming::client
