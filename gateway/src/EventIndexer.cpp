#include "EventIndexer.h"

#include "InstanceStore.h"

#include "dicom/InstanceIdentity.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

#include <unistd.h>

namespace blobstreaming::dicom {

namespace {

/// The first range read of a committed Blob; a header longer than that is
/// read again with the next size, at last whole.
constexpr std::uint64_t kHeaderRanges[] = {64 * 1024, 1024 * 1024};

std::atomic<unsigned long> g_counter{0};

/// The reason of the events a rescan makes.
const std::string kRescan = "rescan";

}  // namespace

EventIndexer::EventIndexer(const GatewayOptions& options, const client::SessionOptions& session_options,
                           client::Session& session, StudyIndex& index, std::function<bool(const std::string&)> storing)
    : options_(options), session_(session), index_(index), session_options_(session_options),
      storing_(std::move(storing))
{
    worker_ = std::thread([this] { run(); });
    try {
        renew();
    } catch (...) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        worker_.join();
        watches_.clear();
        throw;
    }
    sweeper_ = std::thread([this] { sweep(); });
}

EventIndexer::~EventIndexer()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    sweep_wake_.notify_all();
    room_.notify_all();
    sweeper_.join();
    watches_.clear();  // each Watch withdraws its subscription: no callback runs after this
    wake_.notify_all();
    worker_.join();
}

std::vector<std::string> EventIndexer::stores() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [name, watch] : watches_) out.push_back(name);
    return out;
}

void EventIndexer::enqueue(const client::StoreEvent& event, bool wait_for_room)
{
    {
        std::unique_lock<std::mutex> lock(mutex_);
        if (wait_for_room) {
            room_.wait(lock, [this] { return stopping_ || queue_.size() < kMaxQueued / 2; });
            if (stopping_) return;
        } else if (queue_.size() >= kMaxQueued) {
            ++dropped_;
            spdlog::error("index: {} event of Blob {} in store \"{}\" dropped: {} events wait already ({} dropped; "
                          "the next rescan finds it)",
                          client::to_string(event.kind), quote_name(event.blob.name), event.store, queue_.size(),
                          dropped_);
            return;
        }
        queue_.push_back(event);
    }
    wake_.notify_one();
}

void EventIndexer::run()
{
    for (;;) {
        client::StoreEvent event;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (stopping_) return;
            event = std::move(queue_.front());
            queue_.pop_front();
        }
        room_.notify_one();
        try {
            handle(event);
        } catch (const std::exception& e) {
            // A rescan's Blob may go between the list and its read.
            const auto* error = dynamic_cast<const Error*>(&e);
            if (error && error->code() == Errc::no_such_blob && event.reason == kRescan)
                spdlog::debug("index: Blob {} in store \"{}\" is gone since the rescan listed it",
                              quote_name(event.blob.name), event.store);
            else
                spdlog::error("index: Blob {} in store \"{}\" ({} #{}): {}", quote_name(event.blob.name), event.store,
                              client::to_string(event.kind), event.sequence, e.what());
        }
    }
}

void EventIndexer::handle(const client::StoreEvent& event)
{
    if (event.kind == client::StoreEventKind::removed) {
        forget_unindexable(event.store, event.blob.name);
        if (event.reason == kRescan) {
            // The list lacked it; unless it was committed again since, its
            // removal went unseen.
            try {
                session_.stat(event.blob.name, event.store);
                spdlog::debug("index: Blob {} in store \"{}\" is back since the rescan: kept",
                              quote_name(event.blob.name), event.store);
                return;
            } catch (const Error& e) {
                if (e.code() != Errc::no_such_blob) throw;
            }
            log_removal(index_.remove(event.blob.name, event.store), event, "is gone from", " (found by a rescan)");
            return;
        }
        log_removal(index_.remove(event.blob.name, event.store), event, (event.reason + " from").c_str(), "");
        return;
    }
    index_committed(event);
}

