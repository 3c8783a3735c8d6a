#include "Retrieval.h"

#include "dicom/InstanceIdentity.h"
#include "dicom/NearestCopy.h"

#include <blobstreaming/common/Error.h>

#include <dcmtk/dcmdata/dcistrmb.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <map>
#include <memory>

namespace blobstreaming::dicom {

namespace {

/// Instances pulled at once (a series per store over the Session's pooled
/// connections) while the batch before them is sent.
constexpr std::size_t kBatch = 16;
/// Pulled into memory rather than a spool file: instances up to this size,
/// as long as the batch's total stays within kBatchMemory.
constexpr std::uint64_t kInMemory = 8u << 20;
constexpr std::uint64_t kBatchMemory = 32u << 20;

/// The object in `bytes` (a whole DICOM file), or why it does not parse.
std::string parse(const std::vector<std::uint8_t>& bytes, DcmFileFormat& object)
{
    DcmInputBufferStream stream;
    stream.setBuffer(bytes.data(), static_cast<offile_off_t>(bytes.size()));
    stream.setEos();
    object.transferInit();
    const OFCondition read = object.read(stream, EXS_Unknown, EGL_noChange, DCM_MaxReadLength);
    object.transferEnd();
    if (read.bad()) return std::string("the object delivered does not parse: ") + read.text();
    return {};
}

}  // namespace

std::string column_of(const IndexRow& row, const char* column)
{
    for (const auto& [c, v] : row)
        if (c == column) return v;
    return {};
}

struct Retrieval::Batch {
    std::size_t begin = 0;
    std::size_t end = 0;
    std::map<std::size_t, std::size_t> slot;  ///< item -> its place in `to_pull`
    std::vector<InstanceToPull> to_pull;
    std::vector<PulledInstance> pulled;
    /// The bytes of those pulled into memory (InstanceToPull::memory).
    std::vector<std::unique_ptr<std::vector<std::uint8_t>>> memory;

    /// Removes the spool files of the instances from `from` on (not sent).
    void discard(std::size_t from)
    {
        for (std::size_t i = std::max(from, begin); i < end; ++i)
            if (const auto s = slot.find(i); s != slot.end() && !to_pull[s->second].memory)
                std::remove(to_pull[s->second].path.c_str());
    }
};

Retrieval::Retrieval(StudyIndex& index, client::Session& session, const IndexQuery& query, std::string operation,
                     std::function<std::string()> spool_path)
    : index_(index), session_(session), operation_(std::move(operation)), spool_path_(std::move(spool_path))
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

std::set<std::pair<std::string, std::string>> Retrieval::presentations() const
{
    std::set<std::pair<std::string, std::string>> out;
    for (const Item& item : items_)
        if (item.refused.empty())
            out.emplace(column_of(item.row, "SOPClassUID"), column_of(item.row, "TransferSyntaxUID"));
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
    // it; the stores' tiers asked once per batch.
    const std::map<std::string, client::StoreStatus> stores = store_statuses(session_);
    std::uint64_t in_memory = 0;
    for (std::size_t i = begin; i < end; ++i) {
        if (!items_[i].refused.empty()) continue;
        const IndexRow& row = items_[i].row;
        batch.slot[i] = batch.to_pull.size();
        batch.to_pull.push_back(
            {items_[i].sop,
             nearest_first(std::move(copies[items_[i].sop]), {column_of(row, "blob"), column_of(row, "store"), ""},
                           stores),
             {}, nullptr});
        std::uint64_t size = 0;
        try {
            size = std::stoull(column_of(row, "size"));
        } catch (const std::exception&) {
            size = kInMemory + 1;  // not known: a file
        }
        if (size <= kInMemory && in_memory + size <= kBatchMemory) {
            in_memory += size;
            batch.memory.push_back(std::make_unique<std::vector<std::uint8_t>>());
            batch.to_pull.back().memory = batch.memory.back().get();
        } else {
            batch.to_pull.back().path = spool_path_();
        }
    }
    batch.pulled = pull_from_copies(session_, batch.to_pull, client::PullOptions{});
    return batch;
}

RetrievalCounts Retrieval::run(const Send& send, const After& after)
{
    RetrievalCounts counts;
    counts.remaining = items_.size();
    auto pull_async = [this](std::size_t begin) {
        const std::size_t end = std::min(items_.size(), begin + kBatch);
        return std::async(std::launch::async, [this, begin, end] { return pull(begin, end); });
    };
    std::future<Batch> next;
    if (!items_.empty()) next = pull_async(0);
    for (std::size_t begin = 0; begin < items_.size(); begin += kBatch) {
        Batch batch = next.get();
        if (batch.end < items_.size()) next = pull_async(batch.end);
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
                    DcmFileFormat object;
                    std::string mismatch;
                    if (to_pull.memory) {
                        mismatch = parse(*to_pull.memory, object);
                        to_pull.memory->clear();
                        to_pull.memory->shrink_to_fit();
                    } else if (const OFCondition read = object.loadFile(to_pull.path.c_str()); read.bad()) {
                        mismatch = std::string("the object delivered does not parse: ") + read.text();
                    }
                    if (mismatch.empty()) mismatch = delivered_mismatch(*object.getDataset(), expected);
                    if (!mismatch.empty()) {
                        outcome.problem = "Blob " + pulled.blob + " in store \"" + pulled.result.store +
                                          "\" is not the instance the index lists: " + mismatch + "; not sent";
                        outcome.comment = "not the instance the index lists: " + mismatch;
                    } else {
                        outcome = send({object, column_of(row, "SOPClassUID"), item.sop,
                                        column_of(row, "TransferSyntaxUID")});
                    }
                }
                if (!to_pull.memory) std::remove(to_pull.path.c_str());
            }
            --counts.remaining;
            switch (outcome.status) {
            case SubStatus::completed: ++counts.completed; break;
            case SubStatus::warning: ++counts.warning; break;
            case SubStatus::failed: ++counts.failed; break;
            }
            if (outcome.status == SubStatus::failed) {
                failed_uids_.push_back(item.sop);
                if (first_comment_.empty()) first_comment_ = outcome.comment.empty() ? outcome.problem : outcome.comment;
            }
            if (outcome.status != SubStatus::completed)
                spdlog::error("{}: instance {}: {}{}", operation_, escaped(item.sop),
                              outcome.status == SubStatus::warning ? "warning: " : "", outcome.problem);
            if (!after(counts)) {
                batch.discard(i + 1);
                if (next.valid()) next.get().discard(0);
                return counts;
            }
        }
    }
    return counts;
}

std::uint16_t Retrieval::final_status(const RetrievalCounts& counts)
{
    if (counts.failed == 0 && counts.warning == 0) return 0x0000;
    if (counts.completed == 0 && counts.warning == 0) return 0xA702;
    return 0xB000;
}

}  // namespace blobstreaming::dicom
