#include "EventIndexer.h"

#include "InstanceStore.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <unistd.h>

namespace blobstreaming::dicom {

namespace {

/// The first range read of a committed Blob; a header longer than that is
/// read again with the next size, at last whole.
constexpr std::uint64_t kHeaderRanges[] = {64 * 1024, 1024 * 1024};

std::atomic<unsigned long> g_counter{0};

}  // namespace

EventIndexer::EventIndexer(const GatewayOptions& options, const client::SessionOptions& session_options,
                           client::Session& session, StudyIndex& index, std::function<bool(const std::string&)> storing)
    : options_(options), session_(session), index_(index), storing_(std::move(storing))
{
    worker_ = std::thread([this] { run(); });
    try {
        watch_ = std::make_unique<client::Watch>(session_options, client::WatchOptions{},
                                                 [this](const client::StoreEvent& e) { enqueue(e); });
    } catch (...) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        worker_.join();
        throw;
    }
}

EventIndexer::~EventIndexer()
{
    if (watch_) watch_->close();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    worker_.join();
}

std::vector<std::string> EventIndexer::stores() const { return watch_->stores(); }

void EventIndexer::enqueue(const client::StoreEvent& event)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (queue_.size() >= kMaxQueued) {
            ++dropped_;
            spdlog::error("index: {} event of Blob {} in store \"{}\" dropped: {} events wait already ({} dropped)",
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
        try {
            handle(event);
        } catch (const std::exception& e) {
            spdlog::error("index: Blob {} in store \"{}\" ({} #{}): {}", quote_name(event.blob.name), event.store,
                          client::to_string(event.kind), event.sequence, e.what());
        }
    }
}

void EventIndexer::handle(const client::StoreEvent& event)
{
    if (event.kind == client::StoreEventKind::removed) {
        if (const std::size_t n = index_.remove(event.blob.name, event.store))
            spdlog::info("index: Blob {} {} from store \"{}\": {} entry removed", quote_name(event.blob.name),
                         event.reason, event.store, n);
        return;
    }
    index_committed(event);
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
    // The Blob replaced another: whatever it was, its entry goes.
    const std::size_t stale = index_.remove(blob.name, event.store);
    if (blob.size < 132) {
        spdlog::debug("{}: {} bytes, not DICOM: not indexed", what, blob.size);
        return;
    }
    const std::string path = options_.spool + "/blob-dicomd-index-" + std::to_string(::getpid()) + "-" +
                             std::to_string(++g_counter) + ".dcm";
    struct Spool {
        std::string path;
        ~Spool() { std::remove(path.c_str()); }
    } spool{path};
    InstanceRecord record;
    std::string problem;
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
            return;
        }
        {
            std::ofstream out(path, std::ios::binary | std::ios::trunc);
            out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
            if (!out.flush()) throw Error(Errc::io_error, "cannot write " + path);
        }
        record.values.clear();
        problem = read_header(path, record.values, true);
        if (problem.empty() || length >= blob.size) break;
    }
    const std::string uid = record.values["SOPInstanceUID"];
    if (uid.empty()) {
        spdlog::warn("{}: a DICOM object without a SOP Instance UID: not indexed{}", what,
                     problem.empty() ? "" : " (" + problem + ")");
        return;
    }
    record.blob = blob.name;
    record.store = event.store;
    record.size = blob.size;
    record.checksum = checksum;
    record.problem = problem;
    index_.put(record);
    if (problem.empty())
        spdlog::info("index: instance {} indexed from Blob {} in store \"{}\" (header: {} of {} bytes read)", uid,
                     quote_name(blob.name), event.store, read, blob.size);
    else
        spdlog::warn("index: instance {} indexed from Blob {} in store \"{}\" as far as its header parses: {}", uid,
                     quote_name(blob.name), event.store, problem);
}

}  // namespace blobstreaming::dicom
