#include "Retrieval.h"

#include "dicom/InstanceIdentity.h"
#include "dicom/NearestCopy.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Host.h>

#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcistrmb.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

namespace blobstreaming::dicom {

namespace {

/// Instances pulled at once (a series per store over the Session's pooled
/// connections) while the batch before them is sent.
constexpr std::size_t kBatch = 16;
/// The first batch is smaller: the first sub-operation waits for all of it
/// (the next batch is pulled meanwhile).
constexpr std::size_t kFirstBatch = 4;
/// Served in place (Retrieval::in_place()), a batch holds no memory: the
/// next ones are larger, each one control call to a store for the files of
/// all its instances (BlobStore::findLocalFiles).
constexpr std::size_t kInPlaceBatch = 32;
/// Pulled into memory rather than a spool file: instances up to this size,
/// as long as the batch's total stays within kBatchMemory.
constexpr std::uint64_t kInMemory = 8u << 20;
constexpr std::uint64_t kBatchMemory = 16u << 20;
constexpr std::size_t kMetaSlack = 64u << 10;
/// Every pull verifies the whole Blob against its version's checksum (the
/// identity checks rely on it: IdentityChecks).
const client::PullOptions kPullOptions = [] {
    client::PullOptions o;
    o.verify = true;
    return o;
}();
/// Batches pulled ahead of the one being sent: two series in flight keep
/// the stores' round trips off the sender's path.
constexpr std::size_t kAhead = 2;
/// The stores' statuses (one call to the Naming Service and one to each
/// store) are reused by the batches for this long.
constexpr std::chrono::seconds kStoresFresh{5};

/// What the header of the object in `bytes` says against `expected`
/// (delivered_mismatch()): its first 16 KiB are parsed, then its first
/// 256 KiB, then the whole object, until the attributes are all found, each
/// pass up to the Pixel Data's tag (an image's header is a few KiB).
std::string header_mismatch(const std::uint8_t* bytes, std::size_t size,
                            const std::map<std::string, std::string>& expected)
{
    if (data_set_offset(bytes, size) == 0)
        return "the object delivered is not a DICOM file (no DICM at byte 128 and meta group)";
    std::string mismatch;
    for (const std::size_t head : {std::size_t{16} << 10, std::size_t{256} << 10, size}) {
        const bool whole = head >= size;
        DcmFileFormat object;
        DcmInputBufferStream stream;
        stream.setBuffer(bytes, static_cast<offile_off_t>(whole ? size : head));
        if (whole) stream.setEos();
        object.transferInit();
        // The attributes checked all come before the Pixel Data: the parse
        // stops at its tag, none of its value copied.
        const OFCondition read =
            object.readUntilTag(stream, EXS_Unknown, EGL_noChange, DCM_MaxReadLength, DCM_PixelData);
        object.transferEnd();
        // A head cut short ends with "more data needed": what it held is read
        // (any other error there: the next, longer pass decides).
        if (read.bad() && whole) return std::string("the object delivered does not parse: ") + read.text();
        if (read.bad() && read != EC_StreamNotifyClient) continue;
        mismatch = delivered_mismatch(*object.getDataset(), expected);
        if (mismatch.empty() || whole) break;
    }
    return mismatch;
}

/// The instances found to be what the index lists (header_mismatch()
/// empty), by their Blob's name and version and the attributes the index
/// listed: the check is a function of the bytes, and a pull that verified
/// the whole Blob against the version's checksum delivered the same bytes
/// that were checked when that version was first served. Bounded (emptied
/// when full); any thread.
class IdentityChecks {
public:
    static constexpr std::size_t kMax = 65536;

