#include "BlobTransporter_i.h"

#include <blobstreaming/transporter/corba/BlobInfoIdl.h>

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Security.h>
#include <blobstreaming/transporter/daemon/OnewayCall.h>

#include <omniORB4/omniORB.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace blobstreaming::corba {
namespace {

/// How long the dispatcher's thread waits for one observer to take a
/// notice (connecting included) before it gives up on that observer for a
/// while (daemon::NoticeLimits::retry_after).
constexpr CORBA::ULong kObserverCallTimeoutMs = 2000;

protocol::TicketId ticket_of(const BlobStreaming::TicketId id)
{
    protocol::TicketId out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = id[i];
    return out;
}

BlobStreaming::TransferNotice notice_of(const server::TransferOutcome& outcome)
{
    BlobStreaming::TransferNotice notice;
    std::memcpy(notice.id, outcome.ticket.data(), outcome.ticket.size());
    notice.succeeded = outcome.succeeded;
    notice.bytes = outcome.bytes;
    notice.reason = outcome.reason.c_str();
    return notice;
}

/// A client's TransferObserver, called on the NoticeDispatcher's thread
/// with a call timeout of its own.
class ObserverSink final : public daemon::NoticeSinkOf<server::TransferOutcome> {
public:
    explicit ObserverSink(BlobStreaming::TransferObserver_ptr observer)
        : observer_(BlobStreaming::TransferObserver::_duplicate(observer)), endpoint_(endpoint_of(observer))
    {
        omniORB::setClientCallTimeout(observer_, kObserverCallTimeoutMs);
    }

    std::string deliver(const server::TransferOutcome& outcome) noexcept override
    {
        return daemon::oneway_call([&] { observer_->completed(notice_of(outcome)); }, kObserverCallTimeoutMs, "notice");
    }

    const std::string& endpoint() const noexcept override { return endpoint_; }

private:
    BlobStreaming::TransferObserver_var observer_;
    const std::string endpoint_;
};

}  // namespace

BlobTransporter_i::BlobTransporter_i(const ServantContext& context,
                                     std::shared_ptr<server::TransporterActivity> activity)
    : context_(context), opener_(caller_subject()), activity_(std::move(activity))
{}

void BlobTransporter_i::require_opener(const char* operation) const
{
    const std::string subject = caller_subject();
    if (subject == opener_) return;
    spdlog::warn("store \"{}\": {} refused: the transporter was opened by client \"{}\", called by \"{}\"",
                 context_.store_name(), operation, opener_, subject);
    throw CORBA::NO_PERMISSION(static_cast<CORBA::ULong>(kNoPermissionMinor), CORBA::COMPLETED_NO);
}

service::StoreService::TransferOptions BlobTransporter_i::transfer_options(
    CORBA::Boolean use_timeout, const BlobStreaming::TimeValue& timeout, BlobStreaming::NotificationSemantics semantics)
{
    service::StoreService::TransferOptions options;
    if (use_timeout) options.inactivity_timeout = to_milliseconds(timeout);
    options.control = make_control(semantics);
    return options;
}

BlobTransporter_i::~BlobTransporter_i()
{
    withdraw_all();
    release();
}

void BlobTransporter_i::release() noexcept
{
    if (activity_ && context_.transporters) context_.transporters->release(activity_.get());
}

// Runs on the reactor thread when the transfer ends: it only queues, never
// calls out (a oneway call still connects and writes, and an observer that
// does not answer would hold up every transfer of the daemon).
std::shared_ptr<server::TransferControl> BlobTransporter_i::make_control(BlobStreaming::NotificationSemantics semantics)
{
    auto control = std::make_shared<server::TransferControl>();
    if (activity_) activity_->track(control);  // busy until the transfer ends
    control->on_finished = [notices = notices_, semantics, activity = activity_, dispatcher = context_.notices,
                            self = control.get()](const server::TransferOutcome& outcome) {
        if (activity) activity->ended(self);
        if (semantics == BlobStreaming::QUEUE_NOTIFICATIONS) {
            const BlobStreaming::TransferNotice notice = notice_of(outcome);
            std::lock_guard<std::mutex> lock(notices->mutex);
            if (notices->queue.size() >= kMaxQueuedNotices) {
                notices->queue.pop_front();
                ++notices->dropped;
            }
            notices->queue.push_back(notice);
            return;
        }
        if (semantics != BlobStreaming::SEND_NOTIFICATIONS) return;
        std::shared_ptr<daemon::NoticeSink> observer;
        {
            std::lock_guard<std::mutex> lock(notices->mutex);
            observer = notices->observer;
        }
        if (observer && dispatcher) dispatcher->post(observer, outcome);
    };
    return control;
}

