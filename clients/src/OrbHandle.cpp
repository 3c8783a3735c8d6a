// The process-wide ORB and its reference count (OrbHandle.h).
#include "OrbHandle.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/TlsFiles.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <blobstreaming/transporter/Log.h>

#include <mutex>
#include <string>

namespace blobstreaming::client {

namespace {

/// Guards the ORB, its users and its TLS files.
std::mutex orb_mutex;
unsigned orb_users = 0;
TlsFiles orb_tls;  ///< what the live ORB was initialised with

/// The live ORB (nil when none). Never destroyed: a Session still open when
/// the process exits must not have its ORB released by a static destructor.
CORBA::ORB_var& live_orb()
{
    static auto* orb = new CORBA::ORB_var;
    return *orb;
}

}  // namespace

OrbHandle::OrbHandle(const SessionOptions& options)
{
    std::lock_guard<std::mutex> lock(orb_mutex);
    const TlsFiles tls{options.tls_cert, options.tls_key, options.tls_ca};
    if (orb_users == 0) {
        tls.check("tls_");
        if (tls.enabled()) corba::configure_ssl(tls);
        // A Watch's callback object is served by this ORB: the calls that
        // come on one connection (a store's events) one at a time, in order.
        // No LocateRequest before the first call on each new reference (the
        // store, its transporter): that call finds a missing object just as
        // well (OBJECT_NOT_EXIST), one round trip sooner on a long link.
        // A control connection idle for 10 s (to 15 s: omniORB scans every
        // 5 s) is closed by this side, well before a store closes it
        // (blobstored --control-idle-timeout, 30 s by default): the store's
        // close could otherwise cross a call sent at that moment, which then
        // fails as lost (COMM_FAILURE, completed maybe) and is repeated only
        // if it changes nothing (a push's reservation is not). A long-lived
        // client (blob-dicomd between studies) met that race; the next call
        // opens a new connection.
        live_orb() = corba::init_orb({{"clientCallTimeOutPeriod", std::to_string(options.timeout.count())},
                                      {"outConScanPeriod", "10"},
                                      {"maxServerThreadPerConnection", "1"},
                                      {"verifyObjectExistsAndType", "0"}});
        orb_tls = tls;
    } else if (tls.cert != orb_tls.cert || tls.key != orb_tls.key || tls.ca != orb_tls.ca) {
        throw Error(Errc::invalid_argument,
                    "a Session with other TLS files than the Sessions already open in this process (one ORB, one "
                    "TLS identity per process)");
    }
    ++orb_users;
    orb_ = CORBA::ORB::_duplicate(live_orb().in());
}

OrbHandle::~OrbHandle()
{
    orb_ = CORBA::ORB::_nil();
    std::lock_guard<std::mutex> lock(orb_mutex);
    if (--orb_users > 0) return;
    try {
        live_orb()->destroy();
    } catch (const CORBA::Exception& e) {
        library_log()->warn("ORB destroy: {}", e._name());
    }
    live_orb() = CORBA::ORB::_nil();
}

}  // namespace blobstreaming::client