    /// The key of a whole-Blob pull of `result` (pulled with
    /// PullOptions::verify: its bytes matched the version's checksum) whose
    /// index row says `expected`; "" when it was not a whole-Blob pull.
    static std::string key(const client::Result& result, const std::map<std::string, std::string>& expected)
    {
        const BlobInfo& info = result.info;
        if (!result.ok() || result.offset != 0 || result.length != info.size) return {};
        std::string k = info.name + '\n' + std::to_string(info.size) + '\n' + info.checksum.text() + '\n' +
                        std::to_string(info.committed.time_since_epoch().count());
        for (const auto& [column, value] : expected) k += '\n' + column + '=' + value;
        return k;
    }
    bool known(const std::string& key) const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return !key.empty() && matched_.count(key) > 0;
    }
    void add(const std::string& key)
    {
        if (key.empty()) return;
        std::lock_guard<std::mutex> lock(mutex_);
        if (matched_.size() >= kMax) matched_.clear();
        matched_.insert(key);
    }

private:
    mutable std::mutex mutex_;
    std::unordered_set<std::string> matched_;
};

IdentityChecks& identity_checks()
{
    static IdentityChecks checks;
    return checks;
}

}  // namespace

std::string column_of(const IndexRow& row, const char* column)
{
    for (const auto& [c, v] : row)
        if (c == column) return v;
    return {};
}

/// Buffers of the instances pulled into memory, kept for the next batches.
struct Retrieval::Buffers {
    struct Buffer {
        std::unique_ptr<std::uint8_t[]> data;
        std::size_t capacity = 0;
    };
    std::mutex mutex;
    std::vector<Buffer> free;

    /// A buffer of at least `size` bytes (uninitialised).
    Buffer take(std::size_t size)
    {
        {
            std::lock_guard<std::mutex> lock(mutex);
            for (auto it = free.begin(); it != free.end(); ++it) {
                if (it->capacity < size) continue;
                Buffer b = std::move(*it);
                free.erase(it);
                return b;
            }
        }
        const std::size_t capacity = (size + (1u << 20) - 1) & ~std::size_t((1u << 20) - 1);  // whole MiB
        return {std::unique_ptr<std::uint8_t[]>(new std::uint8_t[capacity]), capacity};
    }
    void give(Buffer b)
    {
        if (!b.data) return;
        std::lock_guard<std::mutex> lock(mutex);
        free.push_back(std::move(b));
    }
};

struct Retrieval::Batch {
    std::size_t begin = 0;
    std::size_t end = 0;
    std::map<std::size_t, std::size_t> slot;  ///< item -> its place in `to_pull`
    std::vector<InstanceToPull> to_pull;
    std::vector<PulledInstance> pulled;
    /// The buffers of those pulled into memory, by their place in `to_pull`.
    std::map<std::size_t, Buffers::Buffer> memory;
    /// Those served in place (Retrieval::in_place()), by their place in `to_pull`.
    std::vector<std::shared_ptr<const client::InPlaceBlob>> in_place;

    /// Done with the instance at `place` in `to_pull`: its buffer back to
    /// `buffers`, or its spool file removed (none when it was served in
    /// place: nothing of its fallback is written then); its store's file
    /// closed.
    void release(std::size_t place, Buffers& buffers)
    {
        const bool served_in_place = place < in_place.size() && in_place[place];
        if (place < in_place.size()) in_place[place].reset();
        if (const auto m = memory.find(place); m != memory.end()) {
            buffers.give(std::move(m->second));
            memory.erase(m);
        } else if (!served_in_place) {
            std::remove(to_pull[place].path.c_str());
        }
    }
    /// Releases the instances from `from` on (not sent).
    void discard(std::size_t from, Buffers& buffers)
    {
        for (std::size_t i = std::max(from, begin); i < end; ++i)
            if (const auto s = slot.find(i); s != slot.end()) release(s->second, buffers);
    }
};

/// The batches asked for and not yet sent, in order; the stores' statuses;
/// the threads that pull them: started as batches are asked for, at most
/// kAhead (as many as can be in flight), each pulling batch after batch
/// until the retrieval ends, not one thread per batch.
struct Retrieval::Pending {
    std::deque<std::future<Batch>> next;
    std::size_t queued = 0;  ///< the first item not yet asked for
    std::mutex stores_mutex;
    std::optional<std::map<std::string, client::StoreStatus>> stores;
    std::chrono::steady_clock::time_point stores_at;

