#pragma once
/// ConnectionGate: caps the TCP connections to a daemon's CORBA endpoint
/// (blobstored's control port, blob-activatord's), which anyone may open
/// without a credential (with TLS too: the gate sees a connection before its
/// handshake, so peers are told apart by address). omniORB accepts
/// every connection; its serverAcceptConnection interceptor (installed
/// here, once per process) asks the gate, which
/// - refuses a newcomer whose address holds `per_peer` connections already
///   (omniORB closes it at once);
/// - when `total` connections are open, makes room by ending one of the
///   other address that holds the most (shutdown() of its socket: omniORB
///   sees the end and closes it), unless that address holds fewer than the
///   newcomer's would with it: the newcomer is then refused. So no address,
///   nor a few, can keep the others out.
/// The counts come from the kernel's table of TCP sockets (asked with
/// sock_diag for the connections whose local port is the endpoint's, else
/// read from /proc/net/tcp and tcp6; by remote address, accepted ones
/// only), read again at most every 100 ms and
/// counted up by the connections accepted since, so they never count too
/// few.
/// Refusals are logged once per address and in a summary (summary()).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace blobstreaming::corba {

struct GateLimits {
    unsigned total = 512;    ///< connections open at once
    unsigned per_peer = 16;  ///< from one address
};

namespace connection_gate {

/// Starts gating connections whose local port is `port` (one endpoint per
/// process). Call after ORB_init, before the POA manager is activated.
/// `threaded`: omniORB's threadPerConnectionLowerLimit, when below
/// `limits.total` (0: not below): while the process holds fewer
/// descriptors, omniORB asks the gate about every new connection, so
/// sweep() need not read the kernel's table once a sweep found nothing
/// beyond the caps.
void install(std::uint16_t port, GateLimits limits, unsigned threaded = 0);

/// Every 250 ms (one thread at a time): ends the connections beyond the
/// caps that the gate was not asked about (omniORB asks from a
/// connection's thread; past the thread limit it serves connections from
/// its pool and asks only once one sends), newest first. Needs no new
/// descriptor (the files it reads were opened by install()), so it works
/// when omniORB has taken them all. Returns how many it ended.
unsigned sweep();

/// What was refused or ended since the last call ("" when nothing was):
/// for the log, at most every few seconds.
std::string summary();

}  // namespace connection_gate

/// For a program whose main thread does not wake every 250 ms: a thread of
/// its own calls connection_gate::sweep() every 250 ms (every 20 ms while
/// a sweep ends connections: a burst omniORB accepted faster than it asked
/// the gate) and logs
/// connection_gate::summary() as a warning at most every 10 s, from start()
/// until stop() (or destruction).
class GateSweeper {
public:
    GateSweeper() = default;
    ~GateSweeper() { stop(); }
    GateSweeper(const GateSweeper&) = delete;
    GateSweeper& operator=(const GateSweeper&) = delete;

    void start();
    /// Returns once the thread has ended; idempotent.
    void stop();

private:
    void run();

    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace blobstreaming::corba