void BlobTransporter_i::to_idl_ticket(const service::StoreService::Issued& issued,
                                      BlobStreaming::TransferTicket& ticket) const
{
    const server::TicketBinding& binding = issued.binding;
    std::memcpy(ticket.id, issued.id.data(), issued.id.size());
    ticket.blob = binding.blob.c_str();
    ticket.direction = binding.direction == protocol::FrameType::push ? BlobStreaming::PUSH : BlobStreaming::PULL;
    ticket.offset = binding.offset;
    ticket.length = binding.length;
    ticket.lifetime = to_time_value(context_.service.ticket_lifetime());
    ticket.endpoint.host = context_.data_host.c_str();
    ticket.endpoint.port = context_.data_port;
    // A push ticket names no version: size 0, zero checksum, time 0.
    to_idl(binding.version.value_or(BlobInfo{}), ticket.version);
    ticket.checksum = corba::to_idl(binding.checksum);
}

BlobStreaming::TransferTicket* BlobTransporter_i::keep(const service::StoreService::Issued& issued)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = issued_.begin(); it != issued_.end();)
            it = it->second.expired() ? issued_.erase(it) : std::next(it);
        issued_.emplace(issued.id, issued.binding.control);
    }
    BlobStreaming::TransferTicket_var ticket = new BlobStreaming::TransferTicket;
    to_idl_ticket(issued, ticket.inout());
    return ticket._retn();
}

BlobStreaming::TransferTicket* BlobTransporter_i::send(const char* blob, BlobStreaming::ByteCount length,
                                                       BlobStreaming::ByteOffset absoluteOffset,
                                                       CORBA::Boolean useTimeout,
                                                       const BlobStreaming::TimeValue& timeout,
                                                       BlobStreaming::NotificationSemantics semantics)
{
    require_opener("send");
    IdlContext c;
    c.name = blob;
    c.offset = absoluteOffset;
    c.length = length;
    try {
        return keep(context_.service.send(current_caller(), blob, absoluteOffset, length,
                                          transfer_options(useTimeout, timeout, semantics)));
    } catch (...) {
        rethrow_idl(context_, kNoSuchBlob | kInvalidName | kInvalidRange | kTransferFailed, c);
    }
}

BlobStreaming::TransferTicket* BlobTransporter_i::grantRead(const char* blob, const char* reader)
{
    require_opener("grantRead");
    try {
        return keep(context_.service.grant_read(current_caller(), blob, reader,
                                                transfer_options(false, {}, BlobStreaming::IGNORE_NOTIFICATIONS)));
    } catch (...) {
        rethrow_idl(context_, kNoSuchBlob | kInvalidName | kTransferFailed, {blob});
    }
}

BlobStreaming::GrantOutcomeSeq* BlobTransporter_i::grantReads(const BlobStreaming::NameSeq& blobs, const char* reader)
{
    require_opener("grantReads");
    std::vector<std::string> names(blobs.length());
    for (CORBA::ULong i = 0; i < blobs.length(); ++i) names[i] = blobs[i].in();
    std::vector<service::StoreService::GrantOutcome> outcomes;
    try {
        outcomes = context_.service.grant_reads(current_caller(), names, reader, [this] {
            return transfer_options(false, {}, BlobStreaming::IGNORE_NOTIFICATIONS);
        });
    } catch (...) {
        rethrow_idl(context_, kLimitReached);
    }
    BlobStreaming::GrantOutcomeSeq_var out = new BlobStreaming::GrantOutcomeSeq;
    out->length(blobs.length());
    for (CORBA::ULong i = 0; i < blobs.length(); ++i) {
        BlobStreaming::GrantOutcome& o = out[i];
        if (outcomes[i].issued) {
            o.code = 0;
            BlobStreaming::TransferTicket_var ticket = keep(*outcomes[i].issued);
            o.ticket = ticket.in();
            continue;
        }
        o.code = static_cast<CORBA::UShort>(outcomes[i].code);
        o.message = outcomes[i].message.c_str();
        // Marshalled also for a failure: an enum left uninitialised fails the reply.
        o.ticket.direction = BlobStreaming::PULL;
        to_idl(BlobInfo{}, o.ticket.version);
        o.ticket.checksum = corba::to_idl(kDefaultChecksum);
    }
    return out._retn();
}

