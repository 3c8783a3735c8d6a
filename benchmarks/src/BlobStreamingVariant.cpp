// blobstreaming: the real libblobclient against a real blobstored (the
// MemoryStore or FileStore named by --store). -c HOST -p PORT name the
// Naming Service. The same-host file fast path is off unless
// --local-fast-path, so that bytes cross the data connection. A run of
// --count > 1 is one series (Session::push_series / pull_series, Mode::Sync,
// as an application loads a study): pipelined by the library, not one
// control round trip after the other.
#include "Variant.h"
#include "Workload.h"

#include <blobstreaming/client/Session.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Sha256.h>

#include <unistd.h>

#include <cstdio>
#include <optional>
#include <vector>

namespace blobstreaming::bench {
namespace {

using namespace blobstreaming::client;

class BlobStreamingClient : public ClientTransport {
public:
    ~BlobStreamingClient() override
    {
        if (!session_) return;
        for (std::uint32_t i = 0; i < count_; ++i) {
            if (!pushed_[i]) continue;
            Result ignored;  // best effort: the benchmark's own blobs
            session_->remove(name(i), store_, Mode::Sync, [&](const Result& r) { ignored = r; });
        }
    }

    void open(const Config& config) override
    {
        SessionOptions options;
        options.naming_url = "corbaname::" + config.host + ":" + std::to_string(config.port);
        options.default_store = config.store;
        options.send_buffer = config.socket_buffer;
        options.receive_buffer = config.socket_buffer;
        options.local_fast_path = config.local_fast_path;
        options.timeout = std::chrono::seconds(120);
        store_ = config.store;
        verify_ = config.verify;
        prefix_ = "bsbench." + std::to_string(::getpid()) + ".";
        session_.emplace(options);
        info_.send_buffer = config.socket_buffer;
        info_.receive_buffer = config.socket_buffer;
        info_.target = "unknown";
        for (const auto& s : session_->stores())
            if (s.name == store_) info_.target = s.kind;
        count_ = config.count;
        size_ = config.size;
        checksums_.assign(count_, Checksum{});
        pushed_.assign(count_, false);
        pull_mode_ = config.direction == Direction::pull;
        if (pull_mode_) {
            BlobSet blobs(1, config.size, false);
            for (std::uint32_t i = 0; i < count_; ++i) {
                fill_blob(i, blobs.data(0), config.size);
                push(i, blobs.data(0), config.size);
            }
        }
    }

    void push(std::uint32_t index, const std::uint8_t* data, std::uint64_t size) override
    {
        Result result;
        session_->push(PushSource::memory(data, size), name(index), push_options(), Mode::Sync,
                       [&](const Result& r) { result = r; });
        result.throw_if_error();
        pushed(index, result);
    }

    void pull(std::uint32_t index, std::uint64_t offset, std::uint64_t length, std::uint8_t* out) override
    {
        Result result;
        session_->pull(name(index), PullSink::buffer(out, length), pull_options(offset, length), Mode::Sync,
                       [&](const Result& r) { result = r; });
        result.throw_if_error();
        check_pulled(index, result, length);
    }

    void push_series(const BlobSet& blobs, std::uint32_t& done) override
    {
        if (blobs.count() == 1) return ClientTransport::push_series(blobs, done);
        std::vector<PushSlice> slices;
        for (std::uint32_t i = 0; i < blobs.count(); ++i)
            slices.push_back(PushSlice{PushSource::memory(blobs.data(i), blobs.size()), name(i)});
        SeriesResult series;
        session_->push_series(std::move(slices), push_options(), Mode::Sync,
                              [&](const SeriesResult& r) { series = r; });
        done = static_cast<std::uint32_t>(series.succeeded);
        for (std::uint32_t i = 0; i < blobs.count(); ++i)
            if (series.slices[i].ok()) pushed(i, series.slices[i]);
        series.throw_if_error();
    }

    void pull_series(BlobSet& blobs, std::uint32_t& done) override
    {
        if (blobs.count() == 1) return ClientTransport::pull_series(blobs, done);
        std::vector<PullSlice> slices;
        for (std::uint32_t i = 0; i < blobs.count(); ++i)
            slices.push_back(PullSlice{name(i), PullSink::buffer(blobs.data(i), blobs.size())});
        SeriesResult series;
        session_->pull_series(std::move(slices), pull_options(0, blobs.size()), Mode::Sync,
                              [&](const SeriesResult& r) { series = r; });
        done = static_cast<std::uint32_t>(series.succeeded);
        series.throw_if_error();
        for (std::uint32_t i = 0; i < blobs.count(); ++i) check_pulled(i, series.slices[i], blobs.size());
    }

    /// For each blob pushed since the last end_run(), the SHA-256 of the
    /// bytes the store holds: the store acknowledged a checksum (its own
    /// algorithm, computed while receiving and checked against the sender's
    /// trailer); when it equals that of the blob as fill_blob() makes it,
    /// the store holds the expected bytes and their SHA-256 is reported,
    /// otherwise an all-zero digest. Runs after the timed runs.
    std::vector<Digest> stored_digests() override
    {
        std::vector<Digest> out(count_, Digest{});
        std::vector<std::uint8_t> blob(static_cast<std::size_t>(size_));
        for (std::uint32_t i = 0; i < count_; ++i) {
            if (!pushed_[i]) continue;
            fill_blob(i, blob.data(), size_);
            if (ChecksumState::of(checksums_[i].algorithm, blob.data(), blob.size()) == checksums_[i])
                out[i] = Sha256::of(blob.data(), blob.size());
        }
        return out;
    }

    /// After a push run: removes the pushed blobs so that every run pushes
    /// new blobs into the same free space. Pull runs keep theirs.
    void end_run() override
    {
        if (pull_mode_) return;
        for (std::uint32_t i = 0; i < count_; ++i) {
            if (!pushed_[i]) continue;
            session_->remove(name(i), store_);
            pushed_[i] = false;
        }
    }

    TransportInfo info() const override { return info_; }

private:
    std::string name(std::uint32_t index) const { return prefix_ + std::to_string(index); }

    PushOptions push_options() const
    {
        PushOptions options;
        options.store = store_;
        options.replace = true;
        return options;
    }

    PullOptions pull_options(std::uint64_t offset, std::uint64_t length) const
    {
        PullOptions options;
        options.store = store_;
        options.offset = offset;
        options.length = length;
        options.verify = verify_;
        return options;
    }

    /// Blob `index` was pushed: what the store computed is kept for
    /// stored_digests().
    void pushed(std::uint32_t index, const Result& result)
    {
        checksums_[index] = result.info.checksum;
        pushed_[index] = true;
    }

    void check_pulled(std::uint32_t index, const Result& result, std::uint64_t length) const
    {
        if (result.bytes != length)
            throw Error(Errc::transfer_failed, "blobstreaming: pull " + name(index) + ": " +
                                                   std::to_string(result.bytes) + " of " + std::to_string(length) +
                                                   " bytes");
    }

    std::optional<Session> session_;
    std::string store_;
    bool verify_ = true;
    std::string prefix_;
    std::uint32_t count_ = 0;
    bool pull_mode_ = false;
    std::uint64_t size_ = 0;
    std::vector<Checksum> checksums_;
    std::vector<bool> pushed_;
    TransportInfo info_;
};

}  // namespace

std::unique_ptr<ClientTransport> make_blobstreaming_client() { return std::make_unique<BlobStreamingClient>(); }

}  // namespace blobstreaming::bench
