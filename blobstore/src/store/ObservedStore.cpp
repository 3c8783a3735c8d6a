/// ObservedStore (ObservedStore.h): every commit and removal of a store,
/// numbered and handed to a listener.
#include <blobstreaming/blobstore/ObservedStore.h>

#include <blobstreaming/common/Error.h>

namespace blobstreaming {

const char* to_string(StoreEvent::Kind kind) noexcept
{
    return kind == StoreEvent::Kind::committed ? "committed" : "removed";
}

const char* to_string(StoreEvent::Reason reason) noexcept
{
    switch (reason) {
    case StoreEvent::Reason::created: return "created";
    case StoreEvent::Reason::replaced: return "replaced";
    case StoreEvent::Reason::removed: return "removed";
    case StoreEvent::Reason::evicted: return "evicted";
    }
    return "?";
}

class ObservedStore::Publisher {
public:
    explicit Publisher(std::shared_ptr<StoreListener> listener) : listener_(std::move(listener)) {}

    void publish(StoreEvent::Kind kind, StoreEvent::Reason reason, const BlobInfo& blob) noexcept
    {
        StoreEvent event;
        event.kind = kind;
        event.reason = reason;
        event.time = std::chrono::system_clock::now();
        try {
            event.blob = blob;
        } catch (...) {
            return;  // out of memory: the event is lost, the store goes on
        }
        // Numbered and handed over under one lock: listeners see the order.
        std::lock_guard lock(mutex_);
        event.sequence = ++last_;
        if (listener_) listener_->published(event);
    }

    std::uint64_t last() const
    {
        std::lock_guard lock(mutex_);
        return last_;
    }

private:
    const std::shared_ptr<StoreListener> listener_;
    mutable std::mutex mutex_;
    std::uint64_t last_ = 0;
};

ObservedStore::ObservedStore(std::unique_ptr<Store> inner, std::shared_ptr<StoreListener> listener)
    : inner_(std::move(inner)), publisher_(std::make_shared<Publisher>(std::move(listener)))
{}

std::unique_ptr<Reservation> ObservedStore::reserve(std::string_view name, std::uint64_t size, ReserveMode mode,
                                                    ChecksumAlgorithm checksum)
{
    // Whether it replaces is known now: after the commit the old Blob is gone.
    const bool replaces = mode == ReserveMode::replace && inner_->contains(name);
    auto reservation = inner_->reserve(name, size, mode, checksum);
    reservation->on_commit([publisher = publisher_, replaces](const BlobInfo& info) {
        publisher->publish(StoreEvent::Kind::committed,
                           replaces ? StoreEvent::Reason::replaced : StoreEvent::Reason::created, info);
    });
    return reservation;
}

std::vector<Store::Kept> ObservedStore::take_kept()
{
    std::vector<Kept> kept = inner_->take_kept();
    for (Kept& k : kept) {
        const bool replaces = inner_->contains(k.reservation->name());
        k.reservation->on_commit([publisher = publisher_, replaces](const BlobInfo& info) {
            publisher->publish(StoreEvent::Kind::committed,
                               replaces ? StoreEvent::Reason::replaced : StoreEvent::Reason::created, info);
        });
    }
    return kept;
}

BlobInfo ObservedStore::removing(std::string_view name, bool evicting)
{
    // What the store removed, as it says: a stat() before would be a second
    // look that another removal can race with (and a FileStore's stat()
    // drops a Blob whose file vanished, so that remove() could no longer
    // say so).
    BlobInfo was = evicting ? inner_->evict(name) : inner_->remove(name);
    publisher_->publish(StoreEvent::Kind::removed, evicting ? StoreEvent::Reason::evicted : StoreEvent::Reason::removed,
                        was);
    return was;
}

BlobInfo ObservedStore::remove(std::string_view name) { return removing(name, false); }

BlobInfo ObservedStore::evict(std::string_view name) { return removing(name, true); }

std::uint64_t ObservedStore::last_sequence() const { return publisher_->last(); }

}  // namespace blobstreaming
