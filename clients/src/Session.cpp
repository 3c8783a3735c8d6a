#include <blobstreaming/client/Session.h>

#include "ConnectionPool.h"
#include "ControlPlane.h"
#include "ClientConnection.h"
#include "EventLoop.h"
#include "LocalRead.h"
#include "Streams.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/SocketOptions.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace blobstreaming::client {

namespace {

Result failure(const Error& e)
{
    Result r;
    r.error = e.error_code();
    r.message = e.what();
    return r;
}

void log_transfer(const char* verb, const char* dir, const std::string& name, const std::string& store,
                  const Result& r, const std::string& peer)
{
    const double mbps = r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds / 1e6 : 0.0;
    spdlog::info("{} {} {} store \"{}\": {} bytes in {:.3f} s ({:.2f} MB/s) via {}", verb, quote_name(name), dir,
                 store, r.bytes, r.seconds, mbps, peer);
}

}  // namespace

class Session::Impl {
public:
    explicit Impl(Options o)
        : options(std::move(o)), loop([this] { pool.tick(); }, tick_period(options.timeout)), pool(loop, options)
    {
        ignore_sigpipe();
        control = std::make_unique<ControlPlane>(options);
        if (options.reactor == ReactorMode::Thread) {
            thread = std::thread([this] {
                while (!stop_thread.load()) loop.run_once(std::chrono::milliseconds(500));
                for (int i = 0; i < 1000 && loop.run_once(std::chrono::milliseconds(0)) > 0; ++i) {
                }
            });
        }
    }

    ~Impl()
    {
        {
            std::lock_guard<std::mutex> lock(control_mutex);
            closing = true;
        }
        // Order matters: queued control calls finish (posting their transfers
        // to the loop), then the loop cancels every transfer, and only then
        // are the transporters closed (which withdraws their tickets).
        control->stop();
        loop.post([this] {
            pool.cancel_all();
            stop_thread.store(true);
        });
        if (thread.joinable()) {
            thread.join();
        } else {
            for (int i = 0; i < 1000 && loop.run_once(std::chrono::milliseconds(0)) > 0; ++i) {
            }
        }
        control.reset();
    }

