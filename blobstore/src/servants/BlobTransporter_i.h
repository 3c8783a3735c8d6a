#pragma once
/// The BlobTransporter servant: data-plane tickets as the store service
/// (service/StoreService.h) issues them, and their notices; never moves
/// bytes.

#include "ServantContext.h"

#include <blobstreaming/transporter/daemon/NoticeDispatcher.h>
#include "server/TransporterRegistry.h"

#include <blobstreaming/transporter/Protocol.h>

#include <BlobStreaming.hh>

#include <deque>
#include <map>
#include <memory>
#include <mutex>

namespace blobstreaming::corba {

/// One per openTransporter() call, activated in the context's POA; close()
/// withdraws its unused tickets and deactivates it, and so does the daemon
/// when it was left idle (server::TransporterRegistry). Upcalls run on
/// omniORB threads; completion notices are produced on the reactor thread,
/// which only queues them: SEND_NOTIFICATIONS notices are delivered by the
/// context's NoticeDispatcher, QUEUE_NOTIFICATIONS ones wait for poll().
///
/// A transporter serves only the client that opened it (the certificate
/// subject of the openTransporter() call): its object key is guessable, its
/// notices and tickets are that client's.
class BlobTransporter_i : public POA_BlobStreaming::BlobTransporter {
public:
    /// Call from the openTransporter() upcall: the caller becomes the opener.
    /// `activity` is what the context's TransporterRegistry admitted for it
    /// (null without a registry); the servant keeps it up to date and
    /// releases it when closed or destroyed.
    BlobTransporter_i(const ServantContext& context, std::shared_ptr<server::TransporterActivity> activity);
    ~BlobTransporter_i() override;

    BlobStreaming::TransferTicket* send(const char* blob, BlobStreaming::ByteCount length,
                                        BlobStreaming::ByteOffset absoluteOffset, CORBA::Boolean useTimeout,
                                        const BlobStreaming::TimeValue& timeout,
                                        BlobStreaming::NotificationSemantics semantics) override;
    BlobStreaming::TransferTicket* grantRead(const char* blob, const char* reader) override;
    BlobStreaming::GrantOutcomeSeq* grantReads(const BlobStreaming::NameSeq& blobs, const char* reader) override;
    BlobStreaming::TransferTicket* recv(BlobStreaming::ReservationId reservation, BlobStreaming::ByteCount length,
                                        BlobStreaming::ByteOffset absoluteOffset, CORBA::Boolean useTimeout,
                                        const BlobStreaming::TimeValue& timeout,
                                        BlobStreaming::NotificationSemantics semantics) override;
    BlobStreaming::PushGrant* push(const char* name, BlobStreaming::ByteCount size, CORBA::Boolean overwrite,
                                   BlobStreaming::ChecksumAlgorithm checksum, CORBA::Boolean useTimeout,
                                   const BlobStreaming::TimeValue& timeout,
                                   BlobStreaming::NotificationSemantics semantics) override;
    BlobStreaming::PushGrant* pushStream(const char* name, BlobStreaming::ByteCount maxSize, CORBA::Boolean overwrite,
                                   BlobStreaming::ChecksumAlgorithm checksum, CORBA::Boolean useTimeout,
                                   const BlobStreaming::TimeValue& timeout,
                                   BlobStreaming::NotificationSemantics semantics) override;
    BlobStreaming::Reservation* reserveParts(const char* name, BlobStreaming::ByteCount size, CORBA::Boolean overwrite,
                                             BlobStreaming::ChecksumAlgorithm checksum) override;
    BlobStreaming::TransferTicket* recvPart(BlobStreaming::ReservationId reservation, BlobStreaming::ByteCount length,
                                            BlobStreaming::ByteOffset absoluteOffset, CORBA::Boolean useTimeout,
                                            const BlobStreaming::TimeValue& timeout) override;
    BlobStreaming::TransferNoticeSeq* poll() override;
    void observe(BlobStreaming::TransferObserver_ptr observer) override;
    void cancel(const BlobStreaming::TicketId id) override;
    void close() override;

    /// Notices of this transporter's transfers; shared with the transfers'
    /// completion callbacks so that they may outlive the servant.
    struct Notices {
        std::mutex mutex;
        std::deque<BlobStreaming::TransferNotice> queue;  ///< QUEUE_NOTIFICATIONS, at most kMaxQueuedNotices
        std::uint64_t dropped = 0;                        ///< oldest queued notices dropped since the last poll()
        std::shared_ptr<daemon::NoticeSink> observer;     ///< SEND_NOTIFICATIONS; null: nowhere
    };

    /// Queued notices kept per transporter at most; the oldest are dropped.
    static constexpr std::size_t kMaxQueuedNotices = 10000;

private:
    std::shared_ptr<server::TransferControl> make_control(BlobStreaming::NotificationSemantics semantics);
    /// What every ticket request sets alike: the client's own inactivity
    /// timeout when it asks for one, and how it learns of the end.
    service::StoreService::TransferOptions transfer_options(CORBA::Boolean use_timeout,
                                                            const BlobStreaming::TimeValue& timeout,
                                                            BlobStreaming::NotificationSemantics semantics);
    /// Keeps the ticket the service issued (for cancel() and close()) and
    /// returns it as the IDL ticket.
    BlobStreaming::TransferTicket* keep(const service::StoreService::Issued& ticket);
    /// The IDL PushGrant of `pushed` (push, pushStream), its ticket kept as keep() keeps it.
    BlobStreaming::PushGrant* push_grant(const service::StoreService::Pushed& pushed);
    /// The IDL form of `ticket`.
    void to_idl_ticket(const service::StoreService::Issued& ticket, BlobStreaming::TransferTicket& out) const;
    void withdraw_all() noexcept;
    /// Throws CORBA::NO_PERMISSION unless the current caller opened this
    /// transporter (it serves only its opener; the store service checks
    /// the permission of each operation after this).
    void require_opener(const char* operation) const;

    void release() noexcept;

    const ServantContext& context_;
    const std::string opener_;  ///< certificate subject of the client that opened it ("" without TLS)
    const std::shared_ptr<server::TransporterActivity> activity_;
    std::shared_ptr<Notices> notices_ = std::make_shared<Notices>();
    std::mutex mutex_;
    std::map<protocol::TicketId, std::weak_ptr<server::TransferControl>> issued_;
    bool closed_ = false;
};

}  // namespace blobstreaming::corba
