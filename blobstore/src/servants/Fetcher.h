#pragma once
/// Store-to-store transfers: this daemon as the client of another store
/// (docs/STORES.md, "Tiers"). BlobStore::fetch (a third-party copy,
/// `blob copy`) and read-through (`blobstored --read-through`: the
/// ReadThroughStore's upstream, FartherStores) both land here, each with a
/// read grant: the pull ticket a client obtained from the
/// source for this store (BlobTransporter::grantRead: the client's
/// authority, never this daemon's), or, for read-through, one this daemon
/// asked for itself (the operator's configuration is the authority). The
/// source's data port sends the bytes through the data plane's client
/// (transporter/client, the one the client library uses: SourceReader)
/// straight into a reservation of this store, checksummed as they arrive
/// and committed only when they match the source's checksum. A source on
/// this host that offers its files (StoreStatus::localFiles) is read from
/// its committed file instead (findGrantedFile, pread), verified the same
/// way. Nothing of a failed fetch is ever visible.
///
/// Blocking: runs on the calling thread (an ORB thread, or a thread of the
/// store's flight table: read-through, beginFetch), never on the data
/// plane's reactor. Every fetch is a flight of the store's FlightTable
/// (ReadThroughStore::flights()): concurrent fills of one name share one
/// transfer, and reads of the name follow its bytes as they arrive.

#include <blobstreaming/blobstore/BlobInFlight.h>
#include <blobstreaming/blobstore/FlightTable.h>
#include <blobstreaming/blobstore/ReadThroughStore.h>
#include <blobstreaming/blobstore/Store.h>
#include <blobstreaming/common/BlobInfo.h>
#include <blobstreaming/transporter/SocketOptions.h>
#include <blobstreaming/transporter/client/Ticket.h>

#include "Grant.h"
#include "SameHostSources.h"

#include <BlobStreaming.hh>
#include <omniORB4/Naming.hh>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace blobstreaming {
class TlsContext;
}

namespace blobstreaming::corba {

class SourceReader;

struct FetchOptions {
    /// A transfer with no byte moving for this long fails (Errc::timeout).
    std::chrono::milliseconds idle_timeout{30000};
    /// Bound on each control call to the source (omniORB call timeout).
    std::chrono::milliseconds call_timeout{10000};
    /// Client-role TLS for the source's data port (null: plain TCP), from
    /// the daemon's own certificate, key and CA.
    std::shared_ptr<const TlsContext> tls;
    /// blobstored --socket-buffer, set before connect (0: autotuning).
    SocketOptions socket;
    /// A source on this host that offers the Blob's file (findLocalFile)
    /// is read from that file instead of its data port: one copy, no
    /// loopback TCP (false: blobstored --no-local).
    bool local = true;
};

/// Where read-through looks for a Blob this store lacks: the Naming
/// Service's stores of farther tiers than `own_tier`.
struct FartherTiers {
    CosNaming::NamingContext_var naming;
    std::string naming_url;
    std::string own_name;
    BlobStreaming::StoreTier own_tier = BlobStreaming::TIER_WORKSTATION;
};

class Fetcher {
public:
    /// Fills `store` (the daemon's outermost store) as flights of `flights`
    /// (its ReadThroughStore's).
    Fetcher(Store& store, FlightTable& flights, FetchOptions options);
    ~Fetcher();
    Fetcher(const Fetcher&) = delete;
    Fetcher& operator=(const Fetcher&) = delete;

    /// Asks the source of `grants` (all of one source) for its images of
    /// their Blobs in one call (shareGrantedImages) when this store adopts
    /// images and the source offers them on this host: the fetches of those
    /// grants that follow within a few seconds use them instead of asking
    /// one by one (BlobStore::fetchEach). Errors only log: each fetch then
    /// asks for itself.
    void prepare_images(const std::vector<Grant>& grants);

    /// Copies the Blob of `grant` from its source into the store, replacing
    /// a Blob of that name when `mode` is replace. Throws Error: the
    /// source's no_such_blob, its refusal of the grant (refused) and other
    /// errors with the source named, unreachable or timeout for the data
    /// connection, digest_mismatch when the bytes do not match the source's
    /// checksum, this store's own errors (out_of_space, already_exists).
    BlobInfo fetch(const Grant& grant, ReserveMode mode);

    /// `grant` from the IDL, its source named by source_name(); throws
    /// Error (invalid_argument) for a ticket that is not a whole pull.
    Grant grant_of(const BlobStreaming::ReadGrant& grant, const std::string& what);

    /// The source's name (BlobStore::name), asked once per control
    /// endpoint. Throws CORBA exceptions.
    std::string source_name(BlobStreaming::BlobStore_ptr source);

    /// Read-through (Upstream::fill, on a thread of the flight table):
    /// `name`, which the store lacks, copied as `flight` from the nearest
    /// store of `tiers` that holds it, with a grant this daemon asks for
    /// itself. no_such_blob naming the stores asked when none holds it.
    BlobInfo fill_from(const std::string& name, const FartherTiers& tiers, FlightTable::Flight& flight);

