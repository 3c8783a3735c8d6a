/// Activator (Activator.h): entries of its own for stopped stores, a
/// servant locator that starts the daemon and forwards, and the children.
#include "Activator.h"

#include <BlobStreaming.hh>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/References.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace blobstreaming::activator {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kKeptLines = 8;
/// Threads past the connection cap before omniORB would pool connections.
constexpr unsigned kSpareThreads = 16;
/// Descriptors kept for what is not an admitted connection (the daemons'
/// pipes, the Naming Service, omniORB's own, and connections omniORB
/// accepted before the gate refused them): half the limit, at least this.
constexpr unsigned long kReservedDescriptors = 64;
/// Between two summaries of refused connections in the log.
constexpr auto kSummaryEvery = std::chrono::seconds(10);
/// Longest first line of a daemon's standard output (and of a kept line).
constexpr std::size_t kMaxReadyLine = 4096;
constexpr std::chrono::seconds kBackoffFirst{1};
constexpr std::chrono::seconds kBackoffMax{60};
/// SIGTERM to SIGKILL for a running daemon when the activator stops.
constexpr std::chrono::seconds kStopGrace{30};

/// Every call on an activator's reference: activation, then LOCATION_FORWARD
/// to the daemon (the caller's ORB repeats the call there, and keeps using
/// the daemon for that reference).
class Locator final : public virtual POA_PortableServer::ServantLocator {
public:
    explicit Locator(Activator& activator) : activator_(activator) {}

    PortableServer::Servant preinvoke(const PortableServer::ObjectId& oid, PortableServer::POA_ptr, const char*,
                                      PortableServer::ServantLocator::Cookie&) override
    {
        CORBA::String_var store = PortableServer::ObjectId_to_string(oid);
        CORBA::Object_var daemon = activator_.activate(store.in());
        throw PortableServer::ForwardRequest(daemon);
    }

    void postinvoke(const PortableServer::ObjectId&, PortableServer::POA_ptr, const char*,
                    PortableServer::ServantLocator::Cookie, PortableServer::Servant) override
    {}

private:
    Activator& activator_;
};

/// Raises the soft descriptor limit to the hard one; the limit in force.
unsigned long raise_descriptor_limit()
{
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
    if (rl.rlim_cur != rl.rlim_max) {
        const rlim_t before = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) rl.rlim_cur = before;
    }
    return rl.rlim_cur == RLIM_INFINITY ? 1UL << 20 : static_cast<unsigned long>(rl.rlim_cur);
}

std::string status_text(int status)
{
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("signal ") + ::strsignal(WTERMSIG(status));
    return "status " + std::to_string(status);
}

/// "8 s", "7.3 s": whole seconds without a fraction, else one decimal, rounded up.
std::string seconds_text(Clock::duration d)
{
    const auto tenths = (std::chrono::duration_cast<std::chrono::milliseconds>(d).count() + 99) / 100;
    char buf[32];
    if (tenths % 10 == 0) std::snprintf(buf, sizeof buf, "%lld s", static_cast<long long>(tenths / 10));
    else std::snprintf(buf, sizeof buf, "%lld.%lld s", static_cast<long long>(tenths / 10),
                       static_cast<long long>(tenths % 10));
    return buf;
}

std::string times(unsigned n) { return std::to_string(n) + (n == 1 ? " time" : " times"); }

std::string joined(const std::deque<std::string>& lines)
{
    std::string out;
    for (const auto& l : lines) out += (out.empty() ? "" : " | ") + l;
    return out.empty() ? "(it wrote nothing to standard error)" : out;
}

}  // namespace