    static std::chrono::milliseconds tick_period(std::chrono::milliseconds timeout)
    {
        return std::clamp(timeout / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
    }

    /// Delivers `r` to `done` from the loop thread, later.
    void complete(const Completion& done, Result r)
    {
        loop.post([this, done, r = std::move(r)] {
            try {
                if (done) done(r);
            } catch (const std::exception& e) {
                spdlog::error("completion callback threw: {}", e.what());
            } catch (...) {
                spdlog::error("completion callback threw");
            }
            --pending;
        });
    }

    /// Runs `call` on the control worker; `if_closed` on the loop when the
    /// Session is closing.
    void control_call(std::function<void()> call, std::function<void()> if_closed)
    {
        std::lock_guard<std::mutex> lock(control_mutex);
        if (closing)
            loop.post(std::move(if_closed));
        else
            control->submit(std::move(call));
    }

    /// Starts an operation in `mode`; `start` receives the completion to use.
    void run(Mode mode, Completion done, const std::function<void(Completion)>& start)
    {
        if (mode == Mode::Async) {
            ++pending;
            start(std::move(done));
            return;
        }
        if (loop.dispatching())
            throw Error(Errc::invalid_argument,
                        "a Mode::Sync operation cannot run on the reactor thread (inside a completion callback)");
        struct Wait {
            std::mutex mutex;
            std::condition_variable cv;
            bool done = false;
        };
        auto wait = std::make_shared<Wait>();
        ++pending;
        start([done, wait](const Result& r) {
            if (done) done(r);
            std::lock_guard<std::mutex> lock(wait->mutex);
            wait->done = true;
            wait->cv.notify_all();
        });
        if (options.reactor == ReactorMode::Caller) {
            for (;;) {
                {
                    std::lock_guard<std::mutex> lock(wait->mutex);
                    if (wait->done) break;
                }
                loop.run_once(std::chrono::milliseconds(200));
            }
        } else {
            std::unique_lock<std::mutex> lock(wait->mutex);
            wait->cv.wait(lock, [&] { return wait->done; });
        }
    }

    void push(PushSource source, std::string name, PushOptions opts, Completion done);
    void pull(std::string name, PullSink sink, PullOptions opts, Completion done);
    /// `retry`: what to run (on the loop) instead of completing when the
    /// Blob changed between ticket and data connection; empty: complete.
    void start_pull_transfer(std::string name, std::string store, Ticket ticket, std::shared_ptr<PullSink> sink,
                             PullOptions opts, Completion done, std::optional<Sha256> prefix = std::nullopt,
                             std::function<void()> retry = {});
    /// Worker: continues a pull into the file `out` after the bytes it holds.
    void pull_resume(const std::string& name, const std::string& store, std::shared_ptr<PullSink> out,
                     const PullOptions& opts, const Completion& done);
    /// Worker: obtains a ticket and hands the transfer to the loop. A
    /// whole-Blob pull whose Blob is replaced or removed between the ticket
    /// and the data connection (Errc::blob_changed) is issued once more, for
    /// the version current then, unless `retried`.
    void pull_remote(const std::string& name, const std::string& store, std::shared_ptr<PullSink> out,
                     const PullOptions& opts, const Completion& done, bool retried = false);

    Options options;
    EventLoop loop;
    ConnectionPool pool;
    std::mutex control_mutex;
    bool closing = false;
    std::unique_ptr<ControlPlane> control;
    std::thread thread;
    std::atomic<bool> stop_thread{false};
    std::atomic<std::size_t> pending{0};
};

void Session::Impl::push(PushSource source, std::string name, PushOptions opts, Completion done)
{
    auto src = std::make_shared<PushSource>(std::move(source));
    control_call(
        [this, src, name, opts, done] {
            const std::string what = "push " + quote_name(name);
            std::string store;
            std::unique_ptr<Source> bytes;
            PushGrant grant;
            try {
                validate_blob_name(name);
                store = control->store_or_default(opts.store, what);
                bytes = open_source(*src, what);
                std::optional<PushGrant> resumed;
                if (opts.resume) resumed = control->resume_push(store, name, bytes->size());
                grant = resumed ? std::move(*resumed) : control->begin_push(store, name, bytes->size(), opts.replace);
            } catch (const Error& e) {
                Result r = failure(e);
                r.store = store;
                return complete(done, std::move(r));
            }
            auto job = std::make_unique<TransferJob>();
            job->type = protocol::FrameType::push;
            job->ticket = grant.ticket;
            job->what = what + ": store \"" + store + "\"";
            job->source = std::move(bytes);
            job->progress = opts.progress;
            const std::string peer = grant.ticket.endpoint();
            const bool keep_on_failure = opts.resume;
            job->done = [this, src, name, store, grant, done, peer, keep_on_failure](JobOutcome o) {
                Result r;
                r.store = store;
                r.offset = grant.ticket.offset;
                r.length = grant.ticket.length;
                r.bytes = o.bytes;
                r.seconds = o.seconds;
                if (o.error) {
                    r.error = o.error;
                    r.message = o.message;
                    const auto code = static_cast<Errc>(o.error.value());
                    if (keep_on_failure && o.error.category() == error_category() &&
                        (code == Errc::transfer_failed || code == Errc::timeout || code == Errc::unreachable)) {
                        // The store keeps what it received for its grace period.
                        r.message += "; the store keeps the bytes it received for a while: push again with "
                                     "resume to continue";
                        complete(done, std::move(r));
                        return;
                    }
                    // Nothing partial may stay: abort the reservation, then report.
                    auto abort_then_complete = [this, store, grant, done, r] {
                        control->abort(store, grant.reservation);
                        complete(done, r);
                    };
                    // Closing: the worker is gone but the references live
                    // until the loop has drained, so abort from the loop.
                    control_call(abort_then_complete, abort_then_complete);
                    return;
                }
                r.info.name = name;
                r.info.size = o.response.blob_size;
                r.info.digest = o.response.digest;
                r.info.committed = std::chrono::system_clock::now();
                log_transfer("pushed", "to", name, store, r, peer);
                complete(done, std::move(r));
            };
            loop.post([this, job = std::shared_ptr<TransferJob>(std::move(job))]() mutable {
                if (job->ticket.offset > 0) {
                    // Resumed: the store has the first bytes; hash them here
                    // (a producer runs on this thread) so the trailer covers
                    // the whole Blob.
                    try {
                        Sha256 prefix;
                        job->source->skip(job->ticket.offset, prefix);
                        job->prefix_hash = std::move(prefix);
                    } catch (const Error& e) {
                        JobOutcome o;
                        o.error = e.error_code();
                        o.message = e.what();
                        job->done(std::move(o));
                        return;
                    }
                }
                pool.submit(std::make_unique<TransferJob>(std::move(*job)));
            });
        },
        [this, done, name] {
            complete(done, failure(Error(Errc::cancelled, "push " + quote_name(name) + ": the session is closing")));
        });
}

void Session::Impl::pull(std::string name, PullSink sink, PullOptions opts, Completion done)
{
    auto out = std::make_shared<PullSink>(std::move(sink));
    control_call(
        [this, out, name, opts, done] {
            const std::string what = "pull " + quote_name(name);
            std::string store;
            try {
                validate_blob_name(name);
                store = opts.store.empty() ? options.default_store : opts.store;
                if (store.empty()) store = control->nearest_holder(name, what);
                if (opts.resume) return pull_resume(name, store, out, opts, done);
                if (options.local_fast_path) {
                    auto local = control->find_local(store, name);
                    if (local && local_file_readable(local->path)) {
                        loop.post([this, local = *local, out, name, store, opts, done, what] {
                            Result r;
                            r.store = store;
                            r.local = true;
                            r.info = local.info;
                            r.offset = opts.offset;
                            const auto t0 = std::chrono::steady_clock::now();
                            const std::string where = what + ": store \"" + store + "\"";
                            LocalRange range;
                            try {
                                range = open_local(local, opts.offset, opts.length, where);
                            } catch (const Error& e) {
                                if (e.code() == Errc::io_error || e.code() == Errc::blob_changed) {
                                    // The file cannot be used, or it holds another
                                    // version now; nothing was written: take the socket.
                                    spdlog::debug("{}; pulling over the network instead", e.what());
                                    control_call([this, name, store, out, opts,
                                                  done] { pull_remote(name, store, out, opts, done); },
                                                 [this, done, r = failure(e)] { complete(done, r); });
                                    return;
                                }
                                r.error = e.error_code();
                                r.message = e.what();
                            }
                            if (!r.error) {
                                // From here a failure is the destination's or the digest's:
                                // bytes may be out already (a FIFO, standard output), so
                                // the pull fails instead of starting over on another path.
                                try {
                                    auto sink_impl = make_sink(*out, where);
                                    try {
                                        r.bytes = copy_local(range, *sink_impl, opts.verify, where, opts.progress);
                                    } catch (...) {
                                        sink_impl->abandon();
                                        throw;
                                    }
                                    r.length = r.bytes;
                                } catch (const Error& e) {
                                    r.error = e.error_code();
                                    r.message = e.what();
                                }
                            }
                            r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                            if (r.ok()) log_transfer("pulled", "from", name, store, r, "local file " + local.path);
                            complete(done, std::move(r));
                        });
                        return;
                    }
                }
                pull_remote(name, store, out, opts, done);
            } catch (const Error& e) {
                Result r = failure(e);
                r.store = store;
                complete(done, std::move(r));
            }
        },
        [this, done, name] {
            complete(done, failure(Error(Errc::cancelled, "pull " + quote_name(name) + ": the session is closing")));
        });
}

void Session::Impl::pull_remote(const std::string& name, const std::string& store, std::shared_ptr<PullSink> out,
                                const PullOptions& opts, const Completion& done, bool retried)
{
    try {
        Ticket ticket = control->begin_pull(store, name, opts.offset, opts.length);
        std::function<void()> retry;
        if (!retried && opts.offset == 0 && opts.length == 0) {
            retry = [this, name, store, out, opts, done] {
                spdlog::info("pull {}: store \"{}\": the Blob changed since the ticket was issued; pulling the "
                             "current version", quote_name(name), store);
                control_call([this, name, store, out, opts, done] { pull_remote(name, store, out, opts, done, true); },
                             [this, done, name] {
                                 complete(done, failure(Error(Errc::cancelled, "pull " + quote_name(name) +
                                                                                   ": the session is closing")));
                             });
            };
        }
        loop.post([this, name, store, ticket, out, opts, done, retry] {
            start_pull_transfer(name, store, ticket, out, opts, done, std::nullopt, retry);
        });
    } catch (const Error& e) {
        Result r = failure(e);
        r.store = store;
        complete(done, std::move(r));
    }
}

void Session::Impl::pull_resume(const std::string& name, const std::string& store, std::shared_ptr<PullSink> out,
                                const PullOptions& opts, const Completion& done)
{
    const std::string what = "pull " + quote_name(name) + ": store \"" + store + "\"";
    if (out->kind() != PullSink::Kind::file || out->path() == "-")
        throw Error(Errc::invalid_argument,
                    what + ": resume needs a file to continue (not standard output, memory or a consumer)");
    if (opts.offset != 0 || opts.length != 0)
        throw Error(Errc::invalid_argument, what + ": resume continues a whole-Blob pull; it cannot be combined "
                                                   "with an offset or a length");
    auto [have, prefix] = hash_existing_file(out->path(), what);
    const BlobInfo info = control->stat(store, name);
    if (have > info.size)
        throw Error(Errc::invalid_range, what + ": cannot resume: " + out->path() + " holds " + std::to_string(have) +
                                             " bytes, more than the " + std::to_string(info.size) +
                                             " of the Blob (not a partial copy of it)");
    Ticket ticket = control->begin_pull(store, name, have, 0);
    loop.post([this, name, store, ticket, out, opts, done, prefix = std::make_shared<Sha256>(std::move(prefix))] {
        start_pull_transfer(name, store, ticket, out, opts, done, std::move(*prefix));
    });
}

void Session::Impl::start_pull_transfer(std::string name, std::string store, Ticket ticket,
                                        std::shared_ptr<PullSink> out, PullOptions opts, Completion done,
                                        std::optional<Sha256> prefix, std::function<void()> retry)
{
    const std::string what = "pull " + quote_name(name) + ": store \"" + store + "\"";
    auto job = std::make_unique<TransferJob>();
    job->type = protocol::FrameType::pull;
    job->ticket = ticket;
    job->what = what;
    const bool resumed = prefix.has_value();
    try {
        job->sink = make_sink(*out, what, resumed ? std::optional<std::uint64_t>(ticket.offset) : std::nullopt);
    } catch (const Error& e) {
        Result r = failure(e);
        r.store = store;
        return complete(done, std::move(r));
    }
    job->prefix_hash = std::move(prefix);
    job->verify = opts.verify;
    job->whole = opts.offset == 0 && opts.length == 0;
    job->progress = opts.progress;
    const std::string peer = ticket.endpoint();
    job->done = [this, out, name, store, ticket, done, peer, retry](JobOutcome o) {
        if (retry && o.error == make_error_code(Errc::blob_changed)) return retry();
        Result r;
        r.store = store;
        r.offset = ticket.offset;
        r.length = ticket.length;
        r.bytes = o.bytes;
        r.seconds = o.seconds;
        r.error = o.error;
        r.message = o.message;
        if (!o.error) {
            // The data connection checked the Response against the version.
            if (ticket.version) r.info = *ticket.version;
            r.info.name = name;
            r.info.size = o.response.blob_size;
            r.info.digest = o.response.digest;
            log_transfer("pulled", "from", name, store, r, peer);
        }
        complete(done, std::move(r));
    };
    pool.submit(std::move(job));
}

// ---- Session -----------------------------------------------------------------

Session::Session(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Session::~Session() = default;

const Session::Options& Session::options() const noexcept { return impl_->options; }

std::size_t Session::run_once(std::chrono::milliseconds timeout)
{
    if (impl_->options.reactor != ReactorMode::Caller)
        throw Error(Errc::invalid_argument, "Session::run_once: the session runs its own reactor thread "
                                            "(ReactorMode::Thread); use ReactorMode::Caller to drive it");
    return impl_->loop.run_once(timeout);
}

std::size_t Session::pending() const noexcept { return impl_->pending.load(); }

std::uint64_t Session::connections_opened() const noexcept { return impl_->pool.opened(); }

void Session::push(PushSource source, std::string name, PushOptions options, Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        impl_->push(std::move(source), std::move(name), std::move(options), std::move(c));
    });
}

