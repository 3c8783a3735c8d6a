#include <blobstreaming/transporter/corba/Exceptions.h>

#include <blobstreaming/blobstore/BlobName.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <omniORB4/IIOP.h>
#include <omniORB4/minorCode.h>

#include <blobstreaming/blobstore/UniqueFd.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <memory>

namespace blobstreaming::corba {

void throw_idl(const Error& e, const std::string& store)
{
    using namespace BlobStreaming;
    const char* msg = e.what();
    switch (e.code()) {
    case Errc::no_such_blob: throw NoSuchBlob(msg, "");
    case Errc::invalid_name: throw InvalidName(msg, "");
    case Errc::invalid_range: throw InvalidRange(msg, "", 0, 0);
    case Errc::out_of_space: throw OutOfSpace(msg, store.c_str(), 0);
    case Errc::already_exists: throw AlreadyExists(msg, "");
    case Errc::no_such_reservation: throw NoSuchReservation(msg, 0);
    case Errc::timeout: throw Timeout(msg, TimeValue{0, 0});
    case Errc::corrupt: throw Corrupt(msg, "");
    case Errc::limit_reached: throw LimitReached(msg);
    default: throw TransferFailed(msg);
    }
}

namespace {

struct Address {
    std::string host;
    CORBA::UShort port = 0;      ///< giop:tcp; 0 when there is none
    CORBA::UShort ssl_port = 0;  ///< giop:ssl (TAG_SSL_SEC_TRANS); 0 when there is none
    /// What the TAG_SSL_SEC_TRANS component says the server requires of a
    /// connection (CSIIOP association options); 0 when there is none.
    CORBA::UShort ssl_requires = 0;
    /// The profile offers a second way in besides its own host and port:
    /// TAG_ALTERNATE_IIOP_ADDRESS (plain TCP) or omniORB's Unix socket.
    bool other_transport = false;
};

/// The fields of one IIOP profile that say how omniORB will connect to it.
Address address_in(const IOP::TaggedProfile& profile)
{
    Address out;
    IIOP::ProfileBody body;
    IIOP::unmarshalProfile(profile, body);
    out.host = body.address.host.in();
    out.port = body.address.port;
    for (CORBA::ULong c = 0; c < body.components.length(); ++c) {
        const IOP::TaggedComponent& component = body.components[c];
        if (component.tag == IOP::TAG_ALTERNATE_IIOP_ADDRESS || component.tag == IOP::TAG_OMNIORB_UNIX_TRANS)
            out.other_transport = true;
        if (component.tag != IOP::TAG_SSL_SEC_TRANS) continue;
        // The SSL component's data is {supports, requires, port}.
        cdrEncapsulationStream stream(component.component_data.get_buffer(), component.component_data.length(), 1);
        CORBA::UShort supports;
        supports <<= stream;
        out.ssl_requires <<= stream;
        out.ssl_port <<= stream;
    }
    return out;
}

/// The first IIOP profile of `ref`; false when there is none.
bool address_of(CORBA::Object_ptr ref, Address& out)
{
    if (CORBA::is_nil(ref)) return false;
    omniIOR* ior = ref->_PR_getobj()->_getIOR();
    bool found = false;
    try {
        const IOP::TaggedProfileList& profiles = ior->iopProfiles();
        for (CORBA::ULong i = 0; i < profiles.length() && !found; ++i) {
            if (profiles[i].tag != IOP::TAG_INTERNET_IOP) continue;
            out = address_in(profiles[i]);
            found = true;
        }
    } catch (...) {
        found = false;
    }
    ior->release();
    return found;
}

/// CSIIOP association options a TLS store's reference requires: integrity,
/// confidentiality and a client certificate (omniORB publishes 0x66 for a
/// giop:ssl endpoint whose server verifies its peers; 0x20, trust in the
/// target, is what the client itself checks).
constexpr CORBA::UShort kRequiredAssociation = 0x02 | 0x04 | 0x40;

}  // namespace

std::string endpoint_of(CORBA::Object_ptr ref)
{
    if (CORBA::is_nil(ref)) return "nil";
    Address a;
    if (!address_of(ref, a)) return "an unknown endpoint";
    return a.host + ":" + std::to_string(a.port != 0 ? a.port : a.ssl_port);
}

bool ssl_only(CORBA::Object_ptr ref)
{
    Address a;
    return address_of(ref, a) && a.port == 0 && a.ssl_port != 0;
}

bool requires_tls(CORBA::Object_ptr ref)
{
    if (CORBA::is_nil(ref)) return false;
    omniIOR* ior = ref->_PR_getobj()->_getIOR();
    bool tls_only = false;
    try {
        const IOP::TaggedProfileList& profiles = ior->iopProfiles();
        tls_only = profiles.length() > 0;
        for (CORBA::ULong i = 0; i < profiles.length() && tls_only; ++i) {
            // Any other profile (e.g. TAG_MULTIPLE_COMPONENTS) could carry
            // addresses of its own: a TLS store publishes IIOP only.
            if (profiles[i].tag != IOP::TAG_INTERNET_IOP) {
                tls_only = false;
                break;
            }
            const Address a = address_in(profiles[i]);
            tls_only = a.port == 0 && a.ssl_port != 0 && !a.other_transport &&
                       (a.ssl_requires & kRequiredAssociation) == kRequiredAssociation;
        }
    } catch (...) {
        tls_only = false;
    }
    ior->release();
    return tls_only;
}

namespace {

/// Whether a TCP connection to HOST:PORT can be opened within a second.
bool accepts_connections(const std::string& endpoint)
{
    const auto colon = endpoint.rfind(':');
    if (colon == std::string::npos) return false;
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(endpoint.substr(0, colon).c_str(), endpoint.substr(colon + 1).c_str(), &hints, &found) != 0)
        return false;
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
    const UniqueFd fd(::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return false;
    if (::connect(fd.get(), found->ai_addr, found->ai_addrlen) == 0) return true;
    if (errno != EINPROGRESS) return false;
    pollfd p{fd.get(), POLLOUT, 0};
    if (::poll(&p, 1, 1000) != 1) return false;
    int err = 0;
    socklen_t len = sizeof err;
    return ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
}

/// Why a TLS connection to a store failed, as far as this process can tell:
/// its own verification of the store's certificate or an alert from the
/// store. TLS 1.3 checks the client's certificate after the client has
/// finished its handshake, and the store's close usually overtakes its alert:
/// then a store that still accepts connections has refused this client's
/// certificate. "" when TLS is off or nothing points at TLS.
std::string tls_reason(const std::string& endpoint)
{
    if (!ssl_configured()) return {};
    const std::string tls = last_ssl_failure();
    if (!tls.empty()) return ": TLS handshake failed: " + tls;
    if (accepts_connections(endpoint))
        return ": TLS handshake failed: the store closed the connection after the handshake: it did not accept "
               "this client's certificate (the store's log says why)";
    return {};
}

}  // namespace

void rethrow_as_error(const std::string& what, const std::string& store, const std::string& endpoint)
{
    using namespace BlobStreaming;
    const std::string prefix = what + ": store \"" + store + "\": ";
    try {
        throw;
    } catch (const Error&) {
        throw;
    } catch (const NoSuchBlob& e) {
        throw Error(Errc::no_such_blob, prefix + e.message.in());
    } catch (const InvalidName& e) {
        throw Error(Errc::invalid_name, prefix + e.message.in());
    } catch (const InvalidRange& e) {
        throw Error(Errc::invalid_range, prefix + e.message.in());
    } catch (const OutOfSpace& e) {
        throw Error(Errc::out_of_space, prefix + e.message.in());
    } catch (const AlreadyExists& e) {
        throw Error(Errc::already_exists, prefix + e.message.in());
    } catch (const NoSuchReservation& e) {
        throw Error(Errc::no_such_reservation, prefix + e.message.in());
    } catch (const TransferFailed& e) {
        throw Error(Errc::transfer_failed, prefix + e.message.in());
    } catch (const Timeout& e) {
        throw Error(Errc::timeout, prefix + e.message.in());
    } catch (const Corrupt& e) {
        throw Error(Errc::corrupt, prefix + e.message.in());
    } catch (const LimitReached& e) {
        throw Error(Errc::limit_reached, prefix + e.message.in());
    } catch (const CORBA::NO_PERMISSION& e) {
        static const char* const kPermissions[] = {"do this", "read", "write", "delete"};
        const unsigned long p = e.minor() - kNoPermissionMinor;
        const std::string subject = own_subject();
        throw Error(Errc::refused, prefix + "permission denied: " +
                                       (subject.empty() ? std::string("this client") : "client \"" + subject + "\"") +
                                       " may not " + kPermissions[p <= 3 ? p : 0]);
    } catch (const CORBA::TRANSIENT&) {
        const std::string tls = tls_reason(endpoint);
        throw Error(Errc::unreachable, what + ": store \"" + store + "\" unreachable at " + endpoint + tls);
    } catch (const CORBA::COMM_FAILURE&) {
        // TLS 1.3: the server checks the client's certificate after the
        // client has finished its handshake; a refusal ends the connection.
        const std::string tls = tls_reason(endpoint);
        throw Error(Errc::unreachable, what + ": store \"" + store + "\" unreachable at " + endpoint +
                                           (tls.empty() ? std::string(" (connection lost)") : tls));
    } catch (const CORBA::OBJECT_NOT_EXIST&) {
        throw Error(Errc::unreachable, what + ": store \"" + store + "\" unreachable at " + endpoint +
                                           " (no longer exists there)");
    } catch (const CORBA::SystemException& e) {
        throw Error(Errc::transfer_failed, prefix + "CORBA " + e._name() + " (minor " +
                                               std::to_string(e.minor()) + ")");
    } catch (const CORBA::UserException& e) {
        throw Error(Errc::transfer_failed, prefix + "unexpected " + e._name());
    }
}

}  // namespace blobstreaming::corba
