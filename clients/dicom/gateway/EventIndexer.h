#pragma once
/// The index of every DICOM Blob, whoever stored it (docs/DICOM.md,
/// "Indexing what others store"): blob-dicomd --index watches the stores'
/// events (client::Watch). A committed Blob is read only as far as its
/// header (a range pull of its first bytes, more only when the header is
/// longer) and indexed when it is DICOM ("DICM" at byte 128); a removed
/// one leaves the index. The events are queued (bounded: beyond it they are
/// dropped, counted and logged) and handled on one thread of its own, so
/// the Watch's callback never waits for a pull.

#include "../StudyIndex.h"
#include "GatewayOptions.h"

#include <blobstreaming/client/Session.h>
#include <blobstreaming/client/Watch.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace blobstreaming::dicom {

class EventIndexer {
public:
    /// Subscribes to every store registered now. Throws Error as
    /// client::Watch does.
    /// `storing(name)`: whether the gateway itself is storing Blob `name`
    /// of --store (and will index it): its commit is then not read.
    EventIndexer(const GatewayOptions& options, const client::SessionOptions& session_options, client::Session& session,
                 StudyIndex& index, std::function<bool(const std::string&)> storing);
    /// Withdraws the subscriptions, drops what is queued, joins the thread.
    ~EventIndexer();
    EventIndexer(const EventIndexer&) = delete;
    EventIndexer& operator=(const EventIndexer&) = delete;

    /// The stores watched, for the ready line.
    std::vector<std::string> stores() const;

    /// The most events waiting to be indexed.
    static constexpr std::size_t kMaxQueued = 100000;

private:
    void enqueue(const client::StoreEvent& event);
    void run();
    void handle(const client::StoreEvent& event);
    void index_committed(const client::StoreEvent& event);

    const GatewayOptions& options_;
    client::Session& session_;
    StudyIndex& index_;
    std::function<bool(const std::string&)> storing_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<client::StoreEvent> queue_;
    bool stopping_ = false;
    std::uint64_t dropped_ = 0;
    std::thread worker_;
    std::unique_ptr<client::Watch> watch_;
};

}  // namespace blobstreaming::dicom
