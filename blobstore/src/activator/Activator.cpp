/// Activator (Activator.h): entries of its own for stopped stores, a
/// servant locator that starts the daemon and forwards, and the children.
#include "Activator.h"

#include <BlobStreaming.hh>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/References.h>

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
#include <sys/wait.h>
#include <unistd.h>

namespace blobstreaming::activator {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kKeptLines = 8;

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

std::string status_text(int status)
{
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("signal ") + ::strsignal(WTERMSIG(status));
    return "status " + std::to_string(status);
}

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

    orb_ = corba::init_orb({{"endPoint", options_.endpoint}, {"clientCallTimeOutPeriod", "2000"}});
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

CORBA::Object_ptr Activator::activate(const std::string& name)
{
    const auto it = stores_.find(name);
    if (it == stores_.end()) throw CORBA::OBJECT_NOT_EXIST(0, CORBA::COMPLETED_NO);
    Store& store = *it->second;
    std::lock_guard lock(store.mutex);
    reap(store, false);
    if (store.pid > 0 && !CORBA::is_nil(store.daemon)) return CORBA::Object::_duplicate(store.daemon);
    const auto t0 = Clock::now();
    // The entry stays this activator's until the daemon takes it (it knows
    // the activator's endpoint and does not call it): meanwhile other
    // callers wait here for this start, none finds the store missing.
    try {
        const std::string ready = spawn(store);
        store.daemon = naming_->resolve(corba::store_path(name));
        ++store.starts;
        spdlog::info("started blobstored for store \"{}\" (pid {}, start {}) in {:.3f} s: {}", name, store.pid,
                     store.starts, std::chrono::duration<double>(Clock::now() - t0).count(), ready);
        return CORBA::Object::_duplicate(store.daemon);
    } catch (const std::exception& e) {
        spdlog::error("store \"{}\": blobstored did not start: {}; its standard error: {}", name, e.what(),
                      joined(store.last_lines));
    } catch (const CORBA::Exception& e) {
        spdlog::error("store \"{}\": blobstored started but is not registered (CORBA {})", name, e._name());
    }
    reap(store, true);
    bind_own(store);  // the next request tries again
    throw CORBA::TRANSIENT(0, CORBA::COMPLETED_NO);
}

std::string Activator::spawn(Store& store)
{
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
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
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlives the activator
        if (::getppid() != parent) ::_exit(127);
        ::dup2(out[1], STDOUT_FILENO);
        ::dup2(err[1], STDERR_FILENO);
        sigset_t none;
        ::sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execve(argv[0], argv.data(), envp.data());
        const std::string why = "cannot run " + args[0] + ": " + std::strerror(errno) + "\n";
        (void)!::write(STDERR_FILENO, why.data(), why.size());
        ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    store.pid = pid;
    store.stderr_fd = err[0];
    ::fcntl(err[0], F_SETFL, O_NONBLOCK);
    store.last_lines.clear();
    std::string line;
    const auto deadline = Clock::now() + options_.start_timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            ::close(out[0]);
            throw std::runtime_error("no ready line within " + std::to_string(options_.start_timeout.count()) + " s");
        }
        pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
        ::poll(fds, 2, static_cast<int>(std::min<long long>(left, 200)));
        if (fds[1].revents) drain_stderr(store);
        if (!fds[0].revents) continue;
        char c;
        const ssize_t n = ::read(out[0], &c, 1);
        if (n == 1 && c != '\n') {
            line += c;
            continue;
        }
        ::close(out[0]);
        if (n == 1 && line.rfind("blobstored ready ", 0) == 0) return line;
        drain_stderr(store);
        int status = 0;
        if (::waitpid(pid, &status, 0) == pid) {
            store.pid = -1;
            throw std::runtime_error("it ended with " + status_text(status));
        }
        throw std::runtime_error("it closed its standard output without a ready line");
    }
}

void Activator::drain_stderr(Store& store) noexcept
{
    if (store.stderr_fd < 0) return;
    char buf[4096];
    std::string& partial = store.partial;
    for (;;) {
        const ssize_t n = ::read(store.stderr_fd, buf, sizeof buf);
        if (n <= 0) break;
        partial.append(buf, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = partial.find('\n')) != std::string::npos) {
            std::string l = partial.substr(0, nl);
            partial.erase(0, nl + 1);
            std::fprintf(stderr, "[%s] %s\n", store.name.c_str(), l.c_str());  // the daemon's log, forwarded
            store.last_lines.push_back(std::move(l));
            if (store.last_lines.size() > kKeptLines) store.last_lines.pop_front();
        }
    }
}

void Activator::reap(Store& store, bool wait) noexcept
{
    drain_stderr(store);
    if (store.pid <= 0) return;
    if (wait) ::kill(store.pid, SIGTERM);
    int status = 0;
    const pid_t r = ::waitpid(store.pid, &status, wait ? 0 : WNOHANG);
    if (r != store.pid) return;
    drain_stderr(store);
    spdlog::warn("blobstored for store \"{}\" (pid {}) ended with {}", store.name, store.pid, status_text(status));
    store.pid = -1;
    store.daemon = CORBA::Object::_nil();
    if (store.stderr_fd >= 0) ::close(store.stderr_fd);
    store.stderr_fd = -1;
}

void Activator::maintain()
{
    for (auto& [name, store] : stores_) {
        std::unique_lock lock(store->mutex, std::try_to_lock);
        if (!lock) continue;  // being activated
        const bool was_running = store->pid > 0;
        reap(*store, false);
        if (was_running && store->pid <= 0) {
            try {
                if (!entry_answers(*store)) {
                    bind_own(*store);
                    spdlog::info("store \"{}\": its entry names this activator again; the next request starts it",
                                 name);
                }
            } catch (const CORBA::Exception& e) {
                spdlog::warn("store \"{}\": cannot take its entry back (CORBA {}); trying again", name, e._name());
            }
        }
    }
}

void Activator::stop() noexcept
{
    if (CORBA::is_nil(orb_)) return;
    for (auto& [name, store] : stores_) {
        try {
            if (store->pid <= 0 && !entry_answers(*store)) corba::unbind_store(naming_, name);
        } catch (...) {}
        if (store->pid > 0) {
            spdlog::info("stopping blobstored for store \"{}\" (pid {})", name, store->pid);
            ::kill(store->pid, SIGTERM);
            const auto deadline = Clock::now() + std::chrono::seconds(30);
            int status = 0;
            while (::waitpid(store->pid, &status, WNOHANG) == 0) {
                if (Clock::now() > deadline) {
                    ::kill(store->pid, SIGKILL);
                    ::waitpid(store->pid, &status, 0);
                    break;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            drain_stderr(*store);
            store->pid = -1;
        }
    }
    try {
        orb_->destroy();
    } catch (...) {}
    orb_ = CORBA::ORB::_nil();
}

}  // namespace blobstreaming::activator
