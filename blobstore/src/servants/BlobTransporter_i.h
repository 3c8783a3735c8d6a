#pragma once
/// The BlobTransporter servant: issues data-plane tickets; never moves bytes.

#include "ServantContext.h"

#include <blobstreaming/transporter/daemon/NoticeDispatcher.h>
#include "server/TicketRegistry.h"
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
    /// Registers `binding` and returns its ticket, bound to the caller's
    /// certificate subject, or to `reader`'s when given (a read grant).
    BlobStreaming::TransferTicket* issue(server::TicketBinding binding, const std::string* reader = nullptr);
    /// The binding of a pull of [offset, offset + length) of `name` (length
    /// 0: to its end) from the version held now or being received here
    /// (read-through fetches it first). Throws Error naming `operation`.
    server::TicketBinding pull_binding(const char* operation, const std::string& name, std::uint64_t offset,
                                       std::uint64_t length);
    /// grantRead's work after the permission check; throws Error.
    BlobStreaming::TransferTicket* grant_read(const std::string& name, const std::string& reader);
    /// The ticket that fills reservation `reservation` (of Blob `blob`)
    /// from `offset` for `length` bytes, the rest of the Blob, checksummed
    /// with the reservation's `checksum`: what recv and push issue once
    /// their checks passed. Throws what attach() and the ticket registry
    /// throw.
    BlobStreaming::TransferTicket* issue_push(std::uint64_t reservation, const std::string& blob, std::uint64_t offset,
                                              std::uint64_t length, ChecksumAlgorithm checksum,
                                              CORBA::Boolean use_timeout, const BlobStreaming::TimeValue& timeout,
                                              BlobStreaming::NotificationSemantics semantics);
    void withdraw_all() noexcept;
    /// Throws CORBA::NO_PERMISSION unless the current caller opened this
    /// transporter.
    void require_opener(const char* operation) const;
    /// The checks of an operation that issues a ticket: the caller opened
    /// this transporter (require_opener) and holds `permission`.
    void require_issuer(const char* operation, server::Permission permission) const;
    /// What every ticket request sets alike: the client's own inactivity
    /// timeout when it asks for one, and how it learns of the end.
    void set_transfer_options(server::TicketBinding& binding, CORBA::Boolean use_timeout,
                              const BlobStreaming::TimeValue& timeout, BlobStreaming::NotificationSemantics semantics);

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
