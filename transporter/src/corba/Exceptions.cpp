/// The one boundary between IDL exceptions and Error (Exceptions.h): the
/// servant side raises what an operation declares and sends the Errc and
/// message along in a reply service context; the client side turns every
/// CORBA exception back into Error, with the reason a TLS store refused it.
/// What an object reference says about reaching it is in References.cpp.
#include <blobstreaming/transporter/corba/Exceptions.h>

#include "InstallInterceptor.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/transporter/corba/Security.h>

// omniORB's internal headers depend on this order.
// clang-format off
#include <omniORB4/internal/giopStrand.h>
#include <omniORB4/internal/giopStream.h>
#include <omniORB4/internal/GIOP_S.h>
// clang-format on
#include <omniORB4/minorCode.h>
#include <omniORB4/omniInterceptors.h>

#include <blobstreaming/common/UniqueFd.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

namespace blobstreaming::corba {
namespace {

/// Longest message sent in the error context.
constexpr std::size_t kMaxContextMessage = 4096;

/// Servant side: the error behind the exception this thread is raising, until
/// serverSendException puts it into the reply.
struct Pending {
    std::string repo_id;  ///< of the exception it belongs to; empty: none
    Errc code = Errc::ok;
    std::string message;
};
thread_local Pending pending;

/// Client side: the error context of the last reply this thread received.
thread_local std::optional<ReplyError> received;

template <class Exception>
[[noreturn]] void raise_with(const Exception& ex, Errc code, const std::string& message)
{
    pending = {ex._rep_id(), code, message};
    throw ex;
}

/// The system exception for an Error that the operation has no IDL exception for.
[[noreturn]] void raise_system(Errc code, const std::string& message)
{
    const auto minor = static_cast<CORBA::ULong>(kErrorMinor + static_cast<unsigned>(code));
    switch (code) {
    case Errc::invalid_argument:
    case Errc::invalid_name:
    case Errc::invalid_range: raise_with(CORBA::BAD_PARAM(minor, CORBA::COMPLETED_NO), code, message);
    case Errc::out_of_space:
    case Errc::store_busy:
    case Errc::limit_reached: raise_with(CORBA::NO_RESOURCES(minor, CORBA::COMPLETED_NO), code, message);
    case Errc::io_error:
    case Errc::corrupt: raise_with(CORBA::PERSIST_STORE(minor, CORBA::COMPLETED_NO), code, message);
    case Errc::no_such_blob:
    case Errc::already_exists:
    case Errc::reservation_closed:
    case Errc::incomplete:
    case Errc::digest_mismatch:
    case Errc::no_such_reservation:
    case Errc::unknown_store:
    case Errc::blob_changed: raise_with(CORBA::BAD_INV_ORDER(minor, CORBA::COMPLETED_NO), code, message);
    default: raise_with(CORBA::INTERNAL(minor, CORBA::COMPLETED_NO), code, message);
    }
}

[[noreturn]] void raise_error(Errc code, const std::string& message, unsigned declared, const std::string& store,
                              const IdlContext& c)
{
    using namespace BlobStreaming;
    const char* msg = message.c_str();
    const char* name = c.name.c_str();
    switch (code) {
    case Errc::no_such_blob:
        if (declared & kNoSuchBlob) raise_with(NoSuchBlob(msg, name), code, message);
        break;
    case Errc::invalid_name:
        if (declared & kInvalidName) raise_with(InvalidName(msg, name), code, message);
        break;
    case Errc::invalid_range:
        if (declared & kInvalidRange) raise_with(InvalidRange(msg, name, c.offset, c.length), code, message);
        break;
    case Errc::out_of_space:
        if (declared & kOutOfSpace) raise_with(OutOfSpace(msg, store.c_str(), c.requested), code, message);
        break;
    case Errc::already_exists:
        if (declared & kAlreadyExists) raise_with(AlreadyExists(msg, name), code, message);
        break;
    case Errc::no_such_reservation:
        if (declared & kNoSuchReservation) raise_with(NoSuchReservation(msg, c.id), code, message);
        break;
    case Errc::timeout:
        if (declared & kTimeout) raise_with(Timeout(msg, TimeValue{0, 0}), code, message);
        break;
    case Errc::corrupt:
        if (declared & kCorrupt) raise_with(Corrupt(msg, name), code, message);
        break;
    case Errc::limit_reached:
        if (declared & kLimitReached) raise_with(LimitReached(msg), code, message);
        break;
    default: break;
    }
    if (declared & kTransferFailed) raise_with(TransferFailed(msg), code, message);
    raise_system(code, message);
}

bool is_declared(unsigned declared, const char* repo_id)
{
    using namespace BlobStreaming;
    const std::pair<unsigned, const char*> table[] = {
        {kNoSuchBlob, NoSuchBlob::_PD_repoId},
        {kInvalidName, InvalidName::_PD_repoId},
        {kInvalidRange, InvalidRange::_PD_repoId},
        {kOutOfSpace, OutOfSpace::_PD_repoId},
        {kAlreadyExists, AlreadyExists::_PD_repoId},
        {kNoSuchReservation, NoSuchReservation::_PD_repoId},
        {kTransferFailed, TransferFailed::_PD_repoId},
        {kTimeout, Timeout::_PD_repoId},
        {kCorrupt, Corrupt::_PD_repoId},
        {kLimitReached, LimitReached::_PD_repoId},
    };
    for (const auto& [flag, id] : table)
        if ((declared & flag) && std::strcmp(id, repo_id) == 0) return true;
    return false;
}

CORBA::Boolean on_send_exception(omni::omniInterceptors::serverSendException_T::info_T& info)
{
    Pending p = std::move(pending);
    pending = {};
    if (p.repo_id.empty() || !info.exception || p.repo_id != info.exception->_rep_id()) return true;
    try {
        if (p.message.size() > kMaxContextMessage) p.message.resize(kMaxContextMessage);
        cdrEncapsulationStream s(CORBA::ULong(0), CORBA::Boolean(1));
        CORBA::ULong(static_cast<unsigned>(p.code)) >>= s;
        CORBA::ULong(p.message.size()) >>= s;
        s.put_octet_array(reinterpret_cast<const CORBA::Octet*>(p.message.data()), static_cast<int>(p.message.size()));
        IOP::ServiceContextList& list = info.giop_s.service_contexts();
        const CORBA::ULong n = list.length();
        list.length(n + 1);
        list[n].context_id = kErrorContextId;
        s.setOctetSeq(list[n].context_data);
        // omniORB's GIOP 1.2 user exception reply does not pad its header
        // to 8 bytes, while the reader aligns the body to 8: pad the context
        // (trailing bytes of an encapsulation are ignored) so that the
        // header ends aligned. Offsets from the start of the message: 12
        // (GIOP header) + request id + reply status + context count.
        std::size_t offset = 24;
        for (CORBA::ULong i = 0; i < list.length(); ++i) {
            offset = (offset + 3) / 4 * 4 + 8 + list[i].context_data.length();
            if (i + 1 == list.length() && offset % 8 != 0) {
                const std::size_t pad = 8 - offset % 8;
                const CORBA::ULong len = list[i].context_data.length();
                list[i].context_data.length(static_cast<CORBA::ULong>(len + pad));
                for (std::size_t k = 0; k < pad; ++k) list[i].context_data[static_cast<CORBA::ULong>(len + k)] = 0;
            }
        }
    } catch (...) {
        // The exception still goes out, without the detail.
    }
    return true;
}

CORBA::Boolean on_send_reply(omni::omniInterceptors::serverSendReply_T::info_T&)
{
    pending = {};
    return true;
}

CORBA::Boolean on_send_request(omni::omniInterceptors::clientSendRequest_T::info_T&)
{
    received.reset();
    return true;
}

CORBA::Boolean on_receive_reply(omni::omniInterceptors::clientReceiveReply_T::info_T& info)
{
    received.reset();
    for (CORBA::ULong i = 0; i < info.service_contexts.length(); ++i) {
        const IOP::ServiceContext& ctx = info.service_contexts[i];
        if (ctx.context_id != kErrorContextId) continue;
        try {
            cdrEncapsulationStream s(ctx.context_data.get_buffer(), ctx.context_data.length(), 1);
            CORBA::ULong code, length;
            code <<= s;
            length <<= s;
            if (length > kMaxContextMessage || !s.checkInputOverrun(1, length)) return true;
            std::string message(length, '\0');
            s.get_octet_array(reinterpret_cast<CORBA::Octet*>(message.data()), static_cast<int>(length));
            received = ReplyError{static_cast<Errc>(code), std::move(message)};
        } catch (...) {
            received.reset();  // a malformed context is ignored
        }
    }
    return true;
}

}  // namespace

void rethrow_declared(unsigned declared, const std::string& store, const IdlContext& context)
{
    pending = {};
    try {
        throw;
    } catch (const Error& e) {
        raise_error(e.code(), e.what(), declared, store, context);
    } catch (const CORBA::SystemException&) {
        throw;
    } catch (const CORBA::UserException& e) {
        if (is_declared(declared, e._rep_id())) throw;
        raise_system(Errc::transfer_failed, std::string("unexpected CORBA exception ") + e._name());
    } catch (const std::bad_alloc&) {
        raise_with(
            CORBA::NO_MEMORY(static_cast<CORBA::ULong>(kErrorMinor + static_cast<unsigned>(Errc::transfer_failed)),
                             CORBA::COMPLETED_NO),
            Errc::transfer_failed, "the store ran out of memory");
    } catch (const std::exception& e) {
        raise_system(Errc::transfer_failed, std::string("internal error: ") + e.what());
    } catch (...) {
        raise_system(Errc::transfer_failed, "internal error: an unknown exception");
    }
}

std::optional<ReplyError> reply_error() { return received; }

void install_error_context()
{
    omni::omniInterceptors* interceptors = omniORB::getInterceptors();
    install_interceptor(interceptors->serverSendException, &on_send_exception);
    install_interceptor(interceptors->serverSendReply, &on_send_reply);
    install_interceptor(interceptors->clientSendRequest, &on_send_request);
    install_interceptor(interceptors->clientReceiveReply, &on_receive_reply);
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
    // The store's own Errc, when it sent one along (e.g. io_error raised as
    // TransferFailed by an operation that declares nothing closer).
    const std::optional<ReplyError> sent = reply_error();
    const auto code = [&](Errc fallback) { return sent ? sent->code : fallback; };
    try {
        throw;
    } catch (const Error&) {
        throw;
    } catch (const NoSuchBlob& e) {
        throw Error(code(Errc::no_such_blob), prefix + e.message.in());
    } catch (const InvalidName& e) {
        throw Error(code(Errc::invalid_name), prefix + e.message.in());
    } catch (const InvalidRange& e) {
        throw Error(code(Errc::invalid_range), prefix + e.message.in());
    } catch (const OutOfSpace& e) {
        throw Error(code(Errc::out_of_space), prefix + e.message.in());
    } catch (const AlreadyExists& e) {
        throw Error(code(Errc::already_exists), prefix + e.message.in());
    } catch (const NoSuchReservation& e) {
        throw Error(code(Errc::no_such_reservation), prefix + e.message.in());
    } catch (const TransferFailed& e) {
        throw Error(code(Errc::transfer_failed), prefix + e.message.in());
    } catch (const Timeout& e) {
        throw Error(code(Errc::timeout), prefix + e.message.in());
    } catch (const Corrupt& e) {
        throw Error(code(Errc::corrupt), prefix + e.message.in());
    } catch (const LimitReached& e) {
        throw Error(code(Errc::limit_reached), prefix + e.message.in());
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
        throw Error(Errc::unreachable,
                    what + ": store \"" + store + "\" unreachable at " + endpoint + " (no longer exists there)");
    } catch (const CORBA::SystemException& e) {
        if (sent) throw Error(sent->code, prefix + sent->message);
        throw Error(Errc::transfer_failed,
                    prefix + "CORBA " + e._name() + " (minor " + std::to_string(e.minor()) + ")");
    } catch (const CORBA::UserException& e) {
        throw Error(Errc::transfer_failed, prefix + "unexpected " + e._name());
    }
}

}  // namespace blobstreaming::corba
