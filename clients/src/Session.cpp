// The public Session API and its wiring: the reactor thread, the control
// workers, Sync as a wait on Async, the control-plane queries, and the
// throwing wrappers. Pushes and pulls are PushOperation and PullOperation,
// series SeriesOperation.
#include <blobstreaming/client/Session.h>

#include "CopyOperation.h"
#include "PullOperation.h"
#include "PushOperation.h"
#include "SeriesOperation.h"
#include "SessionImpl.h"
#include "StoreChoice.h"
#include "TransferResult.h"
#include "UserCallback.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/SocketOptions.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>

#include <pthread.h>

namespace blobstreaming::client {

// ---- Session::Impl: the wiring ---------------------------------------------

Session::Impl::Impl(Options o)
    : options(std::move(o)), loop([this] { pool.tick(); }, tick_period(options.timeout)), pool(loop, pool_options(options)),
      named(options.named_requests)
{
    ignore_sigpipe();
    control = std::make_unique<ControlPlane>(options);
    if (options.reactor == ReactorMode::Thread) {
        thread_ = std::thread([this] {
            ::pthread_setname_np(::pthread_self(), "blob-loop");  // ReactorMode::Thread's data plane
            while (!stop_thread_.load()) loop.run_once(std::chrono::milliseconds(500));
            for (int i = 0; i < 1000 && loop.run_once(std::chrono::milliseconds(0)) > 0; ++i) {}
        });
    }
}

Session::Impl::~Impl()
{
    {
        std::lock_guard<std::mutex> lock(control_mutex_);
        closing_ = true;
    }
    // Order matters: queued control calls finish (posting their transfers
    // to the loop), then the loop cancels every transfer, and only then
    // are the transporters closed (which withdraws their tickets).
    control->stop();
    loop.post([this] {
        pool.cancel_all();
        stop_thread_.store(true);
    });
    if (thread_.joinable()) {
        thread_.join();
    } else {
        for (int i = 0; i < 1000 && loop.run_once(std::chrono::milliseconds(0)) > 0; ++i) {}
    }
    control.reset();
}

dataplane::PoolOptions Session::Impl::pool_options(const SessionOptions& options)
{
    dataplane::PoolOptions pool;
    pool.max_connections_per_endpoint = options.max_connections_per_endpoint;
    pool.timeout = options.timeout;
    pool.socket.send_buffer = options.send_buffer;
    pool.socket.receive_buffer = options.receive_buffer;
    pool.socket.no_delay = options.no_delay;
    const TlsFiles files{options.tls_cert, options.tls_key, options.tls_ca};
    if (files.enabled()) pool.tls = std::make_shared<const TlsContext>(TlsContext::Role::client, files);
    return pool;
}

std::chrono::milliseconds Session::Impl::tick_period(std::chrono::milliseconds timeout)
{
    return std::clamp(timeout / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

void Session::Impl::complete(const Completion& done, Result r)
{
    loop.post([this, done, r = std::move(r)] {
        if (done) call_logged("completion callback", [&] { done(r); });
        --pending;
    });
}

void Session::Impl::complete_here(const Completion& done, Result r)
{
    if (done) call_logged("completion callback", [&] { done(r); });
    --pending;
}

void Session::Impl::finish(const Completion& done, Result r, const CallerThread& caller)
{
    if (caller.completes_here()) complete_here(done, std::move(r));
    else complete(done, std::move(r));
}

void Session::Impl::control_call(std::function<void()> call, std::function<void()> if_closed, std::string blob)
{
    std::lock_guard<std::mutex> lock(control_mutex_);
    if (closing_) loop.post(std::move(if_closed));
    else control->submit(std::move(call), std::move(blob));
}

std::size_t Session::Impl::series_window() const noexcept
{
    return std::min<std::size_t>(kPushesAhead, 2 * std::max(1u, options.max_connections_per_endpoint));
}

bool Session::Impl::closing()
{
    std::lock_guard<std::mutex> lock(control_mutex_);
    return closing_;
}

void Session::Impl::admit_push(std::function<void()> start)
{
    {
        std::lock_guard<std::mutex> lock(pushes_mutex_);
        if (pushes_ahead_ >= kPushesAhead) {
            pushes_waiting_.push_back(std::move(start));
            return;
        }
        ++pushes_ahead_;
    }
    start();
}

void Session::Impl::release_push()
{
    std::function<void()> next;
    {
        std::lock_guard<std::mutex> lock(pushes_mutex_);
        if (pushes_waiting_.empty()) {
            --pushes_ahead_;
            return;
        }
        next = std::move(pushes_waiting_.front());
        pushes_waiting_.pop_front();
    }
    next();  // takes over the slot
}

void Session::Impl::run(Mode mode, Completion done, const std::function<void(Completion)>& start)
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
        std::exception_ptr thrown;  ///< by the completion: rethrown to the caller
    };
    auto wait = std::make_shared<Wait>();
    ++pending;
    start([done, wait](const Result& r) {
        std::exception_ptr thrown;
        if (done) {
            try {
                done(r);
            } catch (...) {
                thrown = std::current_exception();
            }
        }
        std::lock_guard<std::mutex> lock(wait->mutex);
        wait->thrown = thrown;
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
    if (wait->thrown) std::rethrow_exception(wait->thrown);
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

namespace {

void require_caller_mode(const SessionOptions& options, const char* what)
{
    if (options.reactor != ReactorMode::Caller)
        throw Error(Errc::invalid_argument, std::string("Session::") + what +
                                                ": the session runs its own reactor thread (ReactorMode::Thread); "
                                                "use ReactorMode::Caller to drive it from the application's loop");
}

}  // namespace

int Session::descriptor() const
{
    require_caller_mode(impl_->options, "descriptor");
    return impl_->loop.descriptor();
}

std::chrono::milliseconds Session::next_timeout() const
{
    require_caller_mode(impl_->options, "next_timeout");
    return impl_->loop.next_timeout();
}

std::size_t Session::pending() const noexcept { return impl_->pending.load(); }

std::uint64_t Session::connections_opened() const noexcept { return impl_->pool.opened(); }

void Session::push(PushSource source, std::string name, PushOptions options, Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        PushOperation::start(*impl_, std::move(source), std::move(name), std::move(options), std::move(c),
                             mode == Mode::Sync);
    });
}

void Session::pull(std::string name, PullSink sink, PullOptions options, Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        PullOperation::start(*impl_, std::move(name), std::move(sink), std::move(options), std::move(c),
                             mode == Mode::Sync);
    });
}