Activator::Activator(ActivatorOptions options) : options_(std::move(options))
{
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(options_.config_dir, ec)) {
        if (entry.path().extension() != ".conf") continue;
        const std::string name = entry.path().stem().string();
        try {
            validate_blob_name(name);  // a store name follows the same rules as a Blob name
        } catch (const Error&) {
            spdlog::warn("{}: \"{}\" is not a store name; ignored", entry.path().string(), name);
            continue;
        }
        auto store = std::make_unique<Store>();
        store->name = name;
        store->config = fs::absolute(entry.path()).string();
        stores_.emplace(name, std::move(store));
    }
    if (ec)
        throw Error(Errc::invalid_argument,
                    "--config-dir: cannot read \"" + options_.config_dir + "\": " + ec.message());
    if (stores_.empty())
        throw Error(Errc::invalid_argument,
                    "--config-dir: \"" + options_.config_dir + "\" holds no store configuration (NAME.conf)");

    // Anyone may connect without a credential. The gate caps connections
    // per address and in total, at half the descriptor limit, so that
    // accept() does not run out of descriptors (omniORB 4.2 would retry it
    // in a busy loop). omniORB asks the gate from a connection's own thread:
    // every connection up to the cap gets one, so that each is checked as
    // it comes (in omniORB's pool mode a silent connection is seen only
    // once it sends). An idle connection is closed after --idle-timeout
    // (omniORB's scan of incoming connections, every second), and a
    // request begun must arrive whole within it.
    const unsigned long descriptors = raise_descriptor_limit();
    const unsigned long reserved = std::max(kReservedDescriptors, descriptors / 2);
    if (options_.connections.total > descriptors - std::min(reserved, descriptors - 1))
        options_.connections.total = static_cast<unsigned>(descriptors - std::min(reserved, descriptors - 1));
    options_.connections.per_peer = std::min(options_.connections.per_peer, options_.connections.total);
    const auto idle = std::to_string(options_.idle_timeout.count());
    const unsigned threads = options_.connections.total;
    if (options_.tls.enabled()) corba::configure_ssl(options_.tls);
    orb_ = corba::init_orb({{"endPoint", options_.endpoint},
                            {"clientCallTimeOutPeriod", "2000"},
                            {"threadPerConnectionUpperLimit", std::to_string(threads + kSpareThreads)},
                            {"threadPerConnectionLowerLimit", std::to_string(threads)},
                            {"inConScanPeriod", idle},
                            {"scanGranularity", "1"},
                            {"serverCallTimeOutPeriod", idle + "000"}});
    naming_ = corba::naming_context(orb_, options_.naming);
    CORBA::Object_var obj = orb_->resolve_initial_references("RootPOA");
    PortableServer::POA_var root = PortableServer::POA::_narrow(obj);
    PortableServer::POAManager_var manager = root->the_POAManager();
    CORBA::PolicyList policies;
    policies.length(3);
    policies[0] = root->create_request_processing_policy(PortableServer::USE_SERVANT_MANAGER);
    policies[1] = root->create_servant_retention_policy(PortableServer::NON_RETAIN);
    policies[2] = root->create_id_assignment_policy(PortableServer::USER_ID);
    poa_ = root->create_POA("Activator", manager, policies);
    for (CORBA::ULong i = 0; i < policies.length(); ++i) policies[i]->destroy();
    PortableServer::Servant_var<Locator> locator = new Locator(*this);
    PortableServer::ObjectId_var id = root->activate_object(locator);
    CORBA::Object_var ref = root->id_to_reference(id);
    locator_ = PortableServer::ServantLocator::_narrow(ref);
    poa_->set_servant_manager(locator_);
    manager->activate();
    PortableServer::ObjectId_var probe = PortableServer::string_to_ObjectId("-");
    CORBA::Object_var any = poa_->create_reference_with_id(probe, BlobStreaming::BlobStore::_PD_repoId);
    own_endpoint_ = corba::endpoint_of(any);
    const auto colon = own_endpoint_.rfind(':');
    const auto port = colon == std::string::npos ? 0 : std::strtoul(own_endpoint_.c_str() + colon + 1, nullptr, 10);
    corba::connection_gate::install(static_cast<std::uint16_t>(port), options_.connections);
    spdlog::info("listening on {}: at most {} connections, {} per address; idle ones closed after {} s (descriptor "
                 "limit {})",
                 own_endpoint_, options_.connections.total, options_.connections.per_peer,
                 options_.idle_timeout.count(), descriptors);
}