void Session::pull(std::string name, PullSink sink, PullOptions options, Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        impl_->pull(std::move(name), std::move(sink), std::move(options), std::move(c));
    });
}

namespace {

/// A control-plane query: `body` runs on the worker and fills the Result.
template <class Body>
void query(Session::Impl& impl, const std::string& what, Completion done, Body body)
{
    impl.control_call(
        [&impl, done, body] {
            Result r;
            try {
                body(r);
            } catch (const Error& e) {
                const std::string store = r.store;
                r = failure(e);
                r.store = store;
            }
            impl.complete(done, std::move(r));
        },
        [&impl, done, what] { impl.complete(done, failure(Error(Errc::cancelled, what + ": the session is closing"))); });
}

}  // namespace

void Session::stat(std::string name, std::string store, Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        query(*impl_, "stat", std::move(c), [impl = impl_.get(), name, store](Result& r) {
            const std::string what = "stat " + quote_name(name);
            validate_blob_name(name);
            r.store = store.empty() ? impl->options.default_store : store;
            if (r.store.empty()) r.store = impl->control->nearest_holder(name, what);
            r.info = impl->control->stat(r.store, name);
        });
    });
}

void Session::verify(std::string name, std::string store, Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        query(*impl_, "verify", std::move(c), [impl = impl_.get(), name, store](Result& r) {
            const std::string what = "verify " + quote_name(name);
            validate_blob_name(name);
            r.store = store.empty() ? impl->options.default_store : store;
            if (r.store.empty()) r.store = impl->control->nearest_holder(name, what);
            r.info = impl->control->verify(r.store, name);
        });
    });
}