BlobStreaming::TransferTicket* BlobTransporter_i::recv(
    BlobStreaming::ReservationId reservation, BlobStreaming::ByteCount length, BlobStreaming::ByteOffset absoluteOffset,
    CORBA::Boolean useTimeout, const BlobStreaming::TimeValue& timeout, BlobStreaming::NotificationSemantics semantics)
{
    require_opener("recv");
    IdlContext c;
    c.id = reservation;
    c.offset = absoluteOffset;
    c.length = length;
    try {
        return keep(context_.service.recv(current_caller(), reservation, absoluteOffset, length,
                                          transfer_options(useTimeout, timeout, semantics), c.name));
    } catch (...) {
        rethrow_idl(context_, kNoSuchReservation | kInvalidRange | kTransferFailed, c);
    }
}

BlobStreaming::PushGrant* BlobTransporter_i::push(const char* name, BlobStreaming::ByteCount size,
                                                  CORBA::Boolean overwrite, BlobStreaming::ChecksumAlgorithm checksum,
                                                  CORBA::Boolean useTimeout, const BlobStreaming::TimeValue& timeout,
                                                  BlobStreaming::NotificationSemantics semantics)
{
    require_opener("push");
    try {
        const service::StoreService::Pushed pushed =
            context_.service.push(current_caller(), name, size, overwrite, corba::algorithm_of(checksum),
                                  transfer_options(useTimeout, timeout, semantics));
        return push_grant(pushed);
    } catch (...) {
        IdlContext c;
        c.name = name;
        c.requested = size;
        rethrow_idl(context_, kInvalidName | kOutOfSpace | kAlreadyExists | kLimitReached | kTransferFailed, c);
    }
}

BlobStreaming::PushGrant* BlobTransporter_i::push_grant(const service::StoreService::Pushed& pushed)
{
    BlobStreaming::TransferTicket_var ticket = keep(pushed.ticket);
    BlobStreaming::PushGrant_var grant = new BlobStreaming::PushGrant;
    to_idl_reservation(pushed.reservation, grant->space);
    grant->ticket = ticket.in();
    return grant._retn();
}

BlobStreaming::PushGrant* BlobTransporter_i::pushStream(const char* name, BlobStreaming::ByteCount maxSize,
                                                        CORBA::Boolean overwrite,
                                                        BlobStreaming::ChecksumAlgorithm checksum,
                                                        CORBA::Boolean useTimeout,
                                                        const BlobStreaming::TimeValue& timeout,
                                                        BlobStreaming::NotificationSemantics semantics)
{
    require_opener("pushStream");
    try {
        const service::StoreService::Pushed pushed =
            context_.service.push_stream(current_caller(), name, maxSize, overwrite, corba::algorithm_of(checksum),
                                         transfer_options(useTimeout, timeout, semantics));
        return push_grant(pushed);
    } catch (...) {
        IdlContext c;
        c.name = name;
        c.requested = maxSize;
        rethrow_idl(context_, kInvalidName | kOutOfSpace | kAlreadyExists | kLimitReached | kTransferFailed, c);
    }
}

BlobStreaming::Reservation* BlobTransporter_i::reserveParts(const char* name, BlobStreaming::ByteCount size,
                                                            CORBA::Boolean overwrite,
                                                            BlobStreaming::ChecksumAlgorithm checksum)
{
    require_opener("reserveParts");
    try {
        BlobStreaming::Reservation_var out = new BlobStreaming::Reservation;  // freed if the call throws
        to_idl_reservation(
            context_.service.reserve_parts(current_caller(), name, size, overwrite, corba::algorithm_of(checksum)),
            out.inout());
        return out._retn();
    } catch (...) {
        IdlContext c;
        c.name = name;
        c.requested = size;
        rethrow_idl(context_, kInvalidName | kOutOfSpace | kAlreadyExists | kLimitReached | kTransferFailed, c);
    }
}

