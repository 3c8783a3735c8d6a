#pragma once
/// A Session's transfer notices (Notice.h): the tickets it obtained with a
/// notice mode, so that a notice, which names only its ticket, can be told
/// with its Blob, direction and range; and, for NoticeMode::send, the
/// TransferObserver servant that the stores call, activated in the
/// process's ORB the first time a store is to be told where to send.

#include <blobstreaming/client/Notice.h>
#include <blobstreaming/client/Options.h>

#include <BlobStreaming.hh>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace blobstreaming::client {

/// Errc::invalid_argument for a mode out of range, or send without
/// SessionOptions::on_notice; `what` starts the message ("push \"N\"").
void check_notice_mode(NoticeMode mode, const SessionOptions& options, const std::string& what);

/// The IDL's semantics for `mode`.
BlobStreaming::NotificationSemantics semantics_of(NoticeMode mode) noexcept;

class NoticeBoard {
public:
    using TicketId = std::array<std::uint8_t, 16>;
    /// Tickets remembered while their notice is awaited; past this, the
    /// oldest is forgotten (its notice then comes without Blob name).
    static constexpr std::size_t kMaxAwaited = 10000;

    /// `orb` must outlive the board; `on_notice` receives send notices.
    NoticeBoard(CORBA::ORB_ptr orb, NoticeCallback on_notice);
    /// close()
    ~NoticeBoard();
    NoticeBoard(const NoticeBoard&) = delete;
    NoticeBoard& operator=(const NoticeBoard&) = delete;

    /// Any thread: the ticket `id` of `store` was issued for `blob` with a
    /// notice mode; call before its transfer can start.
    void expect(const std::string& store, const TicketId& id, const std::string& blob, TransferDirection direction,
                std::uint64_t offset, std::uint64_t length);
    /// Any thread: the public form of a notice the store sent or kept, the
    /// ticket forgotten. `store`: the store it came from, when known.
    TransferNotice take(const BlobStreaming::TransferNotice& in, const std::string& store = {});
    /// Forgets the tickets of `store` (its transporter, which held their
    /// notices, is gone).
    void forget_store(const std::string& store);

    /// The callback object the stores send notices to, activated at the
    /// first call. Throws Error (Errc::transfer_failed) when the ORB cannot
    /// serve it.
    BlobStreaming::TransferObserver_var observer();

    /// Deactivates the callback object and returns once the callback runs
    /// no more. Idempotent.
    void close() noexcept;

    struct Delivery;

private:
    struct Awaited {
        std::string store;
        std::string blob;
        TransferDirection direction = TransferDirection::push;
        std::uint64_t offset = 0;
        std::uint64_t length = 0;
        std::uint64_t order = 0;
    };

    CORBA::ORB_ptr orb_;
    std::shared_ptr<Delivery> delivery_;
    std::mutex mutex_;  ///< guards what follows; never held across a CORBA call or the callback
    std::map<TicketId, Awaited> awaited_;
    std::map<std::uint64_t, TicketId> by_age_;  ///< awaited_'s keys, oldest first
    std::uint64_t next_order_ = 0;
    PortableServer::POA_var poa_;
    PortableServer::ObjectId_var oid_;
    BlobStreaming::TransferObserver_var observer_;
    bool closed_ = false;
};

}  // namespace blobstreaming::client