void Session::list(std::string store, Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        query(*impl_, "list", std::move(c), [impl = impl_.get(), store](Result& r) {
            const std::vector<std::string> names =
                store.empty() ? impl->control->store_names() : std::vector<std::string>{store};
            r.store = store;
            for (const auto& s : names)
                for (auto& info : impl->control->list(s)) r.blobs.push_back(StoredBlob{s, std::move(info)});
        });
    });
}

void Session::remove(std::string name, std::string store, Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        query(*impl_, "rm", std::move(c), [impl = impl_.get(), name, store](Result& r) {
            const std::string what = "rm " + quote_name(name);
            validate_blob_name(name);
            r.store = store.empty() ? impl->options.default_store : store;
            if (r.store.empty()) r.store = impl->control->nearest_holder(name, what);
            impl->control->remove(r.store, name);
            r.info.name = name;
        });
    });
}

void Session::locate(std::string name, Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        query(*impl_, "locate", std::move(c), [impl = impl_.get(), name](Result& r) {
            r.info.name = name;
            r.locations = impl->control->locate(name);
        });
    });
}

void Session::stores(Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        query(*impl_, "stores", std::move(c), [impl = impl_.get()](Result& r) { r.stores = impl->control->stores(); });
    });
}

// ---- throwing wrappers -------------------------------------------------------