Activator::~Activator() { stop(); }

void Activator::bind_own(Store& store)
{
    PortableServer::ObjectId_var oid = PortableServer::string_to_ObjectId(store.name.c_str());
    CORBA::Object_var own = poa_->create_reference_with_id(oid, BlobStreaming::BlobStore::_PD_repoId);
    corba::bind_store(naming_, store.name, own);
}

bool Activator::entry_answers(const Store& store) const
{
    CORBA::Object_var entry;
    try {
        entry = naming_->resolve(corba::store_path(store.name));
    } catch (const CosNaming::NamingContext::NotFound&) {
        return false;
    }
    if (CORBA::is_nil(entry)) return false;
    PortableServer::ObjectId_var oid = PortableServer::string_to_ObjectId(store.name.c_str());
    CORBA::Object_var own = poa_->create_reference_with_id(oid, BlobStreaming::BlobStore::_PD_repoId);
    if (entry->_is_equivalent(own)) return false;  // ours: never called (that would activate it)
    try {
        return !entry->_non_existent();
    } catch (const CORBA::SystemException&) {
        return false;  // refused, timed out: gone or hung, the entry is taken
    }
}

std::string Activator::start()
{
    std::string names;
    for (auto& [name, store] : stores_) {
        if (entry_answers(*store)) {
            spdlog::info("store \"{}\" is running already (not started here); its entry is left alone", name);
        } else {
            bind_own(*store);
            spdlog::info("store \"{}\" is activatable: BlobStreaming/Stores/{} names this activator", name, name);
        }
        names += (names.empty() ? "" : ",") + name;
    }
    return "blob-activatord ready stores=" + names;
}

std::chrono::seconds start_backoff(unsigned failures)
{
    const unsigned doublings = std::min(failures > 0 ? failures - 1 : 0u, 6u);  // 2^6 s > the cap
    return std::min(kBackoffFirst * (1 << doublings), kBackoffMax);
}

void Activator::refuse(const std::string& store, const std::string& message)
{
    try {
        throw Error(Errc::unreachable, message);
    } catch (const Error&) {
        corba::rethrow_declared(corba::kRaisesNothing, store);  // INTERNAL with the message in its context
    }
}