void EventIndexer::log_removal(const Removal& removal, const client::StoreEvent& event, const char* how,
                               const char* found)
{
    const std::string left = removal.conflicts_left
                                 ? std::to_string(removal.conflicts_left) + " copies still in conflict"
                                 : "no conflict left";
    if (removal.conflicting) {
        spdlog::info("index: Blob {} {} store \"{}\"{}: its copy of instance {} in conflict with the entry removed "
                     "({}; the entry's copy in store \"{}\")",
                     quote_name(event.blob.name), how, event.store, found, removal.sop, left, removal.still_in);
        return;
    }
    if (removal.restored) {
        spdlog::info("index: Blob {} {} store \"{}\"{}: the last copy of instance {}'s entry removed; the entry now "
                     "holds the data set of Blob {} in store \"{}\" ({})",
                     quote_name(event.blob.name), how, event.store, found, removal.sop,
                     quote_name(removal.restored_blob), removal.still_in, left);
        return;
    }
    if (removal.instances)
        spdlog::info("index: Blob {} {} store \"{}\"{}: {} entry removed", quote_name(event.blob.name), how,
                     event.store, found, removal.instances);
    else if (removal.copies)
        spdlog::info("index: Blob {} {} store \"{}\"{}: its copy removed, the instance stays indexed in store \"{}\"",
                     quote_name(event.blob.name), how, event.store, found, removal.still_in);
}

std::vector<std::string> EventIndexer::renew()
{
    const std::vector<client::StoreStatus> registered = session_.stores();
    std::vector<std::string> answered;
    std::set<std::string> names;
    for (const client::StoreStatus& store : registered) {
        names.insert(store.name);
        if (!store.reachable) {
            spdlog::warn("index: store \"{}\" does not answer ({}): {} at the next rescan", store.name, store.error,
                         stores_watched(store.name) ? "subscribed again" : "watched");
            continue;
        }
        client::WatchOptions only;
        only.stores = {store.name};
        std::unique_ptr<client::Watch> fresh;
        try {
            fresh = std::make_unique<client::Watch>(session_options_, only,
                                                    [this](const client::StoreEvent& e) { enqueue(e); });
        } catch (const Error& e) {
            spdlog::warn("index: store \"{}\" cannot be watched: {}; tried again at the next rescan", store.name,
                         e.what());
            continue;
        }
        std::unique_ptr<client::Watch> old;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            old = std::move(watches_[store.name]);
            watches_[store.name] = std::move(fresh);
        }
        if (!old) spdlog::info("index: watching store \"{}\"", store.name);
        answered.push_back(store.name);
        // `old` withdraws its subscription here, after the new one began: no gap.
    }
    std::vector<std::unique_ptr<client::Watch>> ended;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = watches_.begin(); it != watches_.end();) {
            if (names.count(it->first)) {
                ++it;
                continue;
            }
            spdlog::info("index: store \"{}\" is no longer registered: not watched (its entries are kept)", it->first);
            ended.push_back(std::move(it->second));
            it = watches_.erase(it);
        }
    }
    return answered;
}

bool EventIndexer::stores_watched(const std::string& store) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return watches_.count(store) != 0;
}

void EventIndexer::sweep()
{
    std::vector<std::string> stores = this->stores();
    for (;;) {
        rescan_all(stores);
        std::unique_lock<std::mutex> lock(mutex_);
        if (options_.rescan.count() == 0) {
            sweep_wake_.wait(lock, [this] { return stopping_; });
            return;
        }
        if (sweep_wake_.wait_for(lock, options_.rescan, [this] { return stopping_; })) return;
        lock.unlock();
        try {
            stores = renew();
        } catch (const std::exception& e) {
            spdlog::error("index: rescan: the stores cannot be listed: {}; tried again in {} s", e.what(),
                          std::chrono::duration<double>(options_.rescan).count());
            stores.clear();
        }
    }
}

void EventIndexer::rescan_all(const std::vector<std::string>& stores)
{
    if (stores.empty()) return;
    std::vector<IndexedBlob> indexed;
    try {
        indexed = index_.blobs();  // before the lists: an entry made since is never taken for a Blob gone
    } catch (const std::exception& e) {
        spdlog::error("index: rescan: the index cannot be read: {}", e.what());
        return;
    }
    for (const std::string& store : stores) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (stopping_) return;
        }
        try {
            rescan(store, indexed);
        } catch (const std::exception& e) {
            spdlog::warn("index: rescan of store \"{}\": {}; its entries are kept, tried again at the next rescan",
                         store, e.what());
        }
    }
}

