#include "StudyEvents.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/References.h>
#include <blobstreaming/transporter/corba/Security.h>
#include <blobstreaming/transporter/daemon/NoticeDispatcher.h>
#include <blobstreaming/transporter/daemon/OnewayCall.h>
#include <blobstreaming/transporter/daemon/SubscriptionTable.h>

#include <BlobStreaming.hh>

#include <spdlog/spdlog.h>

#include <atomic>
#include <mutex>

namespace blobstreaming::dicom {
namespace {

/// How long a subscriber may take to accept an event, as a store's.
constexpr CORBA::ULong kSubscriberCallTimeoutMs = 2000;
/// The most subscriptions at once, and of one client, as a store's
/// defaults (blobstored --max-subscriptions, --max-client-subscriptions).
constexpr std::size_t kMaxSubscriptions = 1000;
constexpr std::size_t kMaxClientSubscriptions = 16;

CORBA::ULongLong ns_of(std::chrono::system_clock::time_point t)
{
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    return static_cast<CORBA::ULongLong>(ns < 0 ? 0 : ns);
}

}  // namespace

class StudyEvents::Impl : public POA_BlobStreaming::StudyEvents {
public:
    /// Throws before it is activated only: the caller deletes it then.
    Impl(const client::SessionOptions& session, std::string aetitle) : aetitle_(std::move(aetitle))
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

    CORBA::ULongLong subscribe(BlobStreaming::StudyEventSubscriber_ptr subscriber) override;
    /// Only the client that subscribed ends its subscription; another
    /// client's id is ignored as an unknown one is (the log says which).
    void unsubscribe(CORBA::ULongLong id) override
    {
        const std::string client = corba::caller_client();
        std::lock_guard lock(mutex_);
        const daemon::SubscriptionTable::Subscription* s = subscriptions_.find(id);
        const std::string owner = s ? s->owner : std::string();
        switch (subscriptions_.unsubscribe(id, client)) {
        case daemon::SubscriptionTable::Removal::ended:
            spdlog::info("study events: subscription {} ended by its subscriber", id);
            break;
        case daemon::SubscriptionTable::Removal::foreign:
            spdlog::warn("study events: unsubscribe {} refused: the subscription is client \"{}\"'s, asked by "
                         "client \"{}\"; it goes on",
                         id, owner, client);
            break;
        case daemon::SubscriptionTable::Removal::unknown: break;
        }
    }

    void end(std::uint64_t id, const std::string& why)
    {
        std::lock_guard lock(mutex_);
        const daemon::SubscriptionTable::Subscription* s = subscriptions_.find(id);
        if (!s) return;
        spdlog::warn("study events: subscription {} of the subscriber at {} ended: it did not take an event ({})", id,
                     s->sink->endpoint(), why);
        subscriptions_.erase(id);
    }

