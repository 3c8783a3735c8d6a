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
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace blobstreaming::client {
namespace {

constexpr std::size_t kMaxWindow = 64;
/// Blobs per fetchEach call of a batched destination: progress comes per
/// batch.
constexpr std::size_t kMaxBatch = 64;

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
            // With --from every Blob's source is known now: a destination
            // that fetches straight from it and that no other follows gets
            // its Blobs in batches (BlobStore::fetchEach: one round trip
            // per batch instead of one per Blob).
            if (!options_.from.empty()) std::fill(sources_.begin(), sources_.end(), options_.from);
            std::vector<std::thread> lanes;
            for (std::size_t k = 0; k < options_.to.size(); ++k) {
                const bool batched = !options_.from.empty() && batches(k);
                for (std::size_t w = 0; w < std::min(options_.window, names_.size()); ++w)
                    lanes.emplace_back([this, k, batched] { batched ? batch_lane(k) : lane(k); });
            }
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
                    // The source the first destination found ("" when
                    // finding one failed: copy_one says why).
                    changed_.wait(lock, [&] { return hops_[i * m] != Hop::pending || !sources_[i].empty(); });
                    source = sources_[i];
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

    /// Whether destination k fetches every Blob from CopyOptions::from with
    /// no destination following it (its hops are then independent).
    bool batches(std::size_t k)
    {
        const Route& r = route(options_.from);
        return r.from[k] == kSource && !r.followed[k];
    }

    /// Lane thread of a batched destination k: takes the next batch of
    /// Blobs (the window's share of them, at most kMaxBatch) until none is
    /// left, each batch one fetchEach call.
    void batch_lane(std::size_t k)
    {
        const std::size_t m = options_.to.size();
        const std::string& to = options_.to[k];
        const std::size_t per_lane = (names_.size() + options_.window - 1) / options_.window;
        const std::size_t batch = std::clamp<std::size_t>(per_lane, 1, kMaxBatch);
        for (;;) {
            std::size_t first = 0, end = 0;
            {
                std::lock_guard lock(mutex_);
                if (next_[k] == names_.size()) return;
                first = next_[k];
                end = next_[k] = std::min(names_.size(), first + batch);
            }
            const auto started = std::chrono::steady_clock::now();
            const auto seconds = [&] {
                return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            };
            std::vector<std::size_t> sent;
            std::vector<std::string> names;
            for (std::size_t i = first; i < end; ++i) {
                try {
                    if (session_.closing())
                        throw Error(Errc::cancelled, "copy " + quote_name(names_[i]) + ": the session is closing");
                    validate_blob_name(names_[i]);
                    sent.push_back(i);
                    names.push_back(names_[i]);
                } catch (const Error& e) {
                    record(i * m + k, failure(e, to));
                }
            }
            if (names.empty()) continue;
            try {
                auto outcomes = session_.control->fetch_each(to, names, options_.from, options_.overwrite);
                for (std::size_t j = 0; j < sent.size(); ++j) {
                    Result r;
                    if (outcomes[j].error) {
                        r = failure(*outcomes[j].error, to);
                    } else {
                        r.store = to;
                        r.info = *outcomes[j].info;
                        r.bytes = r.length = r.info.size;
                    }
                    r.seconds = seconds();
                    record(sent[j] * m + k, std::move(r));
                }
            } catch (const Error& e) {
                for (std::size_t i : sent) {
                    Result r = failure(e, to);
                    r.seconds = seconds();
                    record(i * m + k, std::move(r));
                }
            }
        }
    }

    /// Blob i to destination k; `source` is "" for k = 0 (CopyOptions::from
    /// or the nearest holder that is not a destination), else the source
    /// destination 0 found.
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
                {
                    std::lock_guard lock(mutex_);
                    sources_[i] = source;
                }
                changed_.notify_all();
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

    /// Where each destination fetches a Blob of `source` from: the index
    /// of the destination it follows, or kSource. Every destination on the
    /// source's host that offers local reads reads the source's file
    /// (StoreStatus::local_files: no loopback TCP, the source's data port
    /// idle); the others form the chain (CopyOptions::chain), the first of
    /// them from the source. Asked of the stores once per source.
    static constexpr std::size_t kSource = ~std::size_t{0};
    struct Route {
        std::vector<std::size_t> from;  ///< per destination
        std::vector<bool> followed;     ///< a later destination follows it
    };
    const Route& route(const std::string& source)
    {
        {
            std::lock_guard lock(mutex_);
            if (const auto it = routes_.find(source); it != routes_.end()) return it->second;
        }
        const std::size_t m = options_.to.size();
        Route r{std::vector<std::size_t>(m, kSource), std::vector<bool>(m, false)};
        if (options_.chain) {
            const std::string src_host = host_offering_files(source);
            std::size_t last = kSource;
            for (std::size_t k = 0; k < m; ++k) {
                if (!src_host.empty() && host_of(options_.to[k]) == src_host) continue;  // reads the file
                r.from[k] = last;
                if (last != kSource) r.followed[last] = true;
                last = k;
            }
        }
        std::lock_guard lock(mutex_);
        return routes_.emplace(source, std::move(r)).first->second;  // another lane's when it was first
    }

    /// The host (boot id) of `store` when it offers its files to that host,
    /// else "" (also when it does not answer: its fetches say why).
    std::string host_offering_files(const std::string& store)
    {
        const std::optional<StoreStatus> s = status_of(store);
        return s && s->local_files ? s->host : std::string();
    }
    std::string host_of(const std::string& store)
    {
        const std::optional<StoreStatus> s = status_of(store);
        return s ? s->host : std::string();
    }
    std::optional<StoreStatus> status_of(const std::string& store)
    {
        {
            std::lock_guard lock(mutex_);
            if (const auto it = statuses_.find(store); it != statuses_.end()) return it->second;
        }
        std::optional<StoreStatus> s;
        try {
            s = session_.control->status(store, "copy");
        } catch (const Error& e) {
            library_log()->debug("copy: the status of store \"{}\": {}", store, e.what());
        }
        std::lock_guard lock(mutex_);
        return statuses_.emplace(store, s).first->second;
    }

    /// Blob i to destination k, from `source` or the destination its route
    /// follows. A hop a later destination follows goes in two steps: once
    /// it has begun (Hop::begun) the follower may fetch from it. Any other
    /// hop is one call (BlobStore::fetch: no thread of its own at the
    /// destination, one round trip fewer). A fetch whose hop followed
    /// failed (the bytes it followed broke off) is made again from the
    /// source.
    BlobInfo fetch(std::size_t i, std::size_t k, const std::string& source)
    {
        const std::string& name = names_[i];
        const std::string& to = options_.to[k];
        const std::size_t m = options_.to.size();
        const Route& r = route(source);
        const auto fetch_from = [&](const std::string& from) {
            if (!r.followed[k]) return session_.control->fetch(to, name, from, options_.overwrite);
            session_.control->begin_fetch(to, name, from, options_.overwrite);
            begun(i * m + k);
            return session_.control->await_fetch(to, name);
        };
        const std::size_t j = r.from[k];
        if (j == kSource) return fetch_from(source);
        {
            std::unique_lock lock(mutex_);
            changed_.wait(lock, [&] { return hops_[i * m + j] != Hop::pending; });
            if (hops_[i * m + j] == Hop::failed) return fetch_from(source);
        }
        try {
            return fetch_from(options_.to[j]);
        } catch (const Error& e) {
            {
                std::unique_lock lock(mutex_);
                changed_.wait(lock, [&] { return hops_[i * m + j] == Hop::done || hops_[i * m + j] == Hop::failed; });
                if (hops_[i * m + j] == Hop::done) throw;
            }
            library_log()->info("copy {} to \"{}\": the copy at \"{}\" it followed failed ({}); from \"{}\" instead",
                                quote_name(name), to, options_.to[j], e.what(), source);
            return fetch_from(source);
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
    std::map<std::string, Route> routes_;  ///< per source; references stay valid
    std::map<std::string, std::optional<StoreStatus>> statuses_;
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