void EventIndexer::rescan(const std::string& store, const std::vector<IndexedBlob>& indexed)
{
    std::map<std::string, std::string> here;  // this store's copies: Blob -> checksum
    for (const IndexedBlob& copy : indexed)
        if (copy.store == store) here.emplace(copy.blob, copy.checksum);
    client::Result listed;
    session_.list(store, client::Mode::Sync, [&listed](const client::Result& r) { listed = r; });
    listed.throw_if_error();
    if (!listed.unreachable.empty()) throw Error(Errc::unreachable, listed.unreachable.front().error);
    std::set<std::string> present;
    std::size_t to_read = 0, to_remove = 0;
    const auto now = std::chrono::system_clock::now();
    auto queue = [&](client::StoreEventKind kind, const BlobInfo& blob) {
        client::StoreEvent event;
        event.store = store;
        event.kind = kind;
        event.reason = kRescan;
        event.time = now;
        event.blob = blob;
        enqueue(event, true);
    };
    for (const client::StoredBlob& blob : listed.blobs) {
        present.insert(blob.info.name);
        const std::string checksum = blob.info.checksum.text();
        // Indexed as it is, or read before and not indexable.
        const auto copy = here.find(blob.info.name);
        if ((copy != here.end() && copy->second == checksum) || unindexable(store, blob.info.name, checksum)) continue;
        queue(client::StoreEventKind::committed, blob.info);
        ++to_read;
    }
    for (const auto& [name, checksum] : here) {
        if (present.count(name)) continue;
        BlobInfo gone;
        gone.name = name;
        queue(client::StoreEventKind::removed, gone);
        ++to_remove;
    }
    if (to_read || to_remove)
        spdlog::info("index: rescan of store \"{}\": {} Blobs listed, {} to read, {} entries whose Blob is not "
                     "listed",
                     store, listed.blobs.size(), to_read, to_remove);
    else spdlog::info("index: rescan of store \"{}\": {} Blobs listed, the index agrees", store, listed.blobs.size());
}

bool EventIndexer::unindexable(const std::string& store, const std::string& blob, const std::string& checksum) const
{
    std::lock_guard<std::mutex> lock(mutex_);
    const auto s = unindexable_.find(store);
    if (s == unindexable_.end()) return false;
    const auto b = s->second.find(blob);
    return b != s->second.end() && b->second == checksum;
}

void EventIndexer::remember_unindexable(const std::string& store, const std::string& blob, const std::string& checksum)
{
    std::lock_guard<std::mutex> lock(mutex_);
    unindexable_[store][blob] = checksum;
}

void EventIndexer::forget_unindexable(const std::string& store, const std::string& blob)
{
    std::lock_guard<std::mutex> lock(mutex_);
    const auto s = unindexable_.find(store);
    if (s != unindexable_.end()) s->second.erase(blob);
}

