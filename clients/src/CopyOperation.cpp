#include "CopyOperation.h"

#include "ControlPlane.h"
#include "TransferResult.h"
#include "UserCallback.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Log.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace blobstreaming::client {
namespace {

constexpr std::size_t kMaxWindow = 64;

class CopyRun {
public:
    CopyRun(Session::Impl& session, std::vector<std::string> names, CopyOptions options, SliceCompletion slice_done)
        : session_(session), names_(std::move(names)), options_(std::move(options)), slice_done_(std::move(slice_done)),
          hops_(names_.size() * options_.to.size()), sources_(names_.size()), next_(options_.to.size(), 0)
    {
        result.slices.resize(hops_.size());
    }

    /// Control thread: every copy, then the totals.
    void run()
    {
        const auto started = std::chrono::steady_clock::now();
        if (const std::string problem = check_options(); !problem.empty()) {
            for (std::size_t i = 0; i < hops_.size(); ++i) record(i, failure(Error(Errc::invalid_argument, problem)));
        } else {
            std::vector<std::thread> lanes;
            for (std::size_t k = 0; k < options_.to.size(); ++k)
                for (std::size_t w = 0; w < std::min(options_.window, names_.size()); ++w)
                    lanes.emplace_back([this, k] { lane(k); });
            for (auto& t : lanes) t.join();
        }
        result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        for (const Result& r : result.slices) {
            if (r.ok()) ++result.succeeded;
            else ++result.failed;
            result.bytes += r.bytes;
        }
        library_log()->info("copy of {} Blobs to {} store(s): {} bytes in {:.3f} s, {} failed", names_.size(),
                            options_.to.size(), result.bytes, result.seconds, result.failed);
    }

    /// Loop thread, instead of run(): the Session closed before it started.
    void cancel_all()
    {
        for (Result& r : result.slices) r = failure(Error(Errc::cancelled, "copy: the session is closing"));
        result.failed = result.slices.size();
    }

    SeriesResult result;

private:
    /// begun: the destination has somewhere for the bytes (beginFetch
    /// returned): the next store of a chain may fetch from it already,
    /// following the bytes as they arrive.
    enum class Hop { pending, begun, done, failed };

    std::string check_options() const
    {
        if (options_.to.empty()) return "copy: no destination store (CopyOptions::to is empty)";
        if (options_.window < 1 || options_.window > kMaxWindow)
            return "copy: window " + std::to_string(options_.window) + " is outside 1 to " + std::to_string(kMaxWindow);
        for (std::size_t k = 0; k < options_.to.size(); ++k) {
            if (options_.to[k].empty()) return "copy: an empty destination store name";
            if (options_.to[k] == options_.from)
                return "copy: store \"" + options_.from + "\" is both the source and a destination";
            for (std::size_t j = 0; j < k; ++j)
                if (options_.to[j] == options_.to[k])
                    return "copy: destination store \"" + options_.to[k] + "\" is given twice";
        }
        return {};
    }

    /// Lane thread of destination k: takes the next Blob for k until none
    /// is left.
    void lane(std::size_t k)
    {
        const std::size_t m = options_.to.size();
        for (;;) {
            std::size_t i = 0;
            std::string source;
            {
                std::unique_lock lock(mutex_);
                if (next_[k] == names_.size()) return;
                i = next_[k]++;
                if (k > 0) {
                    changed_.wait(lock, [&] { return hops_[i * m + k - 1] != Hop::pending; });
                    const Hop before = hops_[i * m + k - 1];
                    if (options_.chain && before != Hop::failed) source = options_.to[k - 1];
                    else source = sources_[i];  // may be "" when finding a source failed: copy_one says why
                }
            }
            Result r;
            if (session_.closing()) {
                r = failure(Error(Errc::cancelled, "copy " + quote_name(names_[i]) + ": the session is closing"));
            } else {
                r = copy_one(i, k, source);
            }
            record(i * m + k, std::move(r));
        }
    }

