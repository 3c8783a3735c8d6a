#include "BlobTransporter_i.h"

#include <blobstreaming/transporter/corba/BlobInfoIdl.h>

#include "server/AccessList.h"

#include "server/ReservationTable.h"
#include "server/TicketRegistry.h"

#include <blobstreaming/blobstore/ReadThroughStore.h>
#include <blobstreaming/blobstore/Store.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Security.h>
#include <blobstreaming/transporter/daemon/OnewayCall.h>

#include <omniORB4/omniORB.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace blobstreaming::corba {
namespace {

/// How long the dispatcher's thread waits for one observer to take a
/// notice (connecting included) before it gives up on that observer for a
/// while (daemon::NoticeLimits::retry_after).
constexpr CORBA::ULong kObserverCallTimeoutMs = 2000;

std::string range_text(std::uint64_t offset, std::uint64_t length)
{
    const std::string end =
        length > ~std::uint64_t{0} - offset ? std::string("beyond 2^64") : std::to_string(offset + length);
    return "[" + std::to_string(offset) + ", " + end + ")";
}

/// A ticket's binding to `blob`, [offset, offset + length), in `direction`.
server::TicketBinding binding_for(protocol::FrameType direction, const std::string& blob, std::uint64_t offset,
                                  std::uint64_t length)
{
    server::TicketBinding binding;
    binding.direction = direction;
    binding.blob = blob;
    binding.offset = offset;
    binding.length = length;
    return binding;
}

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

BlobTransporter_i::BlobTransporter_i(const ServantContext& context,
                                     std::shared_ptr<server::TransporterActivity> activity)
    : context_(context), opener_(caller_subject()), activity_(std::move(activity))
{}

void BlobTransporter_i::require_opener(const char* operation) const
{
    const std::string subject = caller_subject();
    if (subject == opener_) return;
    spdlog::warn("store \"{}\": {} refused: the transporter was opened by client \"{}\", called by \"{}\"",
                 context_.store_name, operation, opener_, subject);
    throw CORBA::NO_PERMISSION(static_cast<CORBA::ULong>(kNoPermissionMinor), CORBA::COMPLETED_NO);
}

void BlobTransporter_i::require_issuer(const char* operation, server::Permission permission) const
{
    require_opener(operation);
    require_permission(context_, permission, operation);
}

void BlobTransporter_i::set_transfer_options(server::TicketBinding& binding, CORBA::Boolean use_timeout,
                                             const BlobStreaming::TimeValue& timeout,
                                             BlobStreaming::NotificationSemantics semantics)
{
    if (use_timeout) binding.inactivity_timeout = to_milliseconds(timeout);
    binding.control = make_control(semantics);
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

BlobStreaming::TransferTicket* BlobTransporter_i::issue(server::TicketBinding binding, const std::string* reader)
{
    // The data connection must come from the same client (or, for a read
    // grant, from the store it names).
    binding.client = reader ? *reader : caller_subject();
    const protocol::TicketId id = context_.tickets->issue(binding);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = issued_.begin(); it != issued_.end();)
            it = it->second.expired() ? issued_.erase(it) : std::next(it);
        issued_.emplace(id, binding.control);
    }
    auto* ticket = new BlobStreaming::TransferTicket;
    std::memcpy(ticket->id, id.data(), id.size());
    ticket->blob = binding.blob.c_str();
    ticket->direction = binding.direction == protocol::FrameType::push ? BlobStreaming::PUSH : BlobStreaming::PULL;
    ticket->offset = binding.offset;
    ticket->length = binding.length;
    ticket->lifetime = to_time_value(context_.tickets->lifetime());
    ticket->endpoint.host = context_.data_host.c_str();
    ticket->endpoint.port = context_.data_port;
    // A push ticket names no version: size 0, zero checksum, time 0.
    to_idl(binding.version.value_or(BlobInfo{}), ticket->version);
    ticket->checksum = corba::to_idl(binding.checksum);
    spdlog::debug("ticket {} issued: {} {} {}", protocol::ticket_tag(id),
                  binding.direction == protocol::FrameType::push ? "push" : "pull", quote_name(binding.blob),
                  range_text(binding.offset, binding.length));
    return ticket;
}

