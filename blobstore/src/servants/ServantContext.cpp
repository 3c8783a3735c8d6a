#include "ServantContext.h"

#include <blobstreaming/transporter/corba/ChecksumIdl.h>
#include <blobstreaming/transporter/corba/Security.h>

#include <algorithm>
#include <limits>

namespace blobstreaming::corba {

service::Caller current_caller()
{
    service::Caller caller;
    caller.subject = caller_subject();
    caller.client = caller_client();
    return caller;
}

void rethrow_idl(const ServantContext& context, unsigned declared, const IdlContext& c)
{
    try {
        throw;
    } catch (const service::PermissionDenied& e) {
        throw CORBA::NO_PERMISSION(
            static_cast<CORBA::ULong>(kNoPermissionMinor + 1 + static_cast<unsigned>(e.permission())),
            CORBA::COMPLETED_NO);
    } catch (...) {
        rethrow_declared(declared, context.store_name(), c);
    }
}

void require_permission(const ServantContext& context, server::Permission permission, const char* operation)
{
    try {
        context.service.require(current_caller(), permission, operation);
    } catch (...) {
        rethrow_idl(context, kRaisesNothing);
    }
}

void to_idl_reservation(const service::StoreService::Opened& r, BlobStreaming::Reservation& out)
{
    out.checksum = corba::to_idl(r.checksum);
    out.id = r.id;
    out.name = r.name.c_str();
    out.size = r.size;
    out.received = r.received;
}

std::chrono::milliseconds to_milliseconds(const BlobStreaming::TimeValue& t)
{
    // Saturates instead of overflowing: seconds up to 2^64-1 and
    // microseconds up to 2^32-1 (an unnormalised TimeValue) are legal IDL.
    constexpr std::uint64_t kMaxMs = std::numeric_limits<std::int64_t>::max();
    const std::uint64_t extra_ms = t.microseconds / 1000;  // < 4294968
    const std::uint64_t s = std::min<std::uint64_t>(t.seconds, (kMaxMs - extra_ms) / 1000);
    return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000 + extra_ms));
}

BlobStreaming::TimeValue to_time_value(std::chrono::milliseconds ms)
{
    BlobStreaming::TimeValue t;
    const auto count = std::max<std::int64_t>(0, ms.count());
    t.seconds = static_cast<CORBA::ULongLong>(count / 1000);
    t.microseconds = static_cast<CORBA::ULong>((count % 1000) * 1000);
    return t;
}

}  // namespace blobstreaming::corba
