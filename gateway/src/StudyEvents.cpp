#include "StudyEvents.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/References.h>
#include <blobstreaming/transporter/corba/Security.h>
#include <blobstreaming/transporter/daemon/EventHub.h>
#include <blobstreaming/transporter/daemon/NoticeDispatcher.h>
#include <blobstreaming/transporter/daemon/OnewayCall.h>

#include <BlobStreaming.hh>

#include <spdlog/spdlog.h>

#include <atomic>
#include <mutex>

namespace blobstreaming::dicom {
namespace {

/// How long a subscriber may take to accept an event, as a store's.
constexpr CORBA::ULong kSubscriberCallTimeoutMs = 2000;
using StudyEventHub = daemon::EventHub<BlobStreaming::StudyStableEvent>;

CORBA::ULongLong ns_of(std::chrono::system_clock::time_point t)
{
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    return static_cast<CORBA::ULongLong>(ns < 0 ? 0 : ns);
}

/// A watcher's StudyEventSubscriber, called on a dispatcher thread with a
/// call timeout of its own; the hub ends its subscription at its first
/// failed delivery.
class SubscriberSink final : public daemon::NoticeSinkOf<BlobStreaming::StudyStableEvent> {
public:
    explicit SubscriberSink(BlobStreaming::StudyEventSubscriber_ptr subscriber)
        : subscriber_(BlobStreaming::StudyEventSubscriber::_duplicate(subscriber)),
          endpoint_(corba::endpoint_of(subscriber))
    {
        omniORB::setClientCallTimeout(subscriber_, kSubscriberCallTimeoutMs);
    }

    std::string deliver(const BlobStreaming::StudyStableEvent& event) noexcept override
    {
        return daemon::oneway_call([&] { subscriber_->studyStable(event); }, kSubscriberCallTimeoutMs, "event");
    }

    const std::string& endpoint() const noexcept override { return endpoint_; }

private:
    BlobStreaming::StudyEventSubscriber_var subscriber_;
    const std::string endpoint_;
};

}  // namespace

class StudyEvents::Impl : public POA_BlobStreaming::StudyEvents {
public:
    /// Throws before it is activated only: the caller deletes it then.
    Impl(const client::SessionOptions& session, std::string aetitle)
        : aetitle_(std::move(aetitle)),
          // The most subscriptions at once, and of one client, are a store's
          // defaults (blobstored --max-subscriptions, --max-client-subscriptions).
          hub_(daemon::EventSource{"study events", "the study events of gateway " + aetitle_, "gateway", {}},
               dispatcher_)
    {
        int argc = 0;
        orb_ = CORBA::ORB_init(argc, nullptr);  // the Session's (omniORB has one per process)
        // Who subscribes: a subscription belongs to that client (unsubscribe).
        corba::install_caller_identity();
        naming_ = corba::naming_context(orb_, session.naming_url);
        try {
            CORBA::Object_var obj = orb_->resolve_initial_references("RootPOA");
            poa_ = PortableServer::POA::_narrow(obj);
            PortableServer::POAManager_var manager = poa_->the_POAManager();
            manager->activate();
            oid_ = poa_->activate_object(this);
            CORBA::Object_var self = poa_->id_to_reference(oid_.in());
            corba::bind_gateway(naming_, aetitle_, self);
        } catch (const CORBA::Exception& e) {
            throw Error(Errc::unreachable, "cannot register the study events as BlobStreaming/Gateways/" + aetitle_ +
                                               " in the naming service at " + session.naming_url + " (CORBA " +
                                               e._name() + ")");
        }
    }

    CORBA::ULongLong subscribe(BlobStreaming::StudyEventSubscriber_ptr subscriber) override
    {
        if (CORBA::is_nil(subscriber)) throw CORBA::BAD_PARAM();
        try {
            return hub_.subscribe(std::make_shared<SubscriberSink>(subscriber), StudyEventHub::kEveryKind,
                                  corba::caller_client());
        } catch (const Error& e) {
            BlobStreaming::LimitReached ex;
            ex.message = e.what();
            throw ex;
        }
    }

    /// Only the client that subscribed ends its subscription; another
    /// client's id is ignored as an unknown one is (the log says which).
    void unsubscribe(CORBA::ULongLong id) override { hub_.unsubscribe(id, corba::caller_client()); }

    void publish(const StableStudy& study) noexcept
    {
        try {
            BlobStreaming::StudyStableEvent event;
            event.gateway = aetitle_.c_str();
            event.epochNs = ns_of(hub_.epoch());
            event.timeNs = ns_of(study.time);
            event.lastInstanceNs = static_cast<CORBA::ULongLong>(study.last_instance_ns);
            event.studyInstanceUid = study.summary.study_instance_uid.c_str();
            event.patientId = study.summary.patient_id.c_str();
            event.accessionNumber = study.summary.accession_number.c_str();
            event.series = study.summary.series;
            event.instances = study.summary.instances;
            event.stores.length(static_cast<CORBA::ULong>(study.summary.stores.size()));
            for (CORBA::ULong i = 0; i < event.stores.length(); ++i)
                event.stores[i] = study.summary.stores[i].c_str();
            std::lock_guard lock(mutex_);  // sequence numbers in the order published
            event.seqNo = ++sequence_;
            hub_.publish(event);
        } catch (...) {
            spdlog::error("study events: study {} not published: out of memory", study.summary.study_instance_uid);
        }
    }

    void withdraw() noexcept
    {
        if (withdrawn_.exchange(true)) return;
        try {
            omniORB::setClientCallTimeout(naming_, kSubscriberCallTimeoutMs);  // a stop never waits long for it
            corba::unbind_gateway(naming_, aetitle_);
        } catch (const CORBA::Exception& e) {
            spdlog::info("study events: BlobStreaming/Gateways/{} not unregistered (CORBA {})", aetitle_, e._name());
        }
        hub_.close();
        dispatcher_.stop();
        try {
            poa_->deactivate_object(oid_.in());
        } catch (const CORBA::Exception& e) {
            spdlog::info("study events: deactivating the servant: CORBA {}", e._name());
        }
    }

private:
    const std::string aetitle_;
    CORBA::ORB_var orb_;
    PortableServer::POA_var poa_;
    PortableServer::ObjectId_var oid_;
    CosNaming::NamingContext_var naming_;
    daemon::NoticeDispatcher dispatcher_;
    StudyEventHub hub_;  ///< random ids, each subscription of the client that made it
    std::mutex mutex_;
    std::uint64_t sequence_ = 0;
    std::atomic<bool> withdrawn_{false};
};

StudyEvents::StudyEvents(const client::SessionOptions& session, std::string aetitle)
    : impl_(new Impl(session, std::move(aetitle)))
{}

StudyEvents::~StudyEvents()
{
    withdraw();
    impl_->_remove_ref();  // deleted once the POA has let it go too
}

void StudyEvents::publish(const StableStudy& study) noexcept { impl_->publish(study); }

void StudyEvents::withdraw() noexcept { impl_->withdraw(); }

}  // namespace blobstreaming::dicom
