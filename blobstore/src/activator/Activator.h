#pragma once
/// blob-activatord (docs/ACTIVATION.md): an implementation repository for
/// Blob stores. For every configured store that is not running it binds
/// BlobStreaming/Stores/NAME to a reference of its own; the first call on
/// that reference starts `blobstored` for the store, waits for its ready
/// line and answers the call with LOCATION_FORWARD to the live daemon,
/// which took the entry meanwhile: the caller's ORB repeats the call there.
/// A daemon that exits is noticed and its entry taken back, so that the
/// next request starts it again.
///
/// A start that fails (no ready line within --start-timeout, or the daemon
/// exits first) answers every request waiting for it at once with the
/// reason; a daemon that did not start is stopped off the request path
/// (SIGTERM, SIGKILL after --kill-grace). Failed starts back off: the next
/// one is allowed 1 s after the first failure, doubling up to 60 s; a
/// request meanwhile is refused at once saying when. A successful start
/// resets the back-off.

#include <blobstreaming/common/TlsFiles.h>
#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/corba/ConnectionGate.h>

#include <omniORB4/CORBA.h>
#include <omniORB4/Naming.hh>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sys/types.h>

namespace blobstreaming::activator {

struct ActivatorOptions {
    std::string naming;      ///< the Naming Service the stores register in
    std::string config_dir;  ///< NAME.conf per store (blobstored's --config format)
    std::string blobstored;  ///< the daemon's program
    std::string endpoint;    ///< this activator's omniORB endPoint (giop:ssl with tls)
    /// TLS stores (--tls-*): the activator's own references are TLS-only
    /// (a TLS client refuses a plaintext one), and it checks a running
    /// store's entry over TLS with this identity. Empty: plain TCP.
    TlsFiles tls;
    std::chrono::seconds start_timeout{30};
    std::chrono::seconds kill_grace{5};  ///< SIGTERM to SIGKILL for a daemon that did not start
    /// A connection without a request in progress is closed after this;
    /// a request must arrive whole within it once begun.
    std::chrono::seconds idle_timeout{10};
    corba::GateLimits connections;  ///< lowered to fit the descriptor limit
};

/// The back-off after `failures` consecutive failed starts (at least 1):
/// 1 s, 2 s, 4 s, ... at most 60 s.
std::chrono::seconds start_backoff(unsigned failures);

class Activator {
public:
    /// Reads the configuration directory (Error invalid_argument when it
    /// holds no NAME.conf or cannot be read) and sets up the ORB and POA.
    explicit Activator(ActivatorOptions options);
    ~Activator();

    /// Binds the entries of the stores that are not running; the ready line.
    std::string start();
    /// Main thread, every 250 ms: reaps daemons that exited and takes their
    /// entries back; stops the daemons of failed starts (SIGKILL once their
    /// grace is over) and reaps them. Never blocks on a child.
    void maintain();
    /// Removes its own entries and stops the daemons it started (SIGTERM,
    /// then SIGKILL after 30 s), by PID; a start in flight is ended (SIGKILL).
    void stop() noexcept;

    /// For the servant locator (a POA thread): the live daemon's reference
    /// for `store`, starting it when needed. Concurrent calls for one store
    /// wait for the one start in flight; the start runs without any lock
    /// held, so other stores are served meanwhile. When the store cannot be
    /// started, or its back-off is not over, raises CORBA::INTERNAL with the
    /// reason in the error context (corba::rethrow_declared: the client
    /// reports Errc::unreachable and the message).
    CORBA::Object_ptr activate(const std::string& store);

    /// A child process and what it wrote to its standard error.
    struct Child {
        pid_t pid = -1;
        UniqueFd stderr_fd;
        std::string partial;                 ///< of its standard error, up to the next newline
        std::deque<std::string> last_lines;  ///< of its standard error, for the reason of a failed start
    };

    enum class Phase { stopped, starting, running };

    struct Store {
        std::string name;
        std::string config;
        std::mutex mutex;                  ///< guards everything below
        std::condition_variable changed;   ///< a start ended (phase left `starting`)
        Phase phase = Phase::stopped;
        Child child;                       ///< the daemon while running
        pid_t starting_pid = -1;           ///< the daemon of the start in flight
        CORBA::Object_var daemon;          ///< its reference once ready
        unsigned starts = 0;               ///< successful starts
        unsigned failures = 0;             ///< consecutive failed starts
        std::chrono::steady_clock::time_point retry_at;  ///< no start before (back-off)
        std::string last_failure;          ///< why the last start failed
        std::string last_refusal;          ///< what the requests waiting for it were answered
    };

private:
    /// A daemon that did not start, being stopped by maintain().
    struct Retired {
        std::string store;
        Child child;
        std::chrono::steady_clock::time_point kill_at;
        bool killed = false;
    };

    void bind_own(Store& store);
    bool entry_answers(const Store& store) const;
    /// Forks and execs the daemon into `child`, reads its standard output
    /// until the ready line (returned). Throws std::runtime_error with the
    /// reason; `child.pid` stays > 0 when the process may still run.
    std::string spawn(Store& store, Child& child);
    void drain_stderr(const std::string& store, Child& child) noexcept;
    /// Reaps a running daemon that ended (without waiting). Store locked.
    void reap_running(Store& store) noexcept;
    /// SIGTERM now, SIGKILL after the grace (maintain()).
    void retire(const std::string& store, Child child);
    bool retiring(const std::string& store);
    /// Reaps retired daemons that ended (their stores returned), SIGKILLs
    /// those whose grace is over (all of them `at_exit`).
    std::vector<std::string> stop_retired(bool at_exit) noexcept;
    [[noreturn]] void refuse(const std::string& store, const std::string& message);

    ActivatorOptions options_;
    CORBA::ORB_var orb_;
    PortableServer::POA_var poa_;
    CosNaming::NamingContext_var naming_;
    std::map<std::string, std::unique_ptr<Store>> stores_;
    PortableServer::ServantLocator_var locator_;
    std::string own_endpoint_;  ///< HOST:PORT of its references, told to the daemons it starts
    std::atomic<bool> stopping_{false};
    std::chrono::steady_clock::time_point summary_at_;  ///< of the connection gate's last summary
    std::mutex retired_mutex_;
    std::vector<Retired> retired_;
};

}  // namespace blobstreaming::activator