    /// Runs `pull` on a worker; its batch (or exception) in the future.
    std::future<Batch> submit(std::function<Batch()> pull)
    {
        std::packaged_task<Batch()> task(std::move(pull));
        std::future<Batch> out = task.get_future();
        std::lock_guard<std::mutex> lock(work_mutex);
        tasks.push_back(std::move(task));
        if (idle < tasks.size() && workers.size() < kAhead) {
            workers.emplace_back([this] { work(); });
        } else {
            work_ready.notify_one();
        }
        return out;
    }
    /// The workers ended (every batch submitted has been taken by then:
    /// ~Retrieval waits for each future first).
    ~Pending()
    {
        {
            std::lock_guard<std::mutex> lock(work_mutex);
            ending = true;
        }
        work_ready.notify_all();
        for (std::thread& t : workers) t.join();
    }

private:
    void work()
    {
        std::unique_lock<std::mutex> lock(work_mutex);
        for (;;) {
            ++idle;
            work_ready.wait(lock, [this] { return ending || !tasks.empty(); });
            --idle;
            if (tasks.empty()) return;  // ending
            std::packaged_task<Batch()> task = std::move(tasks.front());
            tasks.pop_front();
            lock.unlock();
            task();  // an exception goes to its future
            lock.lock();
        }
    }

    std::mutex work_mutex;
    std::condition_variable work_ready;
    std::deque<std::packaged_task<Batch()>> tasks;
    std::vector<std::thread> workers;
    std::size_t idle = 0;
    bool ending = false;
};

Retrieval::Retrieval(StudyIndex& index, client::Session& session, const IndexQuery& query, std::string operation,
                     std::function<std::string()> spool_path)
    : index_(index), session_(session), operation_(std::move(operation)), spool_path_(std::move(spool_path)),
      buffers_(std::make_unique<Buffers>()), pending_(std::make_unique<Pending>())
{
    std::vector<IndexRow> rows;
    std::map<std::string, std::string> conflicts;
    try {
        rows = index_.find(Level::instance, query.matches);
        for (const Conflict& c : index_.conflicts(query.matches)) conflicts[c.sop] = c.text();
    } catch (const Error& e) {
        throw RetrievalRefused(0xC000, e.what());
    }
    const char* conflict = "conflict: another data set under its SOP Instance UID";
    for (IndexRow& row : rows) {
        Item item{column_of(row, "SOPInstanceUID"), std::move(row), {}, {}};
        if (const auto c = conflicts.find(item.sop); c != conflicts.end()) {
            item.refused = c->second;
            item.comment = conflict;
            conflicts.erase(c);
        } else if (!valid_uid(item.sop)) {
            item.refused = "the index holds an invalid SOP Instance UID \"" + escaped(item.sop) + "\"";
            item.comment = "invalid SOP Instance UID in the index";
        }
        items_.push_back(std::move(item));
    }
    for (const auto& [sop, text] : conflicts) items_.push_back({sop, {}, text, conflict});
}

Retrieval::~Retrieval()
{
    // Pulled and never sent (prefetch() without run(), or run() stopped):
    // the buffers back, the spool files removed.
    for (std::future<Batch>& f : pending_->next) {
        try {
            f.get().discard(0, *buffers_);
        } catch (const std::exception& e) {
            spdlog::warn("{}: a batch pulled ahead: {}", operation_, e.what());
        }
    }
}

void Retrieval::prefetch()
{
    Pending& p = *pending_;
    while (p.next.size() < kAhead && p.queued < items_.size()) {
        const std::size_t begin = p.queued;
        const std::size_t end =
            std::min(items_.size(), begin + (begin == 0 ? kFirstBatch : in_place_ ? kInPlaceBatch : kBatch));
        p.next.push_back(p.submit([this, begin, end] { return pull(begin, end); }));
        p.queued = end;
    }
}

std::map<std::string, client::StoreStatus> Retrieval::stores()
{
    Pending& p = *pending_;
    std::lock_guard<std::mutex> lock(p.stores_mutex);
    const auto now = std::chrono::steady_clock::now();
    if (!p.stores || now - p.stores_at > kStoresFresh) {
        p.stores = store_statuses(session_);
        p.stores_at = now;
    }
    return *p.stores;
}

