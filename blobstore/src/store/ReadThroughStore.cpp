/// ReadThroughStore (ReadThroughStore.h): reads that follow the fills into a
/// store, and read-through of the Blobs it lacks.
#include <blobstreaming/blobstore/ReadThroughStore.h>

#include "FlightReader.h"
#include "StoreIndex.h"

#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>

namespace blobstreaming {

ReadThroughStore::ReadThroughStore(std::unique_ptr<Store> inner) : inner_(std::move(inner)) {}

ReadThroughStore::~ReadThroughStore() { stop(); }

bool ReadThroughStore::filling(std::string_view name) const { return flights_.in_flight(std::string(name)) != nullptr; }

std::shared_ptr<BlobInFlight> ReadThroughStore::fill_missing(const std::string& name, const Error& missing,
                                                             std::optional<BlobInfo>& held) const
{
    Upstream* upstream = upstream_.load();
    if (!upstream) {
        // A copy to this store that began meanwhile.
        if (auto flight = flights_.in_flight(name)) return flight;
        throw missing;
    }
    bool first = false;
    const std::shared_ptr<FlightTable::Flight> flight = flights_.join(name, first);
    if (first) {
        flights_.spawn(name, flight, "read-through", [this, upstream, name, flight] {
            try {
                return upstream->fill(name, *flight);
            } catch (const Error& e) {
                // Another fill or a push committed it meanwhile: that one
                // serves the reads still to come (those following this one
                // have failed).
                if (e.code() == Errc::already_exists) return inner_->stat(name);
                throw;
            }
        });
    }
    std::shared_ptr<BlobInFlight> progress = flights_.wait_begun(*flight, &held);
    // Failed, its flight not landed yet: its error at once, not a range
    // whose first read fails without saying why.
    if (progress && progress->failed()) throw progress->error();
    return progress;
}

ReadThroughStore::Holding ReadThroughStore::holding(std::string_view name) const
{
    const std::string key(name);
    // Being filled, also over an older committed version: a read follows
    // the version being received.
    if (auto flight = flights_.in_flight(key)) return {flight->expected(), true};
    try {
        return {inner_->stat(name), false};
    } catch (const Error& e) {
        if (e.code() != Errc::no_such_blob) throw;
        // A fill of it that failed a moment ago: its reason, not another
        // fill (a pull that followed it asks once why it broke off).
        if (reads_through()) flights_.rethrow_recent_failure(key);
        std::optional<BlobInfo> held;
        if (auto flight = fill_missing(key, e, held)) return {flight->expected(), true};
        return {*held, false};
    }
}

void ReadThroughStore::fill_and_wait(std::string_view name) const
{
    if (!reads_through() || inner_->contains(name)) return;
    if (holding(name).in_flight) flights_.wait_landed(std::string(name));
}

BlobRange ReadThroughStore::read(std::string_view name, std::uint64_t start, std::uint64_t end) const
{
    const std::string key(name);
    std::shared_ptr<BlobInFlight> flight = flights_.in_flight(key);
    if (!flight) {
        try {
            return inner_->read(name, start, end);
        } catch (const Error& e) {
            if (e.code() != Errc::no_such_blob) throw;
            // A read of a fill that has failed since (a ticket issued while
            // it ran): the fill's error.
            flights_.rethrow_recent_failure(key);
            std::optional<BlobInfo> held;
            flight = fill_missing(key, e, held);
            if (!flight) return inner_->read(name, start, end);  // committed meanwhile
        }
    }
    return follow(flight, start, end);
}

BlobRange ReadThroughStore::follow(const std::shared_ptr<BlobInFlight>& flight, std::uint64_t start,
                                   std::uint64_t end) const
{
    const BlobInfo& version = flight->expected();
    end = detail::checked_end(version.name, version.size, start, end);
    return BlobRange(version, start, end, std::make_shared<detail::FlightReader>(flight, *inner_, start, end));
}

std::optional<Store::LocalFile> ReadThroughStore::local_file(std::string_view name) const
{
    // Its committed file, if any, is the version being replaced: the data
    // port serves the fill's version.
    if (filling(name)) {
        validate_blob_name(name);
        return std::nullopt;
    }
    return inner_->local_file(name);
}

}  // namespace blobstreaming
