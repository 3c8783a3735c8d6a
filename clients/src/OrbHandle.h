#pragma once
/// The process's one ORB, shared by every Session: the first handle
/// initialises it (with the Session's TLS files and call timeout), the last
/// one destroys it. omniORB has one SSL context per process, so Sessions
/// alive at the same time must use the same TLS files.

#include <blobstreaming/client/Options.h>

#include <omniORB4/CORBA.h>

namespace blobstreaming::client {

class OrbHandle {
public:
    /// Joins the process's ORB, initialising it when no other handle is
    /// alive. Throws Error: unusable TLS files (Errc::invalid_argument
    /// naming the option), or other TLS files than those of the live ORB.
    explicit OrbHandle(const SessionOptions& options);
    /// Leaves the ORB; the last handle destroys it (failures are logged).
    ~OrbHandle();
    OrbHandle(const OrbHandle&) = delete;
    OrbHandle& operator=(const OrbHandle&) = delete;

    /// The ORB, valid while this handle lives (not a new reference).
    CORBA::ORB_ptr orb() const noexcept { return orb_.in(); }

private:
    CORBA::ORB_var orb_;
};

}  // namespace blobstreaming::client