BlobStreaming::TransferTicket* BlobTransporter_i::send(const char* blob, BlobStreaming::ByteCount length,
                                                       BlobStreaming::ByteOffset absoluteOffset,
                                                       CORBA::Boolean useTimeout,
                                                       const BlobStreaming::TimeValue& timeout,
                                                       BlobStreaming::NotificationSemantics semantics)
{
    require_issuer("send", server::Permission::read);
    const std::string name = blob;
    try {
        server::TicketBinding binding = pull_binding("send", name, absoluteOffset, length);
        set_transfer_options(binding, useTimeout, timeout, semantics);
        return issue(std::move(binding));
    } catch (...) {
        IdlContext c;
        c.name = name;
        c.offset = absoluteOffset;
        c.length = length;
        rethrow_declared(kNoSuchBlob | kInvalidName | kInvalidRange | kTransferFailed, context_.store_name, c);
    }
}

server::TicketBinding BlobTransporter_i::pull_binding(const char* operation, const std::string& name,
                                                      std::uint64_t offset, std::uint64_t length)
{
    if (auto problem = blob_name_problem(name))
        throw Error(Errc::invalid_name, std::string(operation) + " " + quote_name(name) + ": " + *problem);
    // The version a read serves (ReadThroughStore::holding): a Blob this
    // store is receiving (a copy to it, read-through) is the version being
    // received, also when an older version is still here (the next store
    // of a copy chain must get the version this one receives), and the
    // data port's read follows its bytes as they arrive. Read-through: the
    // fill of a Blob only a farther tier holds begins here.
    const BlobInfo info =
        context_.read_through ? context_.read_through->holding(name).version : context_.store->stat(name);
    std::uint64_t resolved = length;
    if (length == 0 && offset <= info.size) resolved = info.size - offset;
    if (resolved > ~std::uint64_t{0} - offset || offset + resolved > info.size) {
        // Same wording as the store's own range errors.
        throw Error(Errc::invalid_range, std::string(operation) + " " + quote_name(name) + ": range " + range_text(offset, length) +
                                             " is outside the blob of " + std::to_string(info.size) + " bytes");
    }
    server::TicketBinding binding = binding_for(protocol::FrameType::pull, name, offset, resolved);
    binding.version = info;
    binding.checksum = info.checksum.algorithm;
    return binding;
}

BlobStreaming::TransferTicket* BlobTransporter_i::grant_read(const std::string& name, const std::string& reader)
{
    server::TicketBinding binding = pull_binding("grantRead", name, 0, 0);
    set_transfer_options(binding, false, {}, BlobStreaming::IGNORE_NOTIFICATIONS);
    const std::string client = caller_subject();
    // Without TLS nobody has a subject: the ticket itself is the capability.
    if (!client.empty() && reader.empty())
        throw Error(Errc::invalid_argument, "grantRead " + quote_name(name) +
                                                ": no reader named (the certificate subject of the store that "
                                                "copies, its BlobStore::identity)");
    const std::string bound = client.empty() ? std::string() : reader;
    spdlog::info("read grant of {} ({} bytes) issued to client \"{}\" for store \"{}\"", quote_name(name),
                 binding.length, client, bound);
    return issue(std::move(binding), &bound);
}

BlobStreaming::TransferTicket* BlobTransporter_i::grantRead(const char* blob, const char* reader)
{
    require_issuer("grantRead", server::Permission::read);
    try {
        return grant_read(blob, reader);
    } catch (...) {
        IdlContext c;
        c.name = blob;
        rethrow_declared(kNoSuchBlob | kInvalidName | kTransferFailed, context_.store_name, c);
    }
}

