#include <blobstreaming/transporter/corba/Exceptions.h>

#include <blobstreaming/blobstore/BlobName.h>

#include <omniORB4/IIOP.h>

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
    default: throw TransferFailed(msg);
    }
}

std::string endpoint_of(CORBA::Object_ptr ref)
{
    try {
        if (CORBA::is_nil(ref)) return "nil";
        omniIOR* ior = ref->_PR_getobj()->_getIOR();
        const IOP::TaggedProfileList& profiles = ior->iopProfiles();
        std::string out;
        for (CORBA::ULong i = 0; i < profiles.length(); ++i) {
            if (profiles[i].tag != IOP::TAG_INTERNET_IOP) continue;
            IIOP::ProfileBody body;
            IIOP::unmarshalProfile(profiles[i], body);
            out = std::string(body.address.host.in()) + ":" + std::to_string(body.address.port);
            break;
        }
        ior->release();
        return out.empty() ? "an unknown endpoint" : out;
    } catch (...) {
        return "an unknown endpoint";
    }
}

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
    } catch (const CORBA::TRANSIENT&) {
        throw Error(Errc::unreachable, what + ": store \"" + store + "\" unreachable at " + endpoint);
    } catch (const CORBA::COMM_FAILURE&) {
        throw Error(Errc::unreachable, what + ": store \"" + store + "\" unreachable at " + endpoint +
                                           " (connection lost)");
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