void Session::push_series(std::vector<PushSlice> slices, PushOptions options, Mode mode, SeriesCompletion done,
                          SliceCompletion slice_done)
{
    SeriesOperation::push(*impl_, std::move(slices), std::move(options), mode, std::move(done), std::move(slice_done));
}

void Session::pull_series(std::vector<PullSlice> slices, PullOptions options, Mode mode, SeriesCompletion done,
                          SliceCompletion slice_done)
{
    SeriesOperation::pull(*impl_, std::move(slices), std::move(options), mode, std::move(done), std::move(slice_done));
}

void Session::copy(std::vector<std::string> names, CopyOptions options, Mode mode, SeriesCompletion done,
                   SliceCompletion slice_done)
{
    start_copy(*impl_, std::move(names), std::move(options), mode, std::move(done), std::move(slice_done));
}

SeriesResult Session::copy(const std::vector<std::string>& names, const CopyOptions& options)
{
    SeriesResult out;
    copy(names, options, Mode::Sync, [&out](const SeriesResult& r) { out = r; });
    return out;
}

namespace {

/// How long prune_stores() waits for each registered daemon.
constexpr std::chrono::milliseconds kPruneBound{3000};

/// A control-plane query: `body` runs on a control thread (after the
/// earlier operations on `blob`, when given) and fills the Result.
template <class Body>
void query(Session::Impl& impl, const std::string& what, Completion done, Body body, std::string blob = {})
{
    impl.control_call(
        [&impl, done, body] {
            Result r;
            try {
                body(r);
            } catch (const Error& e) {
                r = failure(e, r.store);
            }
            impl.complete(done, std::move(r));
        },
        [&impl, done, what] {
            impl.complete(done, failure(Error(Errc::cancelled, what + ": the session is closing")));
        },
        std::move(blob));
}

/// A query on the Blob `name` (`verb` names it in messages) in the store
/// StoreChoice picks; `act(control, name, r)` runs on the control thread
/// once r.store is chosen.
template <class Act>
void blob_query(Session::Impl& impl, const std::string& verb, std::string name, std::string store, Mode mode,
                Completion done, Act act)
{
    impl.run(mode, std::move(done), [&](Completion c) {
        query(
            impl, verb, std::move(c),
            [&impl, verb, name, store, act](Result& r) {
                validate_blob_name(name);
                r.store = store_holding(*impl.control, store, impl.options.default_store, name,
                                        verb + " " + quote_name(name));
                act(*impl.control, name, r);
            },
            name);
    });
}

}  // namespace