BlobStreaming::GrantOutcomeSeq* BlobTransporter_i::grantReads(const BlobStreaming::NameSeq& blobs, const char* reader)
{
    require_issuer("grantReads", server::Permission::read);
    try {
        check_batch(blobs.length(), "grantReads", "names");
    } catch (...) {
        rethrow_declared(kLimitReached, context_.store_name, {});
    }
    BlobStreaming::GrantOutcomeSeq_var out = new BlobStreaming::GrantOutcomeSeq;
    out->length(blobs.length());
    for (CORBA::ULong i = 0; i < blobs.length(); ++i) {
        BlobStreaming::GrantOutcome& o = out[i];
        o.code = 0;
        try {
            BlobStreaming::TransferTicket_var ticket = grant_read(blobs[i].in(), reader);
            o.ticket = ticket.in();
            continue;
        } catch (const Error& e) {
            o.code = static_cast<CORBA::UShort>(e.code());
            o.message = e.what();
        } catch (const std::exception& e) {
            o.code = static_cast<CORBA::UShort>(Errc::transfer_failed);
            o.message = ("grantRead " + quote_name(blobs[i].in()) + ": internal error: " + e.what()).c_str();
        }
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
    require_issuer("recv", server::Permission::write);
    require_reservation_owner(context_, reservation, "recv into");
    server::ReservationTable::Summary summary;
    try {
        summary = context_.reservations->find(reservation);
    } catch (...) {
        IdlContext c;
        c.id = reservation;
        rethrow_declared(kNoSuchReservation | kInvalidRange | kTransferFailed, context_.store_name, c);
    }
    // A push runs from what the reservation holds (0, or more when resumed)
    // to the end of the Blob.
    const std::uint64_t rest = summary.size - summary.received;
    const std::uint64_t resolved = (length == 0 && absoluteOffset == 0) ? summary.size : length;
    if (absoluteOffset != summary.received || resolved != rest) {
        const std::string msg = "recv into reservation " + std::to_string(reservation) + " (" +
                                quote_name(summary.name) + ", " + std::to_string(summary.size) + " bytes, " +
                                std::to_string(summary.received) + " received): a push continues at offset " +
                                std::to_string(summary.received) + " to the end of the Blob (length " +
                                std::to_string(rest) + "), not " + range_text(absoluteOffset, length);
        throw BlobStreaming::InvalidRange(msg.c_str(), summary.name.c_str(), absoluteOffset, length);
    }
    try {
        return issue_push(reservation, summary.name, summary.received, rest, summary.checksum, useTimeout, timeout,
                          semantics);
    } catch (...) {
        IdlContext c;
        c.name = summary.name;
        c.id = reservation;
        c.offset = absoluteOffset;
        c.length = length;
        rethrow_declared(kNoSuchReservation | kInvalidRange | kTransferFailed, context_.store_name, c);
    }
}

BlobStreaming::TransferTicket* BlobTransporter_i::issue_push(std::uint64_t reservation, const std::string& blob,
                                                             std::uint64_t offset, std::uint64_t length,
                                                             ChecksumAlgorithm checksum, CORBA::Boolean use_timeout,
                                                             const BlobStreaming::TimeValue& timeout,
                                                             BlobStreaming::NotificationSemantics semantics)
{
    server::TicketBinding binding = binding_for(protocol::FrameType::push, blob, offset, length);
    binding.reservation = reservation;
    binding.checksum = checksum;
    set_transfer_options(binding, use_timeout, timeout, semantics);
    context_.reservations->attach(reservation, binding.control);
    return issue(std::move(binding));
}

// reserve + recv in one upcall: the checks of both (the opener, the write
// permission, then open_reservation's), nothing of its own.
BlobStreaming::PushGrant* BlobTransporter_i::push(const char* name, BlobStreaming::ByteCount size,
                                                  CORBA::Boolean overwrite, BlobStreaming::ChecksumAlgorithm checksum,
                                                  CORBA::Boolean useTimeout, const BlobStreaming::TimeValue& timeout,
                                                  BlobStreaming::NotificationSemantics semantics)
{
    require_issuer("push", server::Permission::write);
    const ChecksumAlgorithm algorithm = corba::algorithm_of(checksum).value_or(context_.default_checksum);
    std::uint64_t id = 0;
    try {
        id = open_reservation(context_, name, size, overwrite, algorithm);
    } catch (...) {
        rethrow_reserve_failure(context_, name, size, true);
    }
    try {
        BlobStreaming::TransferTicket_var ticket =
            issue_push(id, name, 0, size, algorithm, useTimeout, timeout, semantics);
        BlobStreaming::PushGrant_var grant = new BlobStreaming::PushGrant;
        to_idl_reservation(id, name, size, 0, algorithm, grant->space);
        grant->ticket = ticket.in();
        return grant._retn();
    } catch (...) {
        // Nothing half-done stays behind: the client never learns this id.
        try {
            context_.reservations->abort(id);
        } catch (const std::exception& e) {
            spdlog::warn("push {}: cannot abort reservation {} after the ticket failed: {}", quote_name(name), id,
                         e.what());
        }
        rethrow_reserve_failure(context_, name, size, true);
    }
}

BlobStreaming::Reservation* BlobTransporter_i::reserveParts(const char* name, BlobStreaming::ByteCount size,
                                                            CORBA::Boolean overwrite,
                                                            BlobStreaming::ChecksumAlgorithm checksum)
{
    require_issuer("reserveParts", server::Permission::write);
    const ChecksumAlgorithm algorithm = corba::algorithm_of(checksum).value_or(context_.default_checksum);
    try {
        if (algorithm != ChecksumAlgorithm::crc32c)
            throw Error(Errc::invalid_argument, "reserveParts " + quote_name(name) +
                                                    ": a Blob filled in parts is checked with CRC32C, which "
                                                    "combines from the parts; " +
                                                    std::string(to_string(algorithm)) +
                                                    " does not (push it over one stream)");
        const std::uint64_t id = open_reservation(context_, name, size, overwrite, algorithm);
        auto* out = new BlobStreaming::Reservation;
        to_idl_reservation(id, name, size, 0, algorithm, *out);
        return out;
    } catch (...) {
        rethrow_reserve_failure(context_, name, size, true);
    }
}

BlobStreaming::TransferTicket* BlobTransporter_i::recvPart(BlobStreaming::ReservationId reservation,
                                                           BlobStreaming::ByteCount length,
                                                           BlobStreaming::ByteOffset absoluteOffset,
                                                           CORBA::Boolean useTimeout,
                                                           const BlobStreaming::TimeValue& timeout)
{
    require_issuer("recvPart", server::Permission::write);
    require_reservation_owner(context_, reservation, "recvPart into");
    IdlContext c;
    c.id = reservation;
    c.offset = absoluteOffset;
    c.length = length;
    try {
        const auto start = context_.reservations->part_start(reservation, absoluteOffset, length);
        c.name = start.name;
        const std::uint64_t end = absoluteOffset + length;
        server::TicketBinding binding =
            binding_for(protocol::FrameType::push, start.name, start.offset, end - start.offset);
        binding.reservation = reservation;
        binding.part = true;
        binding.checksum = ChecksumAlgorithm::crc32c;
        set_transfer_options(binding, useTimeout, timeout, BlobStreaming::IGNORE_NOTIFICATIONS);
        return issue(std::move(binding));
    } catch (...) {
        rethrow_declared(kNoSuchReservation | kInvalidRange | kTransferFailed, context_.store_name, c);
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
        auto* out = new BlobStreaming::TransferNoticeSeq;
        out->length(static_cast<CORBA::ULong>(taken.size()));
        for (CORBA::ULong i = 0; i < out->length(); ++i) (*out)[i] = taken[i];
        return out;
    } catch (...) {
        rethrow_declared(kRaisesNothing, context_.store_name);
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
                         context_.store_name, protocol::ticket_tag(ticket));
            return;
        }
        control = it->second.lock();
        issued_.erase(it);
    }
    const bool withdrawn = context_.tickets->withdraw(ticket);
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
    for (const auto& kv : issued) context_.tickets->withdraw(kv.first);
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
