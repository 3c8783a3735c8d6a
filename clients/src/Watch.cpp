// Watch (Watch.h): an EventSubscriber servant in the process's ORB,
// subscribed to each store watched.
#include <blobstreaming/client/Watch.h>

#include "IdlConversion.h"
#include "OrbHandle.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Log.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/References.h>

#include <BlobStreaming.hh>

#include <algorithm>
#include <map>
#include <mutex>

namespace blobstreaming::client {

const char* to_string(StoreEventKind kind) noexcept
{
    return kind == StoreEventKind::committed ? "committed" : "removed";
}

std::optional<StoreEventKind> event_kind_of(std::string_view text) noexcept
{
    if (text == "committed") return StoreEventKind::committed;
    if (text == "removed") return StoreEventKind::removed;
    return std::nullopt;
}

namespace {

StoreEvent event_of(const BlobStreaming::StoreEvent& in)
{
    StoreEvent out;
    out.store = in.store.in();
    out.kind = in.kind == BlobStreaming::EVENT_COMMITTED ? StoreEventKind::committed : StoreEventKind::removed;
    out.reason = in.reason.in();
    out.sequence = in.seqNo;
    out.epoch_ns = in.epochNs;
    out.time = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(in.timeNs)));
    out.blob = info_of(in.blob);
    return out;
}

/// The callback and whether it may still run: shared by the servant (which
/// the POA may keep a little after deactivation) and the Watch.
struct Delivery {
    std::mutex mutex;  ///< held while the callback runs
    Watch::Callback on_event;
    bool closed = false;
};

class Subscriber_i : public POA_BlobStreaming::EventSubscriber {
public:
    explicit Subscriber_i(std::shared_ptr<Delivery> delivery) : delivery_(std::move(delivery)) {}

    void event(const BlobStreaming::StoreEvent& e) override
    {
        std::lock_guard lock(delivery_->mutex);
        if (delivery_->closed) return;
        try {
            delivery_->on_event(event_of(e));
        } catch (const std::exception& ex) {
            library_log()->warn("watch: the event callback threw: {}", ex.what());
        } catch (...) {
            library_log()->warn("watch: the event callback threw");
        }
    }

private:
    std::shared_ptr<Delivery> delivery_;
};

}  // namespace

class Watch::Impl {
public:
    Impl(const SessionOptions& session, Callback on_event)
        : handle(session), url(session.naming_url), delivery(std::make_shared<Delivery>())
    {
        delivery->on_event = std::move(on_event);
    }

    OrbHandle handle;
    std::string url;
    std::shared_ptr<Delivery> delivery;
    PortableServer::POA_var poa;
    PortableServer::ObjectId_var oid;
    /// Per store: its reference and the subscription's id.
    std::map<std::string, std::pair<BlobStreaming::BlobStore_var, CORBA::ULongLong>> subscriptions;
    bool closed = false;
};

Watch::Watch(const SessionOptions& session, WatchOptions options, Callback on_event)
    : impl_(std::make_unique<Impl>(session, std::move(on_event)))
{
    CORBA::ORB_ptr orb = impl_->handle.orb();
    const CosNaming::NamingContext_var root = corba::naming_context(orb, session.naming_url);
    std::vector<std::string> names = options.stores;
    try {
        if (names.empty()) names = corba::list_stores(root);
    } catch (const CORBA::SystemException& e) {
        throw Error(Errc::unreachable, "cannot list the stores of the naming service at " + session.naming_url +
                                           " (CORBA " + e._name() + ")");
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    BlobStreaming::StoreEventKindSeq kinds;
    for (StoreEventKind k : options.kinds) {
        kinds.length(kinds.length() + 1);
        kinds[kinds.length() - 1] =
            k == StoreEventKind::committed ? BlobStreaming::EVENT_COMMITTED : BlobStreaming::EVENT_REMOVED;
    }
    try {
        CORBA::Object_var obj = orb->resolve_initial_references("RootPOA");
        impl_->poa = PortableServer::POA::_narrow(obj);
        PortableServer::POAManager_var manager = impl_->poa->the_POAManager();
        manager->activate();  // also serves requests for other servants of this ORB: none in the library
        PortableServer::Servant_var<Subscriber_i> servant = new Subscriber_i(impl_->delivery);
        impl_->oid = impl_->poa->activate_object(servant);
    } catch (const CORBA::Exception& e) {
        throw Error(Errc::transfer_failed,
                    std::string("watch: cannot serve the event callback in this process (CORBA ") + e._name() + ")");
    }
    CORBA::Object_var me = impl_->poa->id_to_reference(impl_->oid.in());
    const BlobStreaming::EventSubscriber_var subscriber = BlobStreaming::EventSubscriber::_narrow(me);
    try {
        for (const std::string& name : names) {
            BlobStreaming::BlobStore_var store = corba::resolve_store(root, name, session.naming_url);
            try {
                const CORBA::ULongLong id = store->subscribe(subscriber, kinds);
                impl_->subscriptions[name] = {store, id};
            } catch (...) {
                corba::rethrow_as_error("watch the events of store \"" + name + "\"", name, corba::endpoint_of(store));
            }
        }
    } catch (...) {
        close();
        throw;
    }
}

Watch::~Watch() { close(); }

std::vector<std::string> Watch::stores() const
{
    std::vector<std::string> out;
    for (const auto& [name, subscription] : impl_->subscriptions) out.push_back(name);
    return out;
}

void Watch::close() noexcept
{
    if (impl_->closed) return;
    impl_->closed = true;
    for (auto& [name, subscription] : impl_->subscriptions) {
        try {
            subscription.first->unsubscribe(subscription.second);
        } catch (const CORBA::Exception& e) {
            library_log()->info("watch: store \"{}\" did not take the unsubscription (CORBA {}): it ends the "
                                "subscription at its next failed delivery",
                                name, e._name());
        }
    }
    impl_->subscriptions.clear();
    {
        std::lock_guard lock(impl_->delivery->mutex);  // waits for a callback in progress
        impl_->delivery->closed = true;
    }
    try {
        if (!CORBA::is_nil(impl_->poa) && impl_->oid.operator->() != nullptr)
            impl_->poa->deactivate_object(impl_->oid.in());
    } catch (const CORBA::Exception& e) {
        library_log()->warn("watch: deactivating the event callback: CORBA {}", e._name());
    }
}

}  // namespace blobstreaming::client