BlobStreaming::TransferTicket* BlobTransporter_i::recvPart(BlobStreaming::ReservationId reservation,
                                                           BlobStreaming::ByteCount length,
                                                           BlobStreaming::ByteOffset absoluteOffset,
                                                           CORBA::Boolean useTimeout,
                                                           const BlobStreaming::TimeValue& timeout)
{
    require_opener("recvPart");
    IdlContext c;
    c.id = reservation;
    c.offset = absoluteOffset;
    c.length = length;
    try {
        return keep(context_.service.recv_part(current_caller(), reservation, absoluteOffset, length,
                                               transfer_options(useTimeout, timeout,
                                                                BlobStreaming::IGNORE_NOTIFICATIONS),
                                               c.name));
    } catch (...) {
        rethrow_idl(context_, kNoSuchReservation | kInvalidRange | kTransferFailed, c);
    }
}

BlobStreaming::TransferNoticeSeq* BlobTransporter_i::poll()
{
    require_opener("poll");
    try {
        if (activity_) activity_->touch();
        std::deque<BlobStreaming::TransferNotice> taken;
        std::uint64_t dropped = 0;
        {
            std::lock_guard<std::mutex> lock(notices_->mutex);
            taken.swap(notices_->queue);
            std::swap(dropped, notices_->dropped);
        }
        if (dropped > 0)
            spdlog::info("transporter poll: {} oldest notices were dropped since the previous poll (at most {} are "
                         "kept)",
                         dropped, kMaxQueuedNotices);
        BlobStreaming::TransferNoticeSeq_var out = new BlobStreaming::TransferNoticeSeq;
        out->length(static_cast<CORBA::ULong>(taken.size()));
        for (CORBA::ULong i = 0; i < out->length(); ++i) out[i] = taken[i];
        return out._retn();
    } catch (...) {
        rethrow_idl(context_, kRaisesNothing);
    }
}

void BlobTransporter_i::observe(BlobStreaming::TransferObserver_ptr observer)
{
    require_opener("observe");
    if (activity_) activity_->touch();
    std::shared_ptr<daemon::NoticeSink> sink;
    if (!CORBA::is_nil(observer)) sink = std::make_shared<ObserverSink>(observer);
    std::lock_guard<std::mutex> lock(notices_->mutex);
    notices_->observer = std::move(sink);
}

void BlobTransporter_i::cancel(const BlobStreaming::TicketId id)
{
    require_opener("cancel");
    if (activity_) activity_->touch();
    const protocol::TicketId ticket = ticket_of(id);
    std::shared_ptr<server::TransferControl> control;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = issued_.find(ticket);
        if (it == issued_.end()) {
            // Not one of this transporter's tickets (another transporter's,
            // maybe another client's, or one long gone): left alone, and the
            // caller hears what it would for an unknown ticket.
            spdlog::info("store \"{}\": cancel of ticket {} ignored: this transporter did not issue it (or it is "
                         "gone)",
                         context_.store_name(), protocol::ticket_tag(ticket));
            return;
        }
        control = it->second.lock();
        issued_.erase(it);
    }
    const bool withdrawn = context_.service.withdraw(ticket);
    if (control) control->cancelled = true;
    spdlog::debug("ticket {} cancelled ({})", protocol::ticket_tag(ticket),
                  withdrawn ? "unused, withdrawn" : "its transfer is abandoned if still running");
}

void BlobTransporter_i::withdraw_all() noexcept
{
    std::map<protocol::TicketId, std::weak_ptr<server::TransferControl>> issued;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        issued.swap(issued_);
    }
    for (const auto& kv : issued) context_.service.withdraw(kv.first);
}

void BlobTransporter_i::close()
{
    require_opener("close");
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (closed_) return;
        closed_ = true;
    }
    release();
    withdraw_all();
    try {
        PortableServer::ObjectId_var oid = context_.poa->servant_to_id(this);
        context_.poa->deactivate_object(oid);
    } catch (const CORBA::Exception& e) {
        spdlog::warn("cannot deactivate a closed transporter: CORBA {}", e._name());
    }
}

}  // namespace blobstreaming::corba
