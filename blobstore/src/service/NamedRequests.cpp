#include "service/NamedRequests.h"

namespace blobstreaming::service {

NamedRequests::Issued NamedRequests::admit(const std::string& subject, const std::string& client,
                                           const protocol::NamedRequest& request)
{
    Caller caller;
    caller.subject = subject;
    caller.client = client;
    StoreService::Issued issued;
    if (request.type == protocol::FrameType::push)
        issued = service_
                     .push(caller, request.name, request.length, request.overwrite, request.checksum,
                           StoreService::TransferOptions{})
                     .ticket;
    else
        issued = service_.send(caller, request.name, request.offset, request.length, StoreService::TransferOptions{});
    Issued out;
    out.ticket = issued.id;
    out.binding = std::move(issued.binding);
    return out;
}

}  // namespace blobstreaming::service
