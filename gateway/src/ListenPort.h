#pragma once

/// The gateway's DICOM port from its start until its listener holds it.
///
/// The listener (AssociationGate) binds on a thread of its own, after the
/// Session has opened the ORB's endpoints. Without a reservation the kernel
/// may hand the very port to one of those endpoints, or to an outgoing
/// connection, in between (the listener then fails after start), and
/// nothing tells when the gateway answers. A PortReservation binds the port
/// (SO_REUSEADDR, not listening: the listener's own bind, also SO_REUSEADDR,
/// succeeds beside it, and the kernel hands the port to nobody else) at
/// start; port 0 takes a free port, which the ready line names.

#include <atomic>
#include <chrono>
#include <string>

namespace blobstreaming::dicom {

class PortReservation {
public:
    /// Binds `port` (0: any free port) on `address` (an IPv4 address; "" :
    /// every interface). Throws Error(unreachable) naming the port when it
    /// is taken or not allowed.
    explicit PortReservation(unsigned port, const std::string& address = {});
    ~PortReservation();
    PortReservation(const PortReservation&) = delete;
    PortReservation& operator=(const PortReservation&) = delete;

    /// The port held: the one asked for, or the one the kernel chose for 0.
    unsigned port() const { return port_; }

    /// Waits until a socket of this process listens on port(), then gives
    /// the port up. False when `listener_ended` is set first (the listener
    /// failed: its message says why) or after `limit`.
    bool await_listener(const std::atomic<bool>& listener_ended, std::chrono::milliseconds limit);

private:
    int fd_ = -1;
    unsigned port_ = 0;
};

}  // namespace blobstreaming::dicom