namespace {

template <class Start>
Result wait_for(Start start)
{
    Result out;
    start([&out](const Result& r) { out = r; });
    out.throw_if_error();
    return out;
}

}  // namespace

BlobInfo Session::push_file(const std::string& path, const std::string& name, const PushOptions& options)
{
    return wait_for([&](Completion c) { push(PushSource::file(path), name, options, Mode::Sync, std::move(c)); }).info;
}

BlobInfo Session::push_memory(const void* data, std::size_t size, const std::string& name, const PushOptions& options)
{
    return wait_for([&](Completion c) {
               push(PushSource::memory(data, size), name, options, Mode::Sync, std::move(c));
           })
        .info;
}

Result Session::pull_file(const std::string& name, const std::string& path, const PullOptions& options)
{
    return wait_for([&](Completion c) { pull(name, PullSink::file(path), options, Mode::Sync, std::move(c)); });
}

std::vector<std::uint8_t> Session::pull_memory(const std::string& name, const PullOptions& options)
{
    std::vector<std::uint8_t> bytes;
    wait_for([&](Completion c) { pull(name, PullSink::memory(&bytes), options, Mode::Sync, std::move(c)); });
    return bytes;
}

BlobInfo Session::stat(const std::string& name, const std::string& store)
{
    return wait_for([&](Completion c) { stat(name, store, Mode::Sync, std::move(c)); }).info;
}

BlobInfo Session::verify(const std::string& name, const std::string& store)
{
    return wait_for([&](Completion c) { verify(name, store, Mode::Sync, std::move(c)); }).info;
}

std::vector<StoredBlob> Session::list(const std::string& store)
{
    return wait_for([&](Completion c) { list(store, Mode::Sync, std::move(c)); }).blobs;
}

void Session::remove(const std::string& name, const std::string& store)
{
    wait_for([&](Completion c) { remove(name, store, Mode::Sync, std::move(c)); });
}

std::vector<Location> Session::locate(const std::string& name)
{
    return wait_for([&](Completion c) { locate(name, Mode::Sync, std::move(c)); }).locations;
}

std::vector<StoreStatus> Session::stores()
{
    return wait_for([&](Completion c) { stores(Mode::Sync, std::move(c)); }).stores;
}

// ---- Result and friends ------------------------------------------------------

void Result::throw_if_error() const
{
    if (error) throw Error(errc(), message);
}

const char* tier_name(Tier tier) noexcept
{
    switch (tier) {
    case Tier::memory: return "memory";
    case Tier::workstation: return "workstation";
    case Tier::cluster: return "cluster";
    case Tier::central: return "central";
    }
    return "central";
}

}  // namespace blobstreaming::client
