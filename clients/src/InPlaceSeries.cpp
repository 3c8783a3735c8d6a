// A pull series served in place with one control call (InPlaceSeries.h).
#include "InPlaceSeries.h"

#include "InPlaceMappings.h"
#include "LocalRead.h"
#include "PullOperation.h"
#include "TransferResult.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/FileIdentity.h>

#include <blobstreaming/transporter/Log.h>

#include <BlobStreaming.hh>

#include <algorithm>
#include <chrono>
#include <utility>

namespace blobstreaming::client {

bool InPlaceSeries::applies(const Session::Impl& session, const std::vector<PullSlice>& slices,
                            const PullOptions& options)
{
    if (!session.options.local_fast_path || options.store.empty() || options.resume ||
        options.notices != NoticeMode::none || slices.empty())
        return false;
    return std::all_of(slices.begin(), slices.end(), [](const PullSlice& s) { return s.sink.place() != nullptr; });
}

InPlaceSeries::InPlaceSeries(std::string store, std::vector<std::string> names)
    : store_(std::move(store)), names_(std::move(names)), files_(names_.size()), tally_(std::make_shared<Tally>())
{}

std::string InPlaceSeries::summary() const
{
    return "in place from store \"" + store_ + "\": " + std::to_string(tally_->in_place) + " (" +
           std::to_string(tally_->kept) + " from kept mappings), " + std::to_string(tally_->on_their_own) +
           " pulled on their own";
}

void InPlaceSeries::ask(ControlPlane& control)
{
    // As many names per call as the store takes (LimitReached past them).
    constexpr std::size_t per_call = BlobStreaming::BlobStore::MaxBatch;
    try {
        for (std::size_t begin = 0; begin < names_.size(); begin += per_call) {
            const std::size_t end = std::min(names_.size(), begin + per_call);
            const std::vector<std::string> names(names_.begin() + static_cast<std::ptrdiff_t>(begin),
                                                 names_.begin() + static_cast<std::ptrdiff_t>(end));
            auto found = control.find_local_files(store_, names);
            if (!found) return;  // an older store: each slice asks for its own file
            for (std::size_t k = 0; k < found->size(); ++k) files_[begin + k] = std::move((*found)[k]);
        }
    } catch (const Error& e) {
        failed_ = e;
    }
}

void InPlaceSeries::start(Session::Impl& session, std::size_t index, PullSlice slice, const PullOptions& options,
                          Completion done) const
{
    if (failed_) {
        Result r = failure(*failed_, store_);
        return session.complete(done, std::move(r));
    }
    const LocalFile* local = index < files_.size() && files_[index] ? &*files_[index] : nullptr;
    // A file kept mapped was readable (the check's access(2) saved);
    // serve() opens any other again if the kept one no longer holds it.
    if (!local || (!session.mappings.holds(local->path) && !local_file_readable(local->path))) {
        ++tally_->on_their_own;
        return PullOperation::start(session, std::move(slice.name), std::move(slice.sink), options, std::move(done));
    }
    session.loop.post(
        [&session, store = store_, local = *local, slice = std::move(slice), options, done = std::move(done),
         tally = tally_]() mutable { serve(session, store, local, std::move(slice), options, done, *tally); });
}

void InPlaceSeries::serve(Session::Impl& session, const std::string& store, const LocalFile& local, PullSlice slice,
                          const PullOptions& options, const Completion& done, Tally& tally)
{
    Result r = local_result(store, local, options.offset);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string where = "pull " + quote_name(slice.name) + ": store \"" + store + "\"";
    // A whole Blob: from its kept mapping when the Session has one
    // (InPlaceMappings), else opened and then kept.
    const bool whole = options.offset == 0 && (options.length == 0 || options.length == local.info.size);
    bool reused = false;
    try {
        if (whole) {
            *slice.sink.place() = session.mappings.reuse(local, options.verify, where, options.progress);
            reused = *slice.sink.place() != nullptr;
        }
        if (!reused) {
            const timespec opened = realtime_now();
            LocalRange range;
            try {
                range = open_local(local, options.offset, options.length, where);
            } catch (const Error& e) {
                if (e.code() != Errc::io_error && e.code() != Errc::blob_changed)
                    return session.complete(done, failure(e, store));
                // The file cannot be used, or holds another version since
                // the store answered: nothing was handed over; an ordinary
                // pull asks again (the version it then finds, whole, or the
                // data port).
                library_log()->debug("{}; pulling it on its own instead", e.what());
                ++tally.on_their_own;
                return PullOperation::start(session, std::move(slice.name), std::move(slice.sink), options, done);
            }
            *slice.sink.place() =
                whole ? session.mappings.keep(std::move(range), opened, options.verify, where, options.progress)
                      : keep_in_place(std::move(range), options.verify, where, options.progress);
        }
        r.bytes = r.length = (*slice.sink.place())->size();
    } catch (const Error& e) {
        r.error = e.error_code();
        r.message = e.what();
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.ok()) {
        ++tally.in_place;
        if (reused) ++tally.kept;
        log_transfer("pulled in place", "from", slice.name, store, r,
                     "local file " + local.path + (reused ? ", its mapping kept from an earlier pull" : ""),
                     spdlog::level::debug);
    }
    session.complete(done, std::move(r));
}

}  // namespace blobstreaming::client