void Session::stat(std::string name, std::string store, Mode mode, Completion done)
{
    blob_query(*impl_, "stat", std::move(name), std::move(store), mode, std::move(done),
               [](ControlPlane& control, const std::string& n, Result& r) { r.info = control.stat(r.store, n); });
}

void Session::verify(std::string name, std::string store, Mode mode, Completion done)
{
    blob_query(*impl_, "verify", std::move(name), std::move(store), mode, std::move(done),
               [](ControlPlane& control, const std::string& n, Result& r) { r.info = control.verify(r.store, n); });
}

void Session::list(std::string store, Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        query(*impl_, "list", std::move(c), [impl = impl_.get(), store](Result& r) {
            const std::vector<std::string> names =
                store.empty() ? impl->control->store_names() : std::vector<std::string>{store};
            r.store = store;
            for (const auto& s : names) {
                try {
                    for (auto& info : impl->control->list(s)) r.blobs.push_back(StoredBlob{s, std::move(info)});
                } catch (const Error& e) {
                    // Across every store, one that does not answer leaves the others' answer.
                    if (!store.empty() || !did_not_answer(e)) throw;
                    r.unreachable.push_back({s, e.what()});
                }
            }
        });
    });
}

void Session::remove(std::string name, std::string store, Mode mode, Completion done)
{
    blob_query(*impl_, "rm", std::move(name), std::move(store), mode, std::move(done),
               [](ControlPlane& control, const std::string& n, Result& r) {
                   control.remove(r.store, n);
                   r.info.name = n;
               });
}

void Session::locate(std::string name, Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        query(
            *impl_, "locate", std::move(c),
            [impl = impl_.get(), name](Result& r) {
                r.info.name = name;
                r.locations = impl->control->locate(name, &r.unreachable);
            },
            name);
    });
}

void Session::stores(Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        query(*impl_, "stores", std::move(c), [impl = impl_.get()](Result& r) { r.stores = impl->control->stores(); });
    });
}

void Session::poll_notices(std::string store, Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        query(*impl_, "poll notices", std::move(c), [impl = impl_.get(), store](Result& r) {
            r.store = store;
            if (!store.empty()) {
                r.notices = impl->control->poll_notices(store);
                return;
            }
            // Each store's notices are taken once: one that fails keeps
            // them, and does not lose the others'.
            for (const auto& s : impl->control->transporter_stores()) {
                try {
                    for (auto& n : impl->control->poll_notices(s)) r.notices.push_back(std::move(n));
                } catch (const Error& e) {
                    r.unreachable.push_back({s, e.what()});
                }
            }
        });
    });
}

void Session::prune_stores(Mode mode, Completion done)
{
    impl_->run(mode, std::move(done), [&](Completion c) {
        query(*impl_, "stores --prune", std::move(c), [impl = impl_.get()](Result& r) {
            r.pruned = impl->control->prune(std::min<std::chrono::milliseconds>(impl->options.timeout, kPruneBound));
            r.stores = impl->control->stores();
        });
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
    return wait_for(
               [&](Completion c) { push(PushSource::memory(data, size), name, options, Mode::Sync, std::move(c)); })
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

std::vector<TransferNotice> Session::poll_notices(const std::string& store)
{
    return wait_for([&](Completion c) { poll_notices(store, Mode::Sync, std::move(c)); }).notices;
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