CORBA::Object_ptr Activator::activate(const std::string& name)
{
    const auto it = stores_.find(name);
    if (it == stores_.end()) throw CORBA::OBJECT_NOT_EXIST(0, CORBA::COMPLETED_NO);
    Store& store = *it->second;
    std::unique_lock lock(store.mutex);
    if (store.phase == Phase::running) {
        reap_running(store);
        if (store.phase == Phase::running) return CORBA::Object::_duplicate(store.daemon);
    }
    if (store.phase == Phase::starting) {
        // The entry stays this activator's until the daemon takes it (it
        // knows the activator's endpoint and does not call it): meanwhile
        // every caller waits here for the one start and gets its outcome.
        const auto bound = options_.start_timeout + options_.kill_grace + std::chrono::seconds(5);
        if (!store.changed.wait_for(lock, bound, [&] { return store.phase != Phase::starting; })) {
            lock.unlock();
            refuse(name, "blobstored is being started and has not finished within " + seconds_text(bound));
        }
        if (store.phase == Phase::running) return CORBA::Object::_duplicate(store.daemon);
        const std::string why = store.last_refusal;
        lock.unlock();
        refuse(name, why);
    }
    if (stopping_) {
        lock.unlock();
        refuse(name, "not started: the activator is stopping");
    }
    const auto now = Clock::now();
    if (store.failures > 0 && now < store.retry_at) {
        const std::string why = "not started: start failed " + times(store.failures) + ", next attempt in " +
                                seconds_text(store.retry_at - now) + "; the last: " + store.last_failure;
        lock.unlock();
        spdlog::debug("store \"{}\": a request during the back-off refused", name);
        refuse(name, why);
    }
    if (retiring(name)) {
        lock.unlock();
        refuse(name, "not started: the daemon of its last failed start is still being stopped; try again in a "
                     "second");
    }
    store.phase = Phase::starting;
    lock.unlock();

    // No lock held from here: other stores, and maintain(), go on.
    const auto t0 = Clock::now();
    Child child;
    std::string ready, why;
    CORBA::Object_var daemon;
    try {
        ready = spawn(store, child);
        daemon = naming_->resolve(corba::store_path(name));
    } catch (const std::exception& e) {
        why = e.what();
    } catch (const CORBA::Exception& e) {
        why = std::string("it printed its ready line but its Naming entry cannot be read (CORBA ") + e._name() + ")";
    }

    lock.lock();
    store.starting_pid = -1;
    if (why.empty()) {
        store.child = std::move(child);
        store.daemon = daemon;
        store.phase = Phase::running;
        ++store.starts;
        if (store.failures > 0)
            spdlog::info("store \"{}\": started after {} failed start{}; the back-off is reset", name, store.failures,
                         store.failures == 1 ? "" : "s");
        store.failures = 0;
        store.last_failure.clear();
        spdlog::info("started blobstored for store \"{}\" (pid {}, start {}) in {:.3f} s: {}", name, store.child.pid,
                     store.starts, std::chrono::duration<double>(Clock::now() - t0).count(), ready);
        store.changed.notify_all();
        return CORBA::Object::_duplicate(store.daemon);
    }
    ++store.failures;
    auto retry_at = Clock::now() + start_backoff(store.failures);
    std::string stopping;
    if (child.pid > 0) {
        stopping = "; pid " + std::to_string(child.pid) + " stopped (SIGTERM, SIGKILL after " +
                   seconds_text(options_.kill_grace) + ")";
        retry_at = std::max(retry_at, Clock::now() + options_.kill_grace + std::chrono::seconds(1));
    }
    store.retry_at = retry_at;
    store.last_failure = "blobstored did not start: " + why + stopping + "; its standard error: " +
                         joined(child.last_lines);
    const std::string next = "start failed " + times(store.failures) + ", next attempt in " +
                             seconds_text(retry_at - Clock::now());
    store.last_refusal = store.last_failure + "; " + next;
    store.phase = Phase::stopped;
    const std::string refusal = store.last_refusal;
    const std::string failure = store.last_failure;
    store.changed.notify_all();  // every waiting request is answered now
    lock.unlock();
    spdlog::error("store \"{}\": {}", name, failure);
    spdlog::warn("store \"{}\": {}", name, next);
    if (child.pid > 0) retire(name, std::move(child));
    try {
        bind_own(store);  // the daemon may have registered before it hung
    } catch (const CORBA::Exception& e) {
        spdlog::warn("store \"{}\": cannot take its entry back (CORBA {}); trying again", name, e._name());
    }
    refuse(name, refusal);
}

