#include "EventSubscription.h"

#include <blobstreaming/transporter/corba/BlobInfoIdl.h>
#include "server/AccessList.h"
#include "server/StoreEventHub.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/References.h>
#include <blobstreaming/transporter/corba/Security.h>
#include <blobstreaming/transporter/daemon/OnewayCall.h>

#include <omniORB4/CORBA.h>

#include <chrono>

namespace blobstreaming::corba {
namespace {

/// How long a subscriber may take to accept an event (connect, and room in
/// its socket) before its subscription is ended.
constexpr CORBA::ULong kSubscriberCallTimeoutMs = 2000;

CORBA::ULongLong ns_of(std::chrono::system_clock::time_point t)
{
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    return static_cast<CORBA::ULongLong>(ns < 0 ? 0 : ns);
}

/// A client's EventSubscriber, called on a NoticeDispatcher thread with a
/// call timeout of its own; the hub ends its subscription at its first
/// failed delivery.
class SubscriberSink final : public daemon::NoticeSinkOf<StoreEvent> {
public:
    SubscriberSink(BlobStreaming::EventSubscriber_ptr subscriber, const server::StoreEventHub& hub)
        : subscriber_(BlobStreaming::EventSubscriber::_duplicate(subscriber)), endpoint_(endpoint_of(subscriber)),
          store_(hub.store()), epoch_(hub.epoch())
    {
        omniORB::setClientCallTimeout(subscriber_, kSubscriberCallTimeoutMs);
    }

    std::string deliver(const StoreEvent& event) noexcept override
    {
        return daemon::oneway_call([&] { subscriber_->event(to_idl_event(event, store_, epoch_)); },
                                   kSubscriberCallTimeoutMs, "event");
    }

    const std::string& endpoint() const noexcept override { return endpoint_; }

private:
    BlobStreaming::EventSubscriber_var subscriber_;
    const std::string endpoint_;
    const std::string store_;
    const std::chrono::system_clock::time_point epoch_;
};

}  // namespace

BlobStreaming::StoreEvent to_idl_event(const StoreEvent& event, const std::string& store,
                                       std::chrono::system_clock::time_point epoch)
{
    BlobStreaming::StoreEvent out;
    out.store = store.c_str();
    out.kind =
        event.kind == StoreEvent::Kind::committed ? BlobStreaming::EVENT_COMMITTED : BlobStreaming::EVENT_REMOVED;
    out.reason = to_string(event.reason);
    out.seqNo = event.sequence;
    out.epochNs = ns_of(epoch);
    out.timeNs = ns_of(event.time);
    to_idl(event.blob, out.blob);
    return out;
}

CORBA::ULongLong subscribe(const ServantContext& context, BlobStreaming::EventSubscriber_ptr subscriber,
                           const BlobStreaming::StoreEventKindSeq& kinds)
{
    require_permission(context, server::Permission::read, "subscribe");
    if (!context.events) throw CORBA::NO_RESOURCES();
    if (CORBA::is_nil(subscriber)) throw CORBA::BAD_PARAM();
    server::EventKinds wanted = 0;
    for (CORBA::ULong i = 0; i < kinds.length(); ++i)
        wanted |= server::event_bit(kinds[i] == BlobStreaming::EVENT_COMMITTED ? StoreEvent::Kind::committed
                                                                               : StoreEvent::Kind::removed);
    if (wanted == 0) wanted = server::kEveryEventKind;
    auto sink = std::make_shared<SubscriberSink>(subscriber, *context.events);
    try {
        return context.events->subscribe(sink, wanted, caller_client());
    } catch (const Error& e) {
        BlobStreaming::LimitReached ex;
        ex.message = e.what();
        throw ex;
    }
}

void unsubscribe(const ServantContext& context, CORBA::ULongLong id)
{
    // Another client's subscription is answered as an unknown id (ignored):
    // the caller learns nothing of it, and it keeps receiving.
    if (context.events) context.events->unsubscribe(id, caller_client());
}

}  // namespace blobstreaming::corba