    void publish(const StableStudy& study) noexcept
    {
        try {
            auto event = std::make_shared<BlobStreaming::StudyStableEvent>();
            event->gateway = aetitle_.c_str();
            event->epochNs = ns_of(epoch_);
            event->timeNs = ns_of(study.time);
            event->lastInstanceNs = static_cast<CORBA::ULongLong>(study.last_instance_ns);
            event->studyInstanceUid = study.summary.study_instance_uid.c_str();
            event->patientId = study.summary.patient_id.c_str();
            event->accessionNumber = study.summary.accession_number.c_str();
            event->series = study.summary.series;
            event->instances = study.summary.instances;
            event->stores.length(static_cast<CORBA::ULong>(study.summary.stores.size()));
            for (CORBA::ULong i = 0; i < event->stores.length(); ++i)
                event->stores[i] = study.summary.stores[i].c_str();
            std::lock_guard lock(mutex_);
            event->seqNo = ++sequence_;
            const daemon::Notice notice = std::shared_ptr<const BlobStreaming::StudyStableEvent>(std::move(event));
            subscriptions_.for_each([&](std::uint64_t, const daemon::SubscriptionTable::Subscription& subscription) {
                dispatcher_.post(subscription.sink, notice);
            });
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
        {
            std::lock_guard lock(mutex_);
            subscriptions_.clear();
        }
        dispatcher_.stop();
        try {
            poa_->deactivate_object(oid_.in());
        } catch (const CORBA::Exception& e) {
            spdlog::info("study events: deactivating the servant: CORBA {}", e._name());
        }
    }

private:
    const std::string aetitle_;
    const std::chrono::system_clock::time_point epoch_ = std::chrono::system_clock::now();
    CORBA::ORB_var orb_;
    PortableServer::POA_var poa_;
    PortableServer::ObjectId_var oid_;
    CosNaming::NamingContext_var naming_;
    daemon::NoticeDispatcher dispatcher_;
    std::mutex mutex_;
    daemon::SubscriptionTable subscriptions_;  ///< random ids, each of the client that subscribed
    std::uint64_t sequence_ = 0;
    std::atomic<bool> withdrawn_{false};
};

namespace {

/// A watcher's StudyEventSubscriber, called on a dispatcher thread with a
/// call timeout of its own; ended at its first failed delivery.
class SubscriberSink final : public daemon::NoticeSinkOf<BlobStreaming::StudyStableEvent> {
public:
    SubscriberSink(BlobStreaming::StudyEventSubscriber_ptr subscriber, StudyEvents::Impl& events)
        : subscriber_(BlobStreaming::StudyEventSubscriber::_duplicate(subscriber)),
          endpoint_(corba::endpoint_of(subscriber)), events_(events)
    {
        omniORB::setClientCallTimeout(subscriber_, kSubscriberCallTimeoutMs);
    }

    void set_id(std::uint64_t id) noexcept { id_ = id; }

    std::string deliver(const BlobStreaming::StudyStableEvent& event) noexcept override
    {
        return daemon::oneway_call([&] { subscriber_->studyStable(event); }, kSubscriberCallTimeoutMs, "event");
    }

    const std::string& endpoint() const noexcept override { return endpoint_; }
    const char* noun() const noexcept override { return "study events"; }
    const char* recipient() const noexcept override { return "subscriber"; }
    void failed(const std::string& why) noexcept override
    {
        try {
            events_.end(id_, why);
        } catch (...) {
            // out of memory while logging: it is ended all the same
        }
    }

private:
    BlobStreaming::StudyEventSubscriber_var subscriber_;
    const std::string endpoint_;
    StudyEvents::Impl& events_;
    std::atomic<std::uint64_t> id_{0};
};

}  // namespace

CORBA::ULongLong StudyEvents::Impl::subscribe(BlobStreaming::StudyEventSubscriber_ptr subscriber)
{
    if (CORBA::is_nil(subscriber)) throw CORBA::BAD_PARAM();
    auto sink = std::make_shared<SubscriberSink>(subscriber, *this);
    const std::string client = corba::caller_client();
    std::lock_guard lock(mutex_);
    std::size_t mine = 0;
    subscriptions_.for_each([&](std::uint64_t, const daemon::SubscriptionTable::Subscription& s) {
        if (s.owner == client) ++mine;
    });
    if (mine >= kMaxClientSubscriptions) {
        BlobStreaming::LimitReached ex;
        ex.message = ("subscribe to the study events of gateway " + aetitle_ + ": client \"" + client + "\" has " +
                      std::to_string(mine) + " subscriptions open, the most one client may keep; unsubscribe one first")
                         .c_str();
        throw ex;
    }
    if (subscriptions_.size() >= kMaxSubscriptions) {
        BlobStreaming::LimitReached ex;
        ex.message =
            ("subscribe to the study events of gateway " + aetitle_ + ": " + std::to_string(kMaxSubscriptions) +
             " subscriptions are open, the most the gateway keeps; try again later")
                .c_str();
        throw ex;
    }
    const std::string endpoint = sink->endpoint();
    SubscriberSink* raw = sink.get();
    const std::uint64_t id = subscriptions_.add({std::move(sink), 0, client});
    raw->set_id(id);  // under the lock: nothing is posted to it before
    spdlog::info("study events: subscription {} of client \"{}\" for the subscriber at {}", id, client, endpoint);
    return id;
}

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
