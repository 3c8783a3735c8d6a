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
    switch (kind) {
    case StoreEventKind::committed: return "committed";
    case StoreEventKind::removed: return "removed";
    case StoreEventKind::study_stable: break;
    }
    return "study-stable";
}

std::optional<StoreEventKind> event_kind_of(std::string_view text) noexcept
{
    if (text == "committed") return StoreEventKind::committed;
    if (text == "removed") return StoreEventKind::removed;
    if (text == "study-stable") return StoreEventKind::study_stable;
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

std::chrono::system_clock::time_point time_of(CORBA::ULongLong ns)
{
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(ns)));
}

StoreEvent event_of(const BlobStreaming::StudyStableEvent& in)
{
    StoreEvent out;
    out.store = in.gateway.in();
    out.kind = StoreEventKind::study_stable;
    out.reason = "quiet";
    out.sequence = in.seqNo;
    out.epoch_ns = in.epochNs;
    out.time = time_of(in.timeNs);
    out.blob.name = in.studyInstanceUid.in();
    StableStudy& s = out.study;
    s.gateway = in.gateway.in();
    s.study_instance_uid = in.studyInstanceUid.in();
    s.patient_id = in.patientId.in();
    s.accession_number = in.accessionNumber.in();
    s.series = in.series;
    s.instances = in.instances;
    for (CORBA::ULong i = 0; i < in.stores.length(); ++i) s.stores.emplace_back(in.stores[i].in());
    s.last_instance = time_of(in.lastInstanceNs);
    return out;
}

/// The callback and whether it may still run: shared by the servant (which
/// the POA may keep a little after deactivation) and the Watch.
struct Delivery {
    std::mutex mutex;  ///< held while the callback runs
    Watch::Callback on_event;
    bool closed = false;

    /// Runs the callback with `event` unless closed; what it throws is logged.
    void deliver(const StoreEvent& event)
    {
        std::lock_guard lock(mutex);
        if (closed) return;
        try {
            on_event(event);
        } catch (const std::exception& ex) {
            library_log()->warn("watch: the event callback threw: {}", ex.what());
        } catch (...) {
            library_log()->warn("watch: the event callback threw");
        }
    }
};

class Subscriber_i : public POA_BlobStreaming::EventSubscriber {
public:
    explicit Subscriber_i(std::shared_ptr<Delivery> delivery) : delivery_(std::move(delivery)) {}

    void event(const BlobStreaming::StoreEvent& e) override { delivery_->deliver(event_of(e)); }

private:
    std::shared_ptr<Delivery> delivery_;
};

/// The same for a gateway's study events (the same Delivery: callbacks of
/// both never overlap).
class StudySubscriber_i : public POA_BlobStreaming::StudyEventSubscriber {
public:
    explicit StudySubscriber_i(std::shared_ptr<Delivery> delivery) : delivery_(std::move(delivery)) {}

    void studyStable(const BlobStreaming::StudyStableEvent& e) override { delivery_->deliver(event_of(e)); }

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
    PortableServer::ObjectId_var study_oid;
    /// Per store: its reference and the subscription's id.
    std::map<std::string, std::pair<BlobStreaming::BlobStore_var, CORBA::ULongLong>> subscriptions;
    /// Per gateway, likewise.
    std::map<std::string, std::pair<BlobStreaming::StudyEvents_var, CORBA::ULongLong>> gateway_subscriptions;
    bool closed = false;
};

