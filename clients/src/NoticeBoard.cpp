// A Session's transfer notices (NoticeBoard.h) and the public names of
// their modes (Notice.h).
#include "NoticeBoard.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Log.h>

#include <cstdio>

namespace blobstreaming::client {

const char* to_string(NoticeMode mode) noexcept
{
    switch (mode) {
    case NoticeMode::none: return "none";
    case NoticeMode::send: return "send";
    case NoticeMode::queue: return "queue";
    }
    return "?";
}

std::optional<NoticeMode> notice_mode_of(std::string_view text) noexcept
{
    for (NoticeMode m : {NoticeMode::none, NoticeMode::send, NoticeMode::queue})
        if (text == to_string(m)) return m;
    return std::nullopt;
}

const char* to_string(TransferDirection direction) noexcept
{
    return direction == TransferDirection::push ? "push" : "pull";
}

void check_notice_mode(NoticeMode mode, const SessionOptions& options, const std::string& what)
{
    if (mode != NoticeMode::none && mode != NoticeMode::send && mode != NoticeMode::queue)
        throw Error(Errc::invalid_argument, what + ": notices " + std::to_string(static_cast<int>(mode)) +
                                                ": expected NoticeMode::none, send or queue");
    if (mode == NoticeMode::send && !options.on_notice)
        throw Error(Errc::invalid_argument,
                    what + ": notices send: the Session has no callback to receive them; set "
                           "SessionOptions::on_notice, or use notices queue and Session::poll_notices()");
}

BlobStreaming::NotificationSemantics semantics_of(NoticeMode mode) noexcept
{
    switch (mode) {
    case NoticeMode::send: return BlobStreaming::SEND_NOTIFICATIONS;
    case NoticeMode::queue: return BlobStreaming::QUEUE_NOTIFICATIONS;
    case NoticeMode::none: break;
    }
    return BlobStreaming::IGNORE_NOTIFICATIONS;
}

/// The callback and whether it may still run: shared by the board and the
/// servant (which the POA may keep a little after deactivation).
struct NoticeBoard::Delivery {
    std::mutex mutex;  ///< held while the callback runs: one call at a time
    NoticeCallback on_notice;
    NoticeBoard* board = nullptr;  ///< valid while !closed
    bool closed = false;
};

namespace {

std::string hex(const NoticeBoard::TicketId& id)
{
    std::string out;
    char buf[3];
    for (std::uint8_t b : id) {
        std::snprintf(buf, sizeof buf, "%02x", b);
        out += buf;
    }
    return out;
}

class Observer_i : public POA_BlobStreaming::TransferObserver {
public:
    explicit Observer_i(std::shared_ptr<NoticeBoard::Delivery> delivery) : delivery_(std::move(delivery)) {}

    void completed(const BlobStreaming::TransferNotice& in) override
    {
        std::lock_guard lock(delivery_->mutex);
        if (delivery_->closed) return;
        try {
            delivery_->on_notice(delivery_->board->take(in));
        } catch (const std::exception& e) {
            library_log()->warn("transfer notice: the on_notice callback threw: {}", e.what());
        } catch (...) {
            library_log()->warn("transfer notice: the on_notice callback threw");
        }
    }

private:
    std::shared_ptr<NoticeBoard::Delivery> delivery_;
};

}  // namespace

NoticeBoard::NoticeBoard(CORBA::ORB_ptr orb, NoticeCallback on_notice)
    : orb_(orb), delivery_(std::make_shared<Delivery>())
{
    delivery_->on_notice = std::move(on_notice);
    delivery_->board = this;
}

NoticeBoard::~NoticeBoard() { close(); }

void NoticeBoard::expect(const std::string& store, const TicketId& id, const std::string& blob,
                         TransferDirection direction, std::uint64_t offset, std::uint64_t length)
{
    std::lock_guard lock(mutex_);
    const auto [it, added] = awaited_.try_emplace(id, Awaited{store, blob, direction, offset, length, next_order_});
    if (!added) return;  // a ticket id is random: issued twice only by a broken store
    by_age_.emplace(next_order_++, id);
    while (awaited_.size() > kMaxAwaited) {
        const auto oldest = by_age_.begin();
        awaited_.erase(oldest->second);
        by_age_.erase(oldest);
    }
}

TransferNotice NoticeBoard::take(const BlobStreaming::TransferNotice& in, const std::string& store)
{
    TicketId id;
    std::copy(in.id, in.id + id.size(), id.begin());
    TransferNotice out;
    out.store = store;
    out.ticket = hex(id);
    out.succeeded = in.succeeded;
    out.bytes = in.bytes;
    out.reason = in.reason.in();
    out.received = std::chrono::system_clock::now();
    std::lock_guard lock(mutex_);
    const auto it = awaited_.find(id);
    if (it == awaited_.end()) return out;
    out.store = it->second.store;
    out.blob = it->second.blob;
    out.direction = it->second.direction;
    out.offset = it->second.offset;
    out.length = it->second.length;
    by_age_.erase(it->second.order);
    awaited_.erase(it);
    return out;
}

void NoticeBoard::forget_store(const std::string& store)
{
    std::lock_guard lock(mutex_);
    for (auto it = awaited_.begin(); it != awaited_.end();) {
        if (it->second.store != store) {
            ++it;
            continue;
        }
        by_age_.erase(it->second.order);
        it = awaited_.erase(it);
    }
}

BlobStreaming::TransferObserver_var NoticeBoard::observer()
{
    std::lock_guard lock(mutex_);
    if (closed_) throw Error(Errc::cancelled, "transfer notices: the session is closing");
    if (!CORBA::is_nil(observer_)) return observer_;  // duplicates
    try {
        CORBA::Object_var obj = orb_->resolve_initial_references("RootPOA");
        poa_ = PortableServer::POA::_narrow(obj);
        PortableServer::POAManager_var manager = poa_->the_POAManager();
        manager->activate();  // as a Watch does: the ORB serves the library's callback objects
        PortableServer::Servant_var<Observer_i> servant = new Observer_i(delivery_);
        oid_ = poa_->activate_object(servant);
        CORBA::Object_var me = poa_->id_to_reference(oid_.in());
        observer_ = BlobStreaming::TransferObserver::_narrow(me);
    } catch (const CORBA::Exception& e) {
        throw Error(Errc::transfer_failed,
                    std::string("transfer notices: cannot serve the notice callback in this process (CORBA ") +
                        e._name() + ")");
    }
    return observer_;
}

void NoticeBoard::close() noexcept
{
    {
        std::lock_guard lock(delivery_->mutex);  // waits for a callback in progress
        delivery_->closed = true;
    }
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    try {
        if (!CORBA::is_nil(poa_) && oid_.operator->() != nullptr) poa_->deactivate_object(oid_.in());
    } catch (const CORBA::Exception& e) {
        library_log()->warn("transfer notices: deactivating the notice callback: CORBA {}", e._name());
    }
    observer_ = BlobStreaming::TransferObserver::_nil();
}

}  // namespace blobstreaming::client
