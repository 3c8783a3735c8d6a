#pragma once
/// The index of every DICOM Blob, whoever stored it (docs/DICOM.md,
/// "Indexing what others store"): blob-dicomd --index watches the stores'
/// events (client::Watch). A committed Blob is read only as far as its
/// header (a range pull of its first bytes, more only when the header is
/// longer) and indexed when it is DICOM ("DICM" at byte 128); a removed
/// one leaves the index. The events are queued (bounded: beyond it they are
/// dropped, counted and logged) and handled on one thread of its own, so
/// the Watch's callback never waits for a pull.
///
/// Events are best effort (a full queue drops them; a restarted store
/// forgets its subscribers; nothing is sent to a gateway that is down), so
/// a rescan makes the index whole: at start and then every --rescan, a
/// thread of its own subscribes to each registered store again (first the
/// new subscription, then the old one withdrawn: no gap; stores registered
/// since are watched from then on), lists its Blobs and compares them with
/// the index. A Blob whose name and checksum no entry records is read as a
/// committed one would be (those found not DICOM are remembered, and not
/// read again while unchanged); an entry of a store whose Blob the list
/// lacks is removed once the store confirms the Blob is gone. A store that
/// does not answer keeps its entries and is tried again at the next rescan.

#include "dicom/StudyIndex.h"
#include "GatewayOptions.h"

#include <blobstreaming/client/Session.h>
#include <blobstreaming/client/Watch.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace blobstreaming::dicom {

class EventIndexer {
public:
    /// Subscribes to every store registered now that answers (a store that
    /// does not is logged and tried again at the next rescan), then starts
    /// the first rescan. Throws Error when the Naming Service cannot be
    /// reached.
    /// `storing(name)`: whether the gateway itself is storing Blob `name`
    /// of --store (and will index it): its commit is then not read.
    EventIndexer(const GatewayOptions& options, const client::SessionOptions& session_options, client::Session& session,
                 StudyIndex& index, std::function<bool(const std::string&)> storing);
    /// Withdraws the subscriptions, drops what is queued, joins the thread.
    ~EventIndexer();
    EventIndexer(const EventIndexer&) = delete;
    EventIndexer& operator=(const EventIndexer&) = delete;

    /// The stores watched, sorted (the ready line).
    std::vector<std::string> stores() const;

    /// The most events waiting to be indexed.
    static constexpr std::size_t kMaxQueued = 100000;

private:
    /// `wait_for_room`: a rescan's own events wait while half the queue is
    /// taken (the stores' events never wait: beyond the bound they drop).
    void enqueue(const client::StoreEvent& event, bool wait_for_room = false);
    void run();
    void handle(const client::StoreEvent& event);
    void index_committed(const client::StoreEvent& event);
    /// `how`: "removed from", "is gone from"...; `found`: "" or why it was found.
    static void log_removal(const Removal& removal, const client::StoreEvent& event, const char* how,
                            const char* found);
    /// Subscribes to each registered store again (watches_), returns those
    /// that answered.
    std::vector<std::string> renew();
    bool stores_watched(const std::string& store) const;
    /// At start, then every --rescan: renew(), rescan_all().
    void sweep();
    void rescan_all(const std::vector<std::string>& stores);
    /// Compares `store`'s Blobs with the index's copies (`indexed`) and
    /// queues what differs.
    void rescan(const std::string& store, const std::vector<IndexedBlob>& indexed);
    /// Blobs read and found not indexable (not DICOM, no SOP Instance UID):
    /// a rescan does not read them again while their checksum is the same.
    bool unindexable(const std::string& store, const std::string& blob, const std::string& checksum) const;
    void remember_unindexable(const std::string& store, const std::string& blob, const std::string& checksum);
    void forget_unindexable(const std::string& store, const std::string& blob);

    const GatewayOptions& options_;
    client::Session& session_;
    StudyIndex& index_;
    client::SessionOptions session_options_;
    std::function<bool(const std::string&)> storing_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable room_;  ///< a rescan waits for room in the queue
    std::condition_variable sweep_wake_;
    std::deque<client::StoreEvent> queue_;
    bool stopping_ = false;
    std::uint64_t dropped_ = 0;
    /// store -> Blob -> checksum (unindexable()).
    std::map<std::string, std::map<std::string, std::string>> unindexable_;
    std::thread worker_;
    std::thread sweeper_;
    /// store -> its subscription; only the sweeper changes it after start.
    std::map<std::string, std::unique_ptr<client::Watch>> watches_;
};

}  // namespace blobstreaming::dicom
