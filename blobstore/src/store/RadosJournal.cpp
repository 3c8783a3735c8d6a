/// RadosJournal (RadosJournal.h): a kept reservation's ranges appended to
/// its journal object from the data writes' completion callbacks.
#include "RadosJournal.h"

#include "RadosIndex.h"

#include <blobstreaming/common/BlobName.h>

#include <spdlog/spdlog.h>

#include <cerrno>

namespace blobstreaming::detail {

using namespace rados_index;

RadosJournal::RadosJournal(rados_ioctx_t io, std::string store, std::string id, ResumeHeader header, std::string record,
                           std::uint64_t journaled)
    : io_(io), store_(std::move(store)), id_(std::move(id)), object_(resume_object(id_)), header_(std::move(header)),
      record_(std::move(record)), journaled_(journaled), started_(journaled > 0)
{}

std::unique_ptr<RadosJournal::Written> RadosJournal::expect(const ResumeRange& range)
{
    std::lock_guard lock(mutex_);
    if (stopped_ || range.end >= header_.size) return nullptr;
    ++callbacks_;
    return std::make_unique<Written>(Written{shared_from_this(), range});
}

void RadosJournal::cancel(std::unique_ptr<Written> written) noexcept
{
    if (!written) return;
    std::lock_guard lock(mutex_);
    stop_locked("the write of bytes [" + std::to_string(written->range.start) + ", " +
                std::to_string(written->range.end) + ") could not start");
    --callbacks_;
    idle_.notify_all();
}

void RadosJournal::written(rados_completion_t completion, void* arg)
{
    std::unique_ptr<Written> w(static_cast<Written*>(arg));
    w->journal->completed(w->range, rados_aio_get_return_value(completion));
}

void RadosJournal::completed(const ResumeRange& range, int rc) noexcept
{
    std::lock_guard lock(mutex_);
    if (rc < 0) {
        // The push fails with it (the reservation reports the write); the
        // ranges after it could not follow.
        stop_locked("the write of bytes [" + std::to_string(range.start) + ", " + std::to_string(range.end) +
                    ") failed: " + rados::errno_text(rc));
    } else if (!stopped_) {
        done_.emplace(range.start, range);
        append_locked();
    }
    --callbacks_;
    idle_.notify_all();
}

void RadosJournal::append_locked() noexcept
{
    reap_locked();
    if (stopped_) return;
    try {
        std::string records;
        for (auto it = done_.begin(); it != done_.end() && it->first == journaled_; it = done_.erase(it)) {
            records += encode_resume_range(it->second);
            journaled_ = it->second.end;
        }
        if (records.empty()) return;
        if (!started_) records = encode_resume_header(header_) + records;
        Append& a = appends_.emplace_back();
        a.bytes = std::move(records);
        rados_completion_t c = a.done.arm();
        const int rc = c ? rados_aio_append(io_, object_.c_str(), c, a.bytes.data(), a.bytes.size()) : -ENOMEM;
        if (rc < 0) {
            a.done.reset();
            appends_.pop_back();
            stop_locked("appending to it failed: " + rados::errno_text(rc));
            return;
        }
        if (!started_) {
            started_ = true;
            name_client_locked();
        }
    } catch (const std::exception& e) {  // memory
        stop_locked(e.what());
    }
}

void RadosJournal::reap_locked() noexcept
{
    while (!appends_.empty() && appends_.front().done.ready()) {
        const int rc = appends_.front().done.wait();
        appends_.pop_front();
        if (rc < 0) stop_locked("appending to it failed: " + rados::errno_text(rc));
    }
}

void RadosJournal::name_client_locked() noexcept
{
    std::string why;
    auto record = decode_reservation(record_, why);
    if (!record || !record->client.empty()) return;  // named already (a kept reservation reopened)
    record->client = header_.owner;
    named_ = encode(*record);
    rados::WriteOp op;
    op.require(reservation_key(id_), record_);
    op.set(reservation_key(id_), named_);
    const int rc = op.submit(io_, kIndexObject, naming_);
    if (rc < 0) stop_locked("naming its client in the index failed: " + rados::errno_text(rc));
}

void RadosJournal::stop_locked(const std::string& why) noexcept
{
    if (stopped_) return;
    stopped_ = true;
    done_.clear();
    spdlog::warn("{}: push {}: the journal {} stops at byte {} ({}): a restart of the daemon resumes the push from "
                 "there at most",
                 store_, quote_name(header_.name), object_, journaled_, why);
}

void RadosJournal::drain() noexcept
{
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return callbacks_ == 0; });
    for (Append& a : appends_) {
        const int rc = a.done.wait();
        if (rc < 0) stop_locked("appending to it failed: " + rados::errno_text(rc));
    }
    appends_.clear();
    if (naming_.armed()) {
        const int rc = naming_.wait();
        if (rc == 0) record_ = named_;
        else stop_locked("naming its client in the index failed: " + rados::errno_text(rc));
    }
}

}  // namespace blobstreaming::detail