    /// Blob i to destination k from `source` ("" for k = 0: CopyOptions::from
    /// or the nearest holder that is not a destination).
    Result copy_one(std::size_t i, std::size_t k, std::string source)
    {
        const std::string& name = names_[i];
        const std::string& to = options_.to[k];
        const auto started = std::chrono::steady_clock::now();
        Result r;
        r.store = to;
        try {
            validate_blob_name(name);
            if (k == 0) {
                source = options_.from.empty() ? nearest_source(name) : options_.from;
                std::lock_guard lock(mutex_);
                sources_[i] = source;
            } else if (source.empty()) {
                throw Error(Errc::no_such_blob, "copy " + quote_name(name) + " to \"" + to +
                                                    "\": no source (finding one for the first destination failed)");
            }
            r.info = fetch(i, k, source);
            r.bytes = r.info.size;
            r.length = r.info.size;
        } catch (const Error& e) {
            r = failure(e, to);
        }
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        return r;
    }

    /// Blob i to destination k from `source`, in two steps: once the
    /// destination has begun (Hop::begun) the next store of a chain may
    /// fetch from it. A chained fetch whose previous hop failed (the bytes
    /// it followed broke off) is made again from the source.
    BlobInfo fetch(std::size_t i, std::size_t k, const std::string& source)
    {
        const std::string& name = names_[i];
        const std::string& to = options_.to[k];
        const std::size_t m = options_.to.size();
        try {
            session_.control->begin_fetch(to, name, source, options_.overwrite);
            begun(i * m + k);
            return session_.control->await_fetch(to, name);
        } catch (const Error& e) {
            if (k == 0 || source != options_.to[k - 1]) throw;
            std::string origin;
            {
                std::unique_lock lock(mutex_);
                changed_.wait(lock,
                              [&] { return hops_[i * m + k - 1] == Hop::done || hops_[i * m + k - 1] == Hop::failed; });
                if (hops_[i * m + k - 1] == Hop::done || sources_[i].empty()) throw;
                origin = sources_[i];
            }
            library_log()->info("copy {} to \"{}\": the copy at \"{}\" it followed failed ({}); from \"{}\" instead",
                                quote_name(name), to, source, e.what(), origin);
            session_.control->begin_fetch(to, name, origin, options_.overwrite);
            begun(i * m + k);
            return session_.control->await_fetch(to, name);
        }
    }

    void begun(std::size_t slot)
    {
        {
            std::lock_guard lock(mutex_);
            if (hops_[slot] == Hop::pending) hops_[slot] = Hop::begun;
        }
        changed_.notify_all();
    }

    std::string nearest_source(const std::string& name)
    {
        const std::string what = "copy " + quote_name(name);
        for (const Location& l : session_.control->locate(name))
            if (std::find(options_.to.begin(), options_.to.end(), l.store) == options_.to.end() && l.holds)
                return l.store;
        throw Error(Errc::no_such_blob,
                    what + ": no registered store other than the destinations holds it (give one with --from)");
    }

    void record(std::size_t slot, Result r)
    {
        const bool ok = r.ok();
        if (slice_done_) {
            session_.loop.post([done = slice_done_, slot, r] {
                call_logged("copy slice completion callback", [&] { done(slot, r); });
            });
        }
        {
            std::lock_guard lock(mutex_);
            result.slices[slot] = std::move(r);
            hops_[slot] = ok ? Hop::done : Hop::failed;
        }
        changed_.notify_all();
    }

    Session::Impl& session_;
    const std::vector<std::string> names_;
    const CopyOptions options_;
    const SliceCompletion slice_done_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<Hop> hops_;
    std::vector<std::string> sources_;
    std::vector<std::size_t> next_;
};

}  // namespace

void start_copy(Session::Impl& session, std::vector<std::string> names, CopyOptions options, Mode mode,
                SeriesCompletion done, SliceCompletion slice_done)
{
    auto copy = std::make_shared<CopyRun>(session, std::move(names), std::move(options), std::move(slice_done));
    Completion finished = [copy, done = std::move(done)](const Result&) {
        if (done) call_logged("copy completion callback", [&] { done(copy->result); });
    };
    session.run(mode, std::move(finished), [&session, &copy](Completion c) {
        session.control_call(
            [&session, copy, c] {
                copy->run();
                session.complete(c, Result{});
            },
            [&session, copy, c] {
                copy->cancel_all();
                session.complete(c, Result{});
            });
    });
}

}  // namespace blobstreaming::client