std::set<std::pair<std::string, std::string>> Retrieval::presentations() const
{
    std::set<std::pair<std::string, std::string>> out;
    for (const Item& item : items_)
        if (item.refused.empty())
            out.emplace(column_of(item.row, "SOPClassUID"), column_of(item.row, "TransferSyntaxUID"));
    return out;
}

std::vector<std::pair<std::string, std::string>> Retrieval::refused() const
{
    std::vector<std::pair<std::string, std::string>> out;
    for (const Item& item : items_)
        if (!item.refused.empty()) out.emplace_back(item.sop, item.comment.empty() ? item.refused : item.comment);
    return out;
}

Retrieval::Batch Retrieval::pull(std::size_t begin, std::size_t end)
{
    Batch batch;
    batch.begin = begin;
    batch.end = end;
    std::vector<std::string> sops;
    for (std::size_t i = begin; i < end; ++i)
        if (items_[i].refused.empty()) sops.push_back(items_[i].sop);
    std::map<std::string, std::vector<IndexedBlob>> copies;
    try {
        copies = index_.copies_of(sops);
    } catch (const Error& e) {
        spdlog::warn("{}: the copies of {} instances: {}; from the stores the index names", operation_, sops.size(),
                     e.what());
    }
    // Each instance from its nearest copy (a study precached to a
    // workstation store is read there), the next copy when that store fails
    // it; the stores' tiers asked at most every kStoresFresh.
    const std::map<std::string, client::StoreStatus> stores = this->stores();
    std::uint64_t in_memory = 0;
    for (std::size_t i = begin; i < end; ++i) {
        if (!items_[i].refused.empty()) continue;
        const IndexRow& row = items_[i].row;
        batch.slot[i] = batch.to_pull.size();
        batch.to_pull.push_back({items_[i].sop,
                                 nearest_first(std::move(copies[items_[i].sop]),
                                               {column_of(row, "blob"), column_of(row, "store"), ""}, stores),
                                 {},
                                 nullptr});
        std::uint64_t size = 0;
        try {
            size = std::stoull(column_of(row, "size"));
        } catch (const std::exception&) {
            size = kInMemory + 1;  // not known: a file
        }
        // Served in place (Retrieval::in_place()) when its nearest copy is in
        // a store of this host that offers its files: no buffer taken for
        // it; should the store's file not serve it after all (another
        // version by then, unreadable), it is pulled into a spool file.
        const std::vector<IndexedBlob>& nearest = batch.to_pull.back().copies;
        const auto store = nearest.empty() ? stores.end() : stores.find(nearest.front().store);
        const bool local =
            in_place_ && store != stores.end() && store->second.local_files && on_this_host(store->second.host);
        if (!local && size <= kInMemory && in_memory + size <= kBatchMemory) {
            in_memory += size;
            // The entry's size; another copy's meta header may be longer
            // (the gateway writes its own): room for that too.
            Buffers::Buffer buffer = buffers_->take(static_cast<std::size_t>(size) + kMetaSlack);
            batch.to_pull.back().buffer = buffer.data.get();
            batch.to_pull.back().capacity = buffer.capacity;
            batch.memory.emplace(batch.to_pull.size() - 1, std::move(buffer));
        } else {
            batch.to_pull.back().path = spool_path_();
        }
    }
    if (in_place_) {
        batch.in_place.resize(batch.to_pull.size());
        for (std::size_t k = 0; k < batch.to_pull.size(); ++k) batch.to_pull[k].place = &batch.in_place[k];
    }
    batch.pulled = pull_from_copies(session_, batch.to_pull, kPullOptions);
    return batch;
}

