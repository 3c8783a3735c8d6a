#pragma once
/// How a Session talks to the stores. Plain data, no CORBA or ACE types.

#include <blobstreaming/client/Notice.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace blobstreaming::client {

/// Who drives the Session's event loop (the data connections and every
/// completion callback).
enum class ReactorMode {
    /// A thread owned by the Session (the default): callbacks run on it.
    Thread,
    /// The application: it calls Session::run_once() from one thread of its
    /// choice, and callbacks run on that thread, inside run_once().
    Caller,
};

struct SessionOptions {
    /// Naming Service URL: corbaname::HOST:PORT or corbaloc::HOST:PORT/NameService.
    std::string naming_url = "corbaname::127.0.0.1:2809";
    /// Store used when an operation names none ("" : see each operation).
    std::string default_store;
    /// SO_SNDBUF / SO_RCVBUF of data connections in bytes; 0 leaves them to
    /// Linux autotuning.
    int send_buffer = 0;
    int receive_buffer = 0;
    bool no_delay = true;  ///< TCP_NODELAY on data connections
    /// Inactivity timeout: a transfer or a control call that makes no
    /// progress for this long fails with Errc::timeout.
    std::chrono::milliseconds timeout{30000};
    /// Pull through the store's file when it is on this host (same boot id).
    bool local_fast_path = true;
    /// Whole-Blob pulls in place (PullSink::in_place) keep the store files
    /// they served open and mapped, at most this many files and this many
    /// bytes of mappings (the least recently served dropped first; the
    /// files also at most a quarter of RLIMIT_NOFILE's soft limit): a pull
    /// of the same version again checks its checksum over the kept mapping
    /// instead of opening and mapping the file anew (docs/CLIENT_API.md,
    /// "Inside the library"). 0: none kept.
    std::size_t kept_mappings = 256;
    std::uint64_t kept_mapping_bytes = std::uint64_t{1} << 30;
    /// A push or pull to a store whose pooled data connection advertised
    /// named requests names its Blob there, without a control call
    /// (docs/PROTOCOL.md, "Named requests"); false: always a ticket first.
    bool named_requests = true;
    /// Data connections per data endpoint; further transfers wait for one.
    unsigned max_connections_per_endpoint = 8;
    ReactorMode reactor = ReactorMode::Thread;
    /// TLS on both planes (PEM files; all three or none): this client's
    /// certificate and private key, and the CA that stores' certificates
    /// must chain to. The stores then see the certificate's subject and
    /// apply their access lists to it. One ORB serves every Session of a
    /// process: all Sessions alive at the same time must give the same files.
    std::string tls_cert;
    std::string tls_key;
    std::string tls_ca;
    /// Receives the notices of transfers made with NoticeMode::send
    /// (Notice.h: which thread, what it must not do). Required by such a
    /// transfer (Errc::invalid_argument without it); unused otherwise. The
    /// first of them makes the Session serve a callback object in the
    /// process's ORB, which each store calls back (Watch.h: which address
    /// the stores connect to).
    NoticeCallback on_notice;
    /// Where the process's ORB listens for the stores' callbacks (transfer
    /// notices, Watch events) and, in a gateway, for its study-event
    /// subscribers: "HOST" or "HOST:PORT" (IPv4 address or name; port 0 or
    /// none: ephemeral). "" : 127.0.0.1 when the Naming Service is on a
    /// loopback address (every daemon it names is then on this host), else
    /// every interface, so that stores on other hosts can call back
    /// (callback_endpoint()). The ORB opens it only when something is
    /// served (a Watch, a notice, study events). One ORB serves the
    /// process: the first Session's choice holds.
    std::string callback_address;
};

/// The omniORB endPoint that `options` asks for ("giop:tcp:HOST:PORT"), ""
/// for every interface. Error(invalid_argument) naming the value when
/// callback_address is not HOST[:PORT].
std::string callback_endpoint(const SessionOptions& options);

}  // namespace blobstreaming::client
