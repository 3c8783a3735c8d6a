#pragma once
/// blob-activatord (docs/ACTIVATION.md): an implementation repository for
/// Blob stores. For every configured store that is not running it binds
/// BlobStreaming/Stores/NAME to a reference of its own; the first call on
/// that reference starts `blobstored` for the store, waits for its ready
/// line and answers the call with LOCATION_FORWARD to the live daemon,
/// which took the entry meanwhile: the caller's ORB repeats the call there.
/// A daemon that exits is noticed and its entry taken back, so that the
/// next request starts it again.

#include <omniORB4/CORBA.h>
#include <omniORB4/Naming.hh>

#include <chrono>
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
    std::string endpoint;    ///< this activator's omniORB endPoint
    std::chrono::seconds start_timeout{30};
};

class Activator {
public:
    /// Reads the configuration directory (Error invalid_argument when it
    /// holds no NAME.conf or cannot be read) and sets up the ORB and POA.
    explicit Activator(ActivatorOptions options);
    ~Activator();

    /// Binds the entries of the stores that are not running; the ready line.
    std::string start();
    /// Every second: reaps daemons that exited and takes their entries back.
    void maintain();
    /// Removes its own entries and stops the daemons it started (SIGTERM,
    /// then SIGKILL after 30 s), by PID.
    void stop() noexcept;

    /// For the servant locator (a POA thread): the live daemon's reference
    /// for `store`, starting it when needed; concurrent calls start one.
    /// CORBA::TRANSIENT when it cannot be started (the reason is logged).
    CORBA::Object_ptr activate(const std::string& store);

    struct Store {
        std::string name;
        std::string config;
        std::mutex mutex;  ///< one activation at a time
        pid_t pid = -1;    ///< the daemon while it runs
        int stderr_fd = -1;
        std::string partial;                 ///< of its standard error, up to the next newline
        std::deque<std::string> last_lines;  ///< of its standard error, for the log of a failed start
        CORBA::Object_var daemon;            ///< its reference once ready
        unsigned starts = 0;
    };

private:
    void bind_own(Store& store);
    bool entry_answers(const Store& store) const;
    std::string spawn(Store& store);  ///< the ready line, or throws std::runtime_error with the reason
    void drain_stderr(Store& store) noexcept;
    void reap(Store& store, bool wait) noexcept;

    ActivatorOptions options_;
    CORBA::ORB_var orb_;
    PortableServer::POA_var poa_;
    CosNaming::NamingContext_var naming_;
    std::map<std::string, std::unique_ptr<Store>> stores_;
    PortableServer::ServantLocator_var locator_;
    std::string own_endpoint_;  ///< HOST:PORT of its references, told to the daemons it starts
};

}  // namespace blobstreaming::activator
