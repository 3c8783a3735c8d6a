#pragma once
/// Store events (committed, removed) as they happen: a Watch subscribes to
/// stores (BlobStore::subscribe) and calls the application back per event.
///
/// Delivery is best effort and never slows a transfer: each store keeps a
/// bounded queue per subscription and drops what does not fit (counted and
/// logged by the store); `sequence` shows the gaps when every kind is
/// watched (it counts the store's events of every kind). A subscriber that
/// does not accept an event within the store's call timeout (2 s: a
/// process stopped long enough for its socket to fill up, or gone) has its
/// subscription ended by the store, which logs it; a watch is not told, and
/// a restarted daemon (a new `epoch_ns`) knows nothing of earlier
/// subscriptions: watch again.
///
/// To receive calls, the process's ORB (shared by every Session, OrbHandle)
/// serves requests from the stores: a Watch activates its root POA. The
/// stores connect back to SessionOptions::callback_address (by default
/// 127.0.0.1 when the Naming Service is on loopback, else this host's name).

#include <blobstreaming/client/Options.h>
#include <blobstreaming/common/BlobInfo.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace blobstreaming::client {

/// study_stable: a DICOM gateway's (blob-dicomd with --index), not a
/// store's: a study of its index with no new instance for its
/// --stable-after (docs/DICOM.md "study-stable").
enum class StoreEventKind { committed, removed, study_stable };

/// "committed", "removed", "study-stable".
const char* to_string(StoreEventKind kind) noexcept;
/// The kind named `text`; nullopt when it names none.
std::optional<StoreEventKind> event_kind_of(std::string_view text) noexcept;

/// What a study_stable event says of its study (the gateway's index when
/// it was published).
struct StableStudy {
    std::string gateway;  ///< its AE title
    std::string study_instance_uid;
    std::string patient_id;
    std::string accession_number;
    std::uint32_t series = 0;
    std::uint32_t instances = 0;
    std::vector<std::string> stores;                      ///< holding its instances, sorted
    std::chrono::system_clock::time_point last_instance;  ///< when its last instance was indexed
};

struct StoreEvent {
    /// The store (study_stable: the gateway's AE title).
    std::string store;
    StoreEventKind kind = StoreEventKind::committed;
    /// committed: "created" or "replaced" (the Blob it replaced gets no
    /// `removed`); removed: "removed" (a client's remove) or "evicted"
    /// (blobstored --evict made room for another Blob).
    std::string reason;
    /// 1 for the store's first event since its daemon started, one more for
    /// each event of any kind.
    std::uint64_t sequence = 0;
    std::uint64_t epoch_ns = 0;                  ///< the daemon's start (ns since the Unix epoch): identifies the count
    std::chrono::system_clock::time_point time;  ///< when the store committed or removed
    /// committed: as committed; removed: as it was (only the name when the
    /// store could not say).
    BlobInfo blob;
    /// study_stable only (`sequence`, `epoch_ns` and `time` are then the
    /// gateway's; `reason` is "quiet").
    StableStudy study;
};

struct WatchOptions {
    /// The stores to watch; empty: every store registered in the Naming
    /// Service when the Watch is made (stores registered later are not
    /// watched: make another Watch).
    std::vector<std::string> stores;
    /// The kinds to receive; empty: committed and removed.
    std::vector<StoreEventKind> kinds;
    /// With study_stable: the gateways (AE titles) to watch; empty: every
    /// gateway registered in the Naming Service (BlobStreaming/Gateways)
    /// when the Watch is made, at least one.
    std::vector<std::string> gateways;
};

class Watch {
public:
    /// Called once per event. Calls never overlap (one at a time, across
    /// every store of the Watch); events of one store come in sequence
    /// order. Runs on one of the ORB's threads: keep it short, do not make
    /// the Watch's own calls from it (close() or the destructor would wait
    /// for it), and do not throw (what it throws is logged and dropped).
    using Callback = std::function<void(const StoreEvent&)>;

    /// Subscribes to every store (and gateway) of `options` before
    /// returning. Throws Error: Errc::unreachable (the Naming Service or a
    /// store or gateway does not answer), Errc::unknown_store naming the
    /// registered ones (also: no gateway registered), Errc::refused
    /// (the store's access list), Errc::limit_reached (the store's
    /// subscriptions). Subscriptions made before a failure are withdrawn.
    Watch(const SessionOptions& session, WatchOptions options, Callback on_event);
    /// close()
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

    /// The stores watched, sorted.
    std::vector<std::string> stores() const;
    /// The gateways watched (study_stable), sorted.
    std::vector<std::string> gateways() const;

    /// Withdraws every subscription (a store that does not answer is
    /// skipped: its subscription ends at its next failed delivery) and
    /// returns once no callback runs nor will. Idempotent; not from the
    /// callback.
    void close() noexcept;

    class Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace blobstreaming::client