std::string Activator::spawn(Store& store, Child& child)
{
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    UniqueFd out_read(out[0]), out_write(out[1]);
    if (::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    UniqueFd err_read(err[0]), err_write(err[1]);
    const std::vector<std::string> args = {options_.blobstored, "--name",   store.name,     "--config",
                                           store.config,        "--naming", options_.naming};
    std::vector<std::string> env;  // built before fork(): the child only calls async-signal-safe functions
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "BLOBSTREAMING_ACTIVATOR_ENDPOINT=", 33) != 0) env.emplace_back(*e);
    env.push_back("BLOBSTREAMING_ACTIVATOR_ENDPOINT=" + own_endpoint_);
    std::vector<char*> argv, envp;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const std::string cannot_run = "cannot run " + args[0] + ": ";
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlives the activator
        if (::getppid() != parent) ::_exit(127);
        ::dup2(out_write.get(), STDOUT_FILENO);
        ::dup2(err_write.get(), STDERR_FILENO);
        sigset_t none;
        ::sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execve(argv[0], argv.data(), envp.data());
        const char* reason = std::strerror(errno);
        (void)!::write(STDERR_FILENO, cannot_run.data(), cannot_run.size());
        (void)!::write(STDERR_FILENO, reason, std::strlen(reason));
        (void)!::write(STDERR_FILENO, "\n", 1);
        ::_exit(127);
    }
    out_write.reset();
    err_write.reset();
    child.pid = pid;
    ::fcntl(err_read.get(), F_SETFL, O_NONBLOCK);
    child.stderr_fd = std::move(err_read);
    {
        std::lock_guard lock(store.mutex);
        store.starting_pid = pid;
    }
    spdlog::info("store \"{}\": starting blobstored (pid {})", store.name, pid);
    std::string line;
    const auto deadline = Clock::now() + options_.start_timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            drain_stderr(store.name, child);
            throw std::runtime_error("no ready line within " + seconds_text(options_.start_timeout));
        }
        pollfd fds[2] = {{out_read.get(), POLLIN, 0}, {child.stderr_fd.get(), POLLIN, 0}};
        ::poll(fds, 2, static_cast<int>(std::min<long long>(left, 200)));
        if (fds[1].revents) drain_stderr(store.name, child);
        if (!fds[0].revents) continue;
        char buf[256];
        const ssize_t n = ::read(out_read.get(), buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n > 0) {
            line.append(buf, static_cast<std::size_t>(n));
            const auto nl = line.find('\n');
            if (nl == std::string::npos && line.size() < kMaxReadyLine) continue;
            line.resize(std::min(nl, line.size()));
            if (line.rfind("blobstored ready ", 0) == 0) return line;
            if (line.size() > 200) line = line.substr(0, 200) + "…";
            throw std::runtime_error("its first line of output is not a ready line: \"" + line + "\"");
        }
        // Standard output closed without a ready line: it is ending, give it
        // a moment to do so for its exit status.
        for (int i = 0; i < 50; ++i) {
            int status = 0;
            if (::waitpid(pid, &status, WNOHANG) == pid) {
                child.pid = -1;
                drain_stderr(store.name, child);
                throw std::runtime_error("it exited with " + status_text(status) + " at start");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        drain_stderr(store.name, child);
        throw std::runtime_error("it closed its standard output without a ready line");
    }
}

void Activator::drain_stderr(const std::string& store, Child& child) noexcept
{
    if (!child.stderr_fd) return;
    char buf[4096];
    std::string& partial = child.partial;
    for (;;) {
        const ssize_t n = ::read(child.stderr_fd.get(), buf, sizeof buf);
        if (n <= 0) break;
        partial.append(buf, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = partial.find('\n')) != std::string::npos) {
            std::string l = partial.substr(0, nl);
            partial.erase(0, nl + 1);
            std::fprintf(stderr, "[%s] %s\n", store.c_str(), l.c_str());  // the daemon's log, forwarded
            child.last_lines.push_back(std::move(l));
            if (child.last_lines.size() > kKeptLines) child.last_lines.pop_front();
        }
        if (partial.size() > kMaxReadyLine) partial.clear();  // a line without end is not kept whole
    }
}

void Activator::reap_running(Store& store) noexcept
{
    drain_stderr(store.name, store.child);
    if (store.child.pid <= 0) return;
    int status = 0;
    if (::waitpid(store.child.pid, &status, WNOHANG) != store.child.pid) return;
    drain_stderr(store.name, store.child);
    spdlog::warn("blobstored for store \"{}\" (pid {}) ended with {}", store.name, store.child.pid,
                 status_text(status));
    store.child = Child{};
    store.daemon = CORBA::Object::_nil();
    store.phase = Phase::stopped;
}

void Activator::retire(const std::string& store, Child child)
{
    ::kill(child.pid, SIGTERM);
    std::lock_guard lock(retired_mutex_);
    retired_.push_back({store, std::move(child), Clock::now() + options_.kill_grace, false});
}

bool Activator::retiring(const std::string& store)
{
    std::lock_guard lock(retired_mutex_);
    return std::any_of(retired_.begin(), retired_.end(), [&](const Retired& r) { return r.store == store; });
}

