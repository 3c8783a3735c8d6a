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
///   address that holds the most (shutdown() of its socket: omniORB sees
///   the end and closes it), unless the newcomer's own address is that one,
///   which is then refused. So no address, nor a few, can keep the others
///   out.
/// The counts come from the kernel's table of TCP sockets (/proc/net/tcp
/// and tcp6: the connections whose local port is the endpoint's, by remote
/// address, accepted ones only), read again at most every 100 ms and
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
void install(std::uint16_t port, GateLimits limits);

/// Main thread, every 250 ms: ends the connections beyond the caps that
/// the gate was not asked about (omniORB asks from a connection's thread;
/// past the thread limit it serves connections from its pool and asks
/// only once one sends), newest first.
void sweep();

/// What was refused or ended since the last call ("" when nothing was):
/// for the log, at most every few seconds.
std::string summary();

}  // namespace connection_gate

/// For a program whose main thread does not wake every 250 ms: a thread of
/// its own calls connection_gate::sweep() every 250 ms and logs
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
