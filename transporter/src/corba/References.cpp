/// What an object reference says about how omniORB will reach it
/// (References.h): its first IIOP endpoint, and whether every way in is TLS
/// that its server insists on.
#include <blobstreaming/transporter/corba/References.h>

#include <omniORB4/IIOP.h>
#include <omniORB4/minorCode.h>
#include <omniORB4/omniORB.h>

#include <cstdio>

namespace blobstreaming::corba {
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

Probe probe(CORBA::Object_ptr ref, std::chrono::milliseconds bound)
{
    if (CORBA::is_nil(ref)) return {Probe::gone, "no reference"};
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3f", static_cast<double>(bound.count()) / 1000.0);
    const std::string late = std::string("no answer within ") + seconds + " s";
    try {
        omniORB::setClientCallTimeout(ref, static_cast<CORBA::ULong>(bound.count()));
        if (ref->_non_existent()) return {Probe::gone, "its server no longer has the object (OBJECT_NOT_EXIST)"};
        return {Probe::answers, ""};
    } catch (const CORBA::TIMEOUT&) {
        return {Probe::silent, late};
    } catch (const CORBA::TRANSIENT& e) {
        if (e.minor() == omni::TRANSIENT_ConnectFailed) return {Probe::gone, "connection refused (TRANSIENT)"};
        if (e.minor() == omni::TRANSIENT_CallTimedout) return {Probe::silent, late};
        return {Probe::silent, std::string("CORBA TRANSIENT (minor ") + std::to_string(e.minor()) + ")"};
    } catch (const CORBA::SystemException& e) {
        return {Probe::silent, std::string("CORBA ") + e._name()};
    }
}

}  // namespace blobstreaming::corba