std::vector<std::string> Activator::stop_retired(bool at_exit) noexcept
{
    std::vector<std::string> ended;
    std::lock_guard lock(retired_mutex_);
    for (auto it = retired_.begin(); it != retired_.end();) {
        drain_stderr(it->store, it->child);
        int status = 0;
        if (::waitpid(it->child.pid, &status, WNOHANG) == it->child.pid) {
            drain_stderr(it->store, it->child);
            spdlog::info("store \"{}\": pid {} of the failed start ended with {}", it->store, it->child.pid,
                         status_text(status));
            ended.push_back(it->store);
            it = retired_.erase(it);
            continue;
        }
        if (!it->killed && (at_exit || Clock::now() >= it->kill_at)) {
            if (!at_exit)
                spdlog::warn("store \"{}\": pid {} of the failed start did not end within {} of SIGTERM: SIGKILL",
                             it->store, it->child.pid, seconds_text(options_.kill_grace));
            ::kill(it->child.pid, SIGKILL);
            it->killed = true;
        }
        ++it;
    }
    return ended;
}

void Activator::maintain()
{
    corba::connection_gate::sweep();
    if (Clock::now() - summary_at_ >= kSummaryEvery) {
        summary_at_ = Clock::now();
        if (const std::string s = corba::connection_gate::summary(); !s.empty()) spdlog::warn("{}", s);
    }
    const std::vector<std::string> ended = stop_retired(false);
    for (auto& [name, store] : stores_) {
        std::unique_lock lock(store->mutex, std::try_to_lock);
        if (!lock || store->phase == Phase::starting) continue;
        bool check = std::find(ended.begin(), ended.end(), name) != ended.end();
        if (store->phase == Phase::running) {
            reap_running(*store);
            check = store->phase == Phase::stopped;
        }
        if (!check) continue;
        try {
            if (!entry_answers(*store)) {
                bind_own(*store);
                spdlog::info("store \"{}\": its entry names this activator again; the next request starts it", name);
            }
        } catch (const CORBA::Exception& e) {
            spdlog::warn("store \"{}\": cannot take its entry back (CORBA {}); trying again", name, e._name());
        }
    }
}

void Activator::stop() noexcept
{
    if (CORBA::is_nil(orb_)) return;
    stopping_ = true;
    for (auto& [name, store] : stores_) {
        Child running;
        {
            std::lock_guard lock(store->mutex);
            if (store->starting_pid > 0) {
                spdlog::info("stopping: the start of store \"{}\" (pid {}) is abandoned", name, store->starting_pid);
                ::kill(store->starting_pid, SIGKILL);  // its request is answered once it has ended
            }
            if (store->phase == Phase::running) {
                running = std::move(store->child);
                store->child = Child{};
                store->daemon = CORBA::Object::_nil();
                store->phase = Phase::stopped;
            }
        }
        try {
            if (running.pid <= 0 && !entry_answers(*store)) corba::unbind_store(naming_, name);
        } catch (...) {}
        if (running.pid > 0) {
            spdlog::info("stopping blobstored for store \"{}\" (pid {})", name, running.pid);
            ::kill(running.pid, SIGTERM);
            const auto deadline = Clock::now() + kStopGrace;
            int status = 0;
            while (::waitpid(running.pid, &status, WNOHANG) == 0) {
                if (Clock::now() > deadline) {
                    spdlog::warn("blobstored for store \"{}\" (pid {}) did not end within {}: SIGKILL", name,
                                 running.pid, seconds_text(kStopGrace));
                    ::kill(running.pid, SIGKILL);
                    ::waitpid(running.pid, &status, 0);
                    break;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            drain_stderr(name, running);
        }
    }
    try {
        orb_->destroy();  // waits for requests in flight: a start ends within its SIGKILL
    } catch (...) {}
    orb_ = CORBA::ORB::_nil();
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    for (;;) {
        stop_retired(true);
        std::lock_guard lock(retired_mutex_);
        if (retired_.empty() || Clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace blobstreaming::activator