Watch::Watch(const SessionOptions& session, WatchOptions options, Callback on_event)
    : impl_(std::make_unique<Impl>(session, std::move(on_event)))
{
    CORBA::ORB_ptr orb = impl_->handle.orb();
    const CosNaming::NamingContext_var root = corba::naming_context(orb, session.naming_url);
    BlobStreaming::StoreEventKindSeq kinds;
    bool study_stable = false;
    for (StoreEventKind k : options.kinds) {
        if (k == StoreEventKind::study_stable) {
            study_stable = true;
            continue;
        }
        kinds.length(kinds.length() + 1);
        kinds[kinds.length() - 1] =
            k == StoreEventKind::committed ? BlobStreaming::EVENT_COMMITTED : BlobStreaming::EVENT_REMOVED;
    }
    const bool store_events = options.kinds.empty() || kinds.length() > 0;
    std::vector<std::string> names = options.stores;
    std::vector<std::string> gateways = options.gateways;
    try {
        if (names.empty() && store_events) names = corba::list_stores(root);
        if (study_stable) {
            const std::vector<std::string> registered = corba::list_gateways(root);
            std::string known;
            for (const std::string& g : registered) known += (known.empty() ? "" : ", ") + g;
            if (registered.empty())
                throw Error(Errc::unknown_store,
                            "watch study-stable: no DICOM gateway is registered in the naming service at " +
                                session.naming_url +
                                " (blob-dicomd with --index registers as BlobStreaming/Gateways/<its AE title>)");
            for (const std::string& g : gateways) {
                if (std::find(registered.begin(), registered.end(), g) == registered.end())
                    throw Error(Errc::unknown_store, "watch study-stable: no gateway \"" + g +
                                                         "\" is registered in the naming service at " +
                                                         session.naming_url + " (registered: " + known + ")");
            }
            if (gateways.empty()) gateways = registered;
        }
    } catch (const CORBA::SystemException& e) {
        throw Error(Errc::unreachable, "cannot list the stores of the naming service at " + session.naming_url +
                                           " (CORBA " + e._name() + ")");
    }
    if (!store_events) names.clear();
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::sort(gateways.begin(), gateways.end());
    gateways.erase(std::unique(gateways.begin(), gateways.end()), gateways.end());
    try {
        CORBA::Object_var obj = orb->resolve_initial_references("RootPOA");
        impl_->poa = PortableServer::POA::_narrow(obj);
        PortableServer::POAManager_var manager = impl_->poa->the_POAManager();
        manager->activate();  // also serves requests for other servants of this ORB: none in the library
        PortableServer::Servant_var<Subscriber_i> servant = new Subscriber_i(impl_->delivery);
        impl_->oid = impl_->poa->activate_object(servant);
        if (!gateways.empty()) {
            PortableServer::Servant_var<StudySubscriber_i> study = new StudySubscriber_i(impl_->delivery);
            impl_->study_oid = impl_->poa->activate_object(study);
        }
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
        if (!gateways.empty()) {
            CORBA::Object_var obj = impl_->poa->id_to_reference(impl_->study_oid.in());
            const BlobStreaming::StudyEventSubscriber_var study = BlobStreaming::StudyEventSubscriber::_narrow(obj);
            for (const std::string& name : gateways) {
                BlobStreaming::StudyEvents_var gateway;
                try {
                    CORBA::Object_var ref = root->resolve(corba::gateway_path(name));
                    gateway = BlobStreaming::StudyEvents::_unchecked_narrow(ref);
                    const CORBA::ULongLong id = gateway->subscribe(study);
                    impl_->gateway_subscriptions[name] = {gateway, id};
                } catch (const CosNaming::NamingContext::NotFound&) {
                    throw Error(Errc::unknown_store, "watch study-stable: gateway \"" + name +
                                                         "\" left the naming service at " + session.naming_url);
                } catch (...) {
                    corba::rethrow_as_error("watch the study events of gateway \"" + name + "\"", name,
                                            CORBA::is_nil(gateway) ? session.naming_url : corba::endpoint_of(gateway));
                }
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

std::vector<std::string> Watch::gateways() const
{
    std::vector<std::string> out;
    for (const auto& [name, subscription] : impl_->gateway_subscriptions) out.push_back(name);
    return out;
}

void Watch::close() noexcept
{
    if (impl_->closed) return;
    impl_->closed = true;
    // Stores and gateways alike: each subscription ended where it was made.
    const auto unsubscribe_all = [](auto& subscriptions, const char* kind) {
        for (auto& [name, subscription] : subscriptions) {
            try {
                subscription.first->unsubscribe(subscription.second);
            } catch (const CORBA::Exception& e) {
                library_log()->info("watch: {} \"{}\" did not take the unsubscription (CORBA {}): it ends the "
                                    "subscription at its next failed delivery",
                                    kind, name, e._name());
            }
        }
        subscriptions.clear();
    };
    unsubscribe_all(impl_->subscriptions, "store");
    unsubscribe_all(impl_->gateway_subscriptions, "gateway");
    {
        std::lock_guard lock(impl_->delivery->mutex);  // waits for a callback in progress
        impl_->delivery->closed = true;
    }
    try {
        if (!CORBA::is_nil(impl_->poa) && impl_->oid.operator->() != nullptr)
            impl_->poa->deactivate_object(impl_->oid.in());
        if (!CORBA::is_nil(impl_->poa) && impl_->study_oid.operator->() != nullptr)
            impl_->poa->deactivate_object(impl_->study_oid.in());
    } catch (const CORBA::Exception& e) {
        library_log()->warn("watch: deactivating the event callback: CORBA {}", e._name());
    }
}

}  // namespace blobstreaming::client