void EventIndexer::index_committed(const client::StoreEvent& event)
{
    const BlobInfo& blob = event.blob;
    const std::string checksum = blob.checksum.text();
    const std::string what = "index: Blob " + quote_name(blob.name) + " in store \"" + event.store + "\"";
    // The gateway's own commits first: no query while it is storing.
    if ((event.store == options_.store && storing_(blob.name)) || index_.has(blob.name, event.store, checksum)) {
        spdlog::debug("{}: indexed already, or by the gateway that is storing it", what);
        return;
    }
    forget_unindexable(event.store, blob.name);
    // A copy between stores: the same Blob and checksum are indexed in another store.
    bool conflicting = false;
    if (const std::string sop = index_.add_copy(blob.name, event.store, blob.size, checksum, &conflicting);
        !sop.empty()) {
        if (conflicting)
            spdlog::warn("index: instance {}: Blob {} in store \"{}\" indexed as one more copy of a data set in "
                         "conflict with the instance's entry (the same Blob and checksum are indexed in another "
                         "store; not read): the instance stays flagged as a conflict",
                         sop, quote_name(blob.name), event.store);
        else
            spdlog::info("index: instance {}: Blob {} in store \"{}\" indexed as one more copy (the same Blob and "
                         "checksum are indexed in another store; not read)",
                         sop, quote_name(blob.name), event.store);
        return;
    }
    // The Blob replaced another: whatever it was, its entry goes.
    const bool stale = index_.remove(blob.name, event.store).copies != 0;
    if (blob.size < 132) {
        spdlog::debug("{}: {} bytes, not DICOM: not indexed", what, blob.size);
        remember_unindexable(event.store, blob.name, checksum);
        return;
    }
    const std::string path = options_.spool + "/blob-dicomd-index-" + std::to_string(::getpid()) + "-" +
                             std::to_string(++g_counter) + ".dcm";
    struct Spool {
        std::string path;
        ~Spool() { std::remove(path.c_str()); }
    } spool{path};
    InstanceRecord record;
    std::string problem, undecodable, data_set;
    std::uint64_t read = 0;
    for (std::size_t attempt = 0;; ++attempt) {
        const std::uint64_t length =
            attempt < std::size(kHeaderRanges) ? std::min(blob.size, kHeaderRanges[attempt]) : blob.size;
        client::PullOptions pull;
        pull.store = event.store;
        pull.length = length;
        pull.verify = false;  // a range has no checksum; the store verified the Blob at commit
        const std::vector<std::uint8_t> bytes = session_.pull_memory(blob.name, pull);
        read = bytes.size();
        if (attempt == 0 && (bytes.size() < 132 || std::memcmp(bytes.data() + 128, "DICM", 4) != 0)) {
            spdlog::debug("{}: no DICM at byte 128, not DICOM: not indexed{}", what,
                          stale ? " (the entry of the Blob it replaced removed)" : "");
            remember_unindexable(event.store, blob.name, checksum);
            return;
        }
        // The data set's checksum from the Blob's and the meta header's
        // bytes (in the first range): the pixels are never read.
        if (attempt == 0) data_set = data_set_checksum(blob.checksum, blob.size, bytes.data(), bytes.size());
        {
            std::ofstream out(path, std::ios::binary | std::ios::trunc);
            out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
            if (!out.flush()) throw Error(Errc::io_error, "cannot write " + path);
        }
        record.values.clear();
        problem = read_header(path, record.values, true, nullptr, &undecodable);
        if (problem.empty() || length >= blob.size) break;
    }
    const std::string uid = printable(record.values["SOPInstanceUID"]);
    if (uid.empty()) {
        spdlog::warn("{}: a DICOM object without a SOP Instance UID: not indexed{}", what,
                     problem.empty() ? "" : " (" + problem + ")");
        remember_unindexable(event.store, blob.name, checksum);
        return;
    }
    if (const std::string bad = invalid_uid(record.values); !bad.empty()) {
        spdlog::warn("{}: not indexed: {}", what, bad);
        remember_unindexable(event.store, blob.name, checksum);
        return;
    }
    record.blob = blob.name;
    record.store = event.store;
    record.size = blob.size;
    record.checksum = checksum;
    record.problem = problem;
    record.data_set_checksum = data_set;
    if (!undecodable.empty())
        spdlog::warn("index: instance {} from Blob {} in store \"{}\": {}", uid, quote_name(blob.name), event.store,
                     undecodable);
    if (const std::string conflict = index_.put(record); !conflict.empty()) {
        spdlog::warn("index: {}", conflict);
        return;
    }
    if (problem.empty())
        spdlog::info("index: instance {} indexed from Blob {} in store \"{}\" (header: {} of {} bytes read)", uid,
                     quote_name(blob.name), event.store, read, blob.size);
    else
        spdlog::warn("index: instance {} indexed from Blob {} in store \"{}\" as far as its header parses: {}", uid,
                     quote_name(blob.name), event.store, printable(problem));
}

}  // namespace blobstreaming::dicom
