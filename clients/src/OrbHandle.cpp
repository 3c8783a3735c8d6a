// The process-wide ORB and its reference count (OrbHandle.h).
#include "OrbHandle.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/TlsFiles.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <blobstreaming/transporter/Log.h>

#include <cctype>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

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

/// The host of a corbaname:/corbaloc: URL ("corbaname::HOST:PORT",
/// "corbaloc:iiop:HOST:PORT/NameService", "[::1]"), lower-case; "" when
/// none can be read.
std::string naming_host(const std::string& url)
{
    std::string rest = url;
    for (const char* scheme : {"corbaname:", "corbaloc:"})
        if (rest.rfind(scheme, 0) == 0) rest = rest.substr(std::char_traits<char>::length(scheme));
    for (const char* protocol : {"iiop:", "ssliop:"})
        if (rest.rfind(protocol, 0) == 0) rest = rest.substr(std::char_traits<char>::length(protocol));
    if (!rest.empty() && rest[0] == ':') rest = rest.substr(1);
    const auto at = rest.find('@');  // iiop:1.2@HOST
    if (at != std::string::npos) rest = rest.substr(at + 1);
    if (!rest.empty() && rest[0] == '[') return rest.substr(1, rest.find(']') - 1);
    std::string host = rest.substr(0, rest.find_first_of(":/#,"));
    for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return host;
}

bool is_loopback(const std::string& host) { return host.rfind("127.", 0) == 0 || host == "localhost" || host == "::1"; }

}  // namespace

std::string callback_endpoint(const SessionOptions& options)
{
    const std::string& a = options.callback_address;
    if (a.empty()) return is_loopback(naming_host(options.naming_url)) ? "giop:tcp:127.0.0.1:" : "";
    const auto colon = a.rfind(':');
    const std::string host = a.substr(0, colon);
    const std::string port = colon == std::string::npos ? std::string() : a.substr(colon + 1);
    const bool port_ok = port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos &&
                         (port.empty() || std::stoul(port) <= 65535);
    if (host.empty() || host.find_first_of(" :/[]") != std::string::npos || !port_ok)
        throw Error(Errc::invalid_argument, "callback address \"" + a +
                                                "\" is not HOST[:PORT] (an IPv4 address or a host name; port 0-65535, "
                                                "0 or none: ephemeral), e.g. 127.0.0.1 or 192.0.2.10:4711");
    if (host == "0.0.0.0") return "giop:tcp::" + (port == "0" ? std::string() : port);
    return "giop:tcp:" + host + ":" + (port == "0" ? std::string() : port);
}

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
        std::vector<std::pair<std::string, std::string>> orb_options = {
            {"clientCallTimeOutPeriod", std::to_string(options.timeout.count())},
            {"outConScanPeriod", "10"},
            {"maxServerThreadPerConnection", "1"},
            {"verifyObjectExistsAndType", "0"}};
        // Where callbacks are served (SessionOptions::callback_address);
        // omniORB opens it with the root POA, only when something is served.
        if (const std::string endpoint = callback_endpoint(options); !endpoint.empty())
            orb_options.push_back({"endPoint", endpoint});
        live_orb() = corba::init_orb(orb_options);
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
