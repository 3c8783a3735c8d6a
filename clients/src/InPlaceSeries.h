#pragma once
/// The same-host files of a pull series whose slices are all asked for in
/// place (PullSink::in_place) from one named store: asked of the store in
/// one control call (BlobStore::findLocalFiles, the read permission checked
/// once) before the first slice starts, instead of one findLocalFile per
/// slice. Each slice whose file was found is then opened, checked to be
/// the version the store described, verified (PullOptions::verify, a whole
/// Blob) and handed over exactly as a single pull's same-host path does
/// (LocalRead.h); a slice without a file, or whose file cannot be used or
/// holds another version by then, is an ordinary pull (PullOperation).
/// Logged: each slice served in place at DEBUG ("pulled in place ..."),
/// the series in its one INFO line (SeriesOperation), which summary()
/// completes ("; in place from store "S": I (K from kept mappings), P
/// pulled on their own"); an ordinary pull's own lines as ever.
///   control: ask()      the one call (a store older than it: every slice an ordinary pull)
///   any:     start()    slice i: to the loop thread with its file, else an ordinary pull
///   loop:    serve()    open, check, verify, complete

#include "DataPlane.h"
#include "SessionImpl.h"

#include <blobstreaming/client/Series.h>
#include <blobstreaming/common/Error.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::client {

class InPlaceSeries {
public:
    /// Whether a pull series of `slices` with `options` asks for its files
    /// at once: the Session may use the same-host path, a store is named,
    /// no notices, no resume, every slice in place.
    static bool applies(const Session::Impl& session, const std::vector<PullSlice>& slices,
                        const PullOptions& options);

    InPlaceSeries(std::string store, std::vector<std::string> names);

    /// Control thread, before any slice starts: the files of every name
    /// (batches of at most BlobStore::MaxBatch, the IDL constant the store
    /// enforces). A failure that concerns every name (no read permission,
    /// the store unreachable) is kept: each slice then fails with it, as
    /// its own pull would.
    void ask(ControlPlane& control);

    /// Any thread: starts slice `index` (`slice` its name and sink) with
    /// `done` as its completion.
    void start(Session::Impl& session, std::size_t index, PullSlice slice, const PullOptions& options,
               Completion done) const;

    /// After the last slice: how the slices were served, for the series'
    /// log line ("in place from store "S": I (K from kept mappings), P
    /// pulled on their own").
    std::string summary() const;

private:
    /// How the slices were served so far; any thread.
    struct Tally {
        std::atomic<std::size_t> in_place{0}, kept{0}, on_their_own{0};
    };

    /// Loop thread: slice `name` from `local`, in place.
    static void serve(Session::Impl& session, const std::string& store, const LocalFile& local, PullSlice slice,
                      const PullOptions& options, const Completion& done, Tally& tally);

    std::string store_;
    std::vector<std::string> names_;
    std::vector<std::optional<LocalFile>> files_;
    std::optional<Error> failed_;
    std::shared_ptr<Tally> tally_;
};

}  // namespace blobstreaming::client