    /// fetch() in two steps (BlobStore::beginFetch, awaitFetch), so that a
    /// chain of stores forwards while it receives: begin() returns once the
    /// bytes have somewhere to go (pulls of the name then follow the
    /// fetch), the transfer going on on a thread of its own; await() waits
    /// for its outcome, kept 60 s after it ends for each `client` (the
    /// certificate subject) that began it. Errors before the bytes could
    /// start are begin()'s, as fetch() throws them.
    void begin(const Grant& grant, ReserveMode mode, const std::string& client);
    /// The outcome of the fetch of `name` that `client` began, waited for;
    /// no_such_blob (naming `store_name`) when it began none lately.
    BlobInfo await(const std::string& name, const std::string& store_name, const std::string& client);

    /// The daemon stops (before the ORB goes): fetches still running fail
    /// (cancelled) and are waited for (the store's flight table stops); no
    /// new one begins.
    void stop() noexcept;

    /// Stores of farther tiers than tiers.own_tier that hold `name`,
    /// nearest first; `silent`: the stores that did not answer (each asked
    /// within the call timeout). Empty when the Naming Service cannot be
    /// reached.
    struct Holders {
        std::vector<std::string> stores;
        std::vector<std::string> silent;
    };
    Holders holders(const std::string& name, const FartherTiers& tiers) const;

private:
    using Flight = FlightTable::Flight;

    /// The nearest holder of `name` of a farther tier: its reference and
    /// name; no_such_blob naming the stores asked when none.
    std::pair<BlobStreaming::BlobStore_var, std::string> nearest_holder(const std::string& name,
                                                                        const FartherTiers& tiers) const;

    BlobInfo transfer(const Grant& grant, ReserveMode mode, Flight& flight);
    /// Read-through: a grant of `name` from `source` for this store, asked
    /// for with this daemon's own authority (BlobTransporter::send).
    Grant own_grant(const std::string& name, BlobStreaming::BlobStore_ptr source, const std::string& source_name);

    /// The bytes of a fetch of `size` bytes into a new reservation, moved
    /// there by `fill` (every byte, each reported to the flight's progress
    /// as it lands; throws on a failure). Pulls of `name` follow them as
    /// they land (`flight`); committed only when they match `expected`
    /// (`what` names the fetch in that message). `image`: the whole Blob's
    /// bytes in a source's sealed image, verified against `expected` by the
    /// source after sealing; the reservation adopts them with that checksum
    /// when its store can (Reservation::adopt; `fill` then is not called).
    using Fill = std::function<void(Reservation&, BlobInFlight&)>;
    BlobInfo receive(const std::string& name, std::uint64_t size, const Checksum& expected, ReserveMode mode,
                     Flight& flight, const std::string& what, const Fill& fill,
                     std::shared_ptr<const std::uint8_t> image = nullptr);

    /// The transporter kept for the source at control endpoint `key` (one
    /// per source, used by every fetch from it: two round trips fewer per
    /// fetch; the source reclaims it when idle), opened when missing.
    BlobStreaming::BlobTransporter_var transporter_of(BlobStreaming::BlobStore_ptr source, const std::string& key,
                                                      bool& cached);
    void forget_transporter(const std::string& key);

    Store& store_;
    const FetchOptions options_;
    std::mutex mutex_;  ///< transporters_, sources_
    std::map<std::string, BlobStreaming::BlobTransporter_var> transporters_;
    /// A source as it names itself: its name and data endpoint.
    struct SourceId {
        std::string name;
        std::string data_host;
        std::uint16_t data_port = 0;
    };
    /// What source_id() learnt, per control endpoint.
    std::map<std::string, SourceId> sources_;
    /// The source's name and data endpoint (BlobStore::name, dataAddress),
    /// asked once per control endpoint, or again (`fresh`). Throws CORBA
    /// exceptions.
    SourceId source_id(BlobStreaming::BlobStore_ptr source, bool fresh);
    /// One fill per name: the store's.
    FlightTable& flights_;
    /// The data connections to sources (the data plane's client).
    std::unique_ptr<SourceReader> reader_;
    /// The sources of this host: their files and images.
    SameHostSources same_host_;
};

/// Read-through's upstream (ReadThroughStore::read_through): the nearest
/// store of a farther tier that holds the Blob, through the Fetcher.
class FartherStores final : public Upstream {
public:
    FartherStores(Fetcher& fetcher, FartherTiers tiers) : fetcher_(fetcher), tiers_(std::move(tiers)) {}
    BlobInfo fill(const std::string& name, FlightTable::Flight& flight) override
    {
        return fetcher_.fill_from(name, tiers_, flight);
    }

private:
    Fetcher& fetcher_;
    const FartherTiers tiers_;
};

}  // namespace blobstreaming::corba