RetrievalCounts Retrieval::run(const Send& send, const After& after)
{
    RetrievalCounts counts;
    counts.remaining = items_.size();
    // kAhead batches pulled while one is sent.
    std::deque<std::future<Batch>>& next = pending_->next;
    prefetch();
    while (!next.empty()) {
        const auto asked = std::chrono::steady_clock::now();
        Batch batch = next.front().get();
        waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
        next.pop_front();
        prefetch();
        for (std::size_t i = batch.begin; i < batch.end; ++i) {
            const Item& item = items_[i];
            SubOutcome outcome{SubStatus::failed, item.refused, item.comment};
            if (item.refused.empty()) {
                const IndexRow& row = item.row;
                const InstanceToPull& to_pull = batch.to_pull[batch.slot[i]];
                const PulledInstance& pulled = batch.pulled[batch.slot[i]];
                std::string tried;
                for (const std::string& t : pulled.tried) tried += (tried.empty() ? "\"" : "\", \"") + t;
                if (!pulled.result.ok()) {
                    outcome.problem =
                        "pulling Blob " + pulled.blob + " (stores tried: " + tried + "\"): " + pulled.result.message;
                } else {
                    // The object's own attributes, from the bytes to be sent.
                    std::map<std::string, std::string> expected;
                    for (const char* k :
                         {"SOPInstanceUID", "PatientID", "StudyInstanceUID", "SeriesInstanceUID", "SOPClassUID"})
                        expected[k] = column_of(row, k);
                    const client::InPlaceBlob* place =
                        batch.in_place.empty() ? nullptr : batch.in_place[batch.slot[i]].get();
                    const std::uint8_t* bytes = place ? place->data() : to_pull.buffer;
                    const std::size_t size = place ? place->size() : static_cast<std::size_t>(pulled.result.length);
                    // Parsed once per version: this pull verified the
                    // whole Blob (kPullOptions.verify), so its bytes are
                    // those checked then.
                    const std::string checked = IdentityChecks::key(pulled.result, expected);
                    const bool known = identity_checks().known(checked);
                    const std::string mismatch = known   ? std::string()
                                                 : bytes ? header_mismatch(bytes, size, expected)
                                                         : delivered_mismatch(to_pull.path, expected);
                    if (mismatch.empty() && !known) identity_checks().add(checked);
                    if (!mismatch.empty()) {
                        outcome.problem = "Blob " + pulled.blob + " in store \"" + pulled.result.store +
                                          "\" is not the instance the index lists: " + mismatch + "; not sent";
                        outcome.comment = "not the instance the index lists: " + mismatch;
                    } else {
                        RetrievedInstance instance;
                        instance.bytes = bytes;
                        instance.size = size;
                        if (bytes) instance.data_set_offset = data_set_offset(bytes, size);
                        if (place) {
                            instance.fd = place->fd();
                            instance.file_offset = place->file_offset();
                        } else {
                            instance.path = to_pull.path;
                        }
                        instance.sop_class = column_of(row, "SOPClassUID");
                        instance.sop = item.sop;
                        instance.transfer_syntax = column_of(row, "TransferSyntaxUID");
                        outcome = send(instance);
                    }
                }
                batch.release(batch.slot[i], *buffers_);
            }
            --counts.remaining;
            switch (outcome.status) {
            case SubStatus::completed: ++counts.completed; break;
            case SubStatus::warning: ++counts.warning; break;
            case SubStatus::failed: ++counts.failed; break;
            }
            if (outcome.status == SubStatus::failed) {
                failed_uids_.push_back(item.sop);
                if (outcome.syntax) ++syntax_failures_;
                if (first_comment_.empty())
                    first_comment_ = outcome.comment.empty() ? outcome.problem : outcome.comment;
            }
            if (outcome.status != SubStatus::completed)
                spdlog::error("{}: instance {}: {}{}", operation_, escaped(item.sop),
                              outcome.status == SubStatus::warning ? "warning: " : "", outcome.problem);
            if (!after(counts)) {
                batch.discard(i + 1, *buffers_);
                for (std::future<Batch>& f : next) f.get().discard(0, *buffers_);
                next.clear();
                return counts;
            }
        }
    }
    return counts;
}

std::uint16_t Retrieval::final_status(const RetrievalCounts& counts) const
{
    if (counts.failed == 0 && counts.warning == 0) return 0x0000;
    if (counts.completed == 0 && counts.warning == 0) return syntax_failures_ == counts.failed ? 0xC122 : 0xA702;
    return 0xB000;
}

}  // namespace blobstreaming::dicom
