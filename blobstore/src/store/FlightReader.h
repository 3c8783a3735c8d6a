#pragma once
/// The reader of a range of a Blob being filled (ReadThroughStore::read):
/// follows the fill's BlobInFlight while the bytes arrive, then reads the
/// committed Blob from the store under the decorator, where the bytes read
/// so far end.

#include <blobstreaming/blobstore/BlobInFlight.h>
#include <blobstreaming/blobstore/BlobRange.h>
#include <blobstreaming/blobstore/BlobReader.h>
#include <blobstreaming/blobstore/Store.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

namespace blobstreaming::detail {

class FlightReader final : public BlobReader {
public:
    /// Bytes [start, end) of the version `flight` receives into `store`
    /// (which outlives the reader, as a store outlives its ranges).
    FlightReader(std::shared_ptr<BlobInFlight> flight, const Store& store, std::uint64_t start, std::uint64_t end)
        : flight_(std::move(flight)), name_(flight_->expected().name), store_(store), start_(start), end_(end)
    {}

    /// Waits while the bytes are on their way.
    std::size_t read(std::uint64_t offset, std::uint8_t* out, std::size_t max, std::error_code& ec) override;
    /// Pending (and `wake` runs once) while the bytes at `offset` have not
    /// landed; Errc of the fill when it failed; blob_changed when the Blob
    /// was replaced or removed between the fill's commit and this read.
    std::size_t read_or_wait(std::uint64_t offset, std::uint8_t* out, std::size_t max, std::error_code& ec,
                             bool& pending, const std::function<void()>& wake) override;
    bool close_waits() const noexcept override
    {
        return committed_.reader() && committed_.reader()->close_waits();
    }
    const std::string& error_message() const noexcept override { return message_; }

private:
    std::error_code fail(Errc code, std::string message);
    /// committed_ from the store: the version the fill committed.
    std::error_code open_committed();
    std::size_t from_committed(std::uint64_t offset, std::uint8_t* out, std::size_t max, std::error_code& ec,
                               bool& pending, const std::function<void()>& wake);

    std::shared_ptr<BlobInFlight> flight_;  ///< null once reading committed_
    const std::string name_;
    const Store& store_;
    const std::uint64_t start_;
    const std::uint64_t end_;
    BlobRange committed_;
    std::string message_;
};

}  // namespace blobstreaming::detail
