#pragma once
/// ConnectionGate: caps the TCP connections to blob-activatord's CORBA
/// endpoint, which anyone may open without a credential. omniORB accepts
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

#include <cstdint>
#include <string>

namespace blobstreaming::activator {

struct ConnectionLimits {
    unsigned total = 512;    ///< connections open at once
    unsigned per_peer = 16;  ///< from one address
};

namespace connection_gate {

/// Starts gating connections whose local port is `port`. Call after
/// ORB_init, before the POA manager is activated.
void install(std::uint16_t port, ConnectionLimits limits);

/// Main thread, every 250 ms: ends the connections beyond the caps that
/// the gate was not asked about (omniORB asks from a connection's thread;
/// past the thread limit it serves connections from its pool and asks
/// only once one sends), newest first.
void sweep();

/// What was refused or ended since the last call ("" when nothing was):
/// for the log, at most every few seconds.
std::string summary();

}  // namespace connection_gate
}  // namespace blobstreaming::activator
