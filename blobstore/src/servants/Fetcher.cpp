#include "Fetcher.h"
#include "SourceReader.h"

#include <blobstreaming/transporter/corba/BlobInfoIdl.h>

#include <blobstreaming/blobstore/Reservation.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Nearest.h>
#include <blobstreaming/transporter/Protocol.h>
#include <blobstreaming/transporter/corba/ChecksumIdl.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/References.h>

#include <omniORB4/omniORB.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace blobstreaming::corba {
namespace {

/// Bytes asked of the reservation per receive: large enough that a read is
/// a few system calls per MiB, small enough for a FileStore mapping window.
constexpr std::size_t kReceiveChunk = std::size_t{1} << 20;

/// Data connections kept per source data port (the data plane's client
/// reuses them from one fetch to the next).
constexpr unsigned kConnectionsPerSource = 16;

/// The bytes of a fetch received from the source's data port straight into
/// the reservation (the data plane's client fills window() and commit()).
class ReservationSink final : public dataplane::Sink {
public:
    ReservationSink(Reservation& reservation, BlobInFlight& progress, std::uint64_t size, std::string what)
        : reservation_(reservation), progress_(progress), size_(size), what_(std::move(what))
    {}
    void open(std::uint64_t length) override
    {
        if (length != size_)
            throw Error(Errc::protocol_error, what_ + ": the source announced " + std::to_string(length) +
                                                  " bytes, its grant " + std::to_string(size_));
    }
    std::pair<std::uint8_t*, std::size_t> window() override
    {
        std::error_code ec;
        const auto w = reservation_.window(
            static_cast<std::size_t>(std::min<std::uint64_t>(kReceiveChunk, size_ - received_)), ec);
        if (ec) throw Error(static_cast<Errc>(ec.value()), what_ + ": " + reservation_.error_message());
        return {w.data, w.size};
    }
    void commit(std::size_t n) override
    {
        if (auto advanced = reservation_.advance(n))
            throw Error(static_cast<Errc>(advanced.value()), what_ + ": " + reservation_.error_message());
        received_ += n;
        progress_.landed(received_);
    }
    /// The reservation commits (and checks the checksum) after the job.
    void finish() override {}

private:
    Reservation& reservation_;
    BlobInFlight& progress_;
    const std::uint64_t size_;
    const std::string what_;
    std::uint64_t received_ = 0;
};

/// Moves `size` bytes into `reservation` from `read` (up to n bytes into the
/// buffer, at least one; throws on a failure), reporting each to `progress`:
/// what the data plane's client does with a ReservationSink, for a source
/// read here (its file, its image).
void fill_by_reads(Reservation& reservation, BlobInFlight& progress, std::uint64_t size, const std::string& what,
                   const std::function<std::size_t(std::uint8_t*, std::size_t)>& read)
{
    ReservationSink sink(reservation, progress, size, what);
    for (std::uint64_t received = 0; received < size;) {
        const auto [data, room] = sink.window();
        const std::size_t n = read(data, room);
        sink.commit(n);
        received += n;
    }
}

}  // namespace

Fetcher::Fetcher(Store& store, FlightTable& flights, FetchOptions options)
    : store_(store), options_(std::move(options)), flights_(flights), same_host_(options_.call_timeout)
{
    dataplane::PoolOptions pool;
    pool.max_connections_per_endpoint = kConnectionsPerSource;
    pool.timeout = options_.idle_timeout;
    pool.socket = options_.socket;
    pool.tls = options_.tls;
    reader_ = std::make_unique<SourceReader>(std::move(pool));
}

Fetcher::~Fetcher() = default;

Grant Fetcher::grant_of(const BlobStreaming::ReadGrant& grant, const std::string& what)
{
    if (CORBA::is_nil(grant.source.in()))
        throw Error(Errc::invalid_argument, what + ": the grant names no source store (a nil reference)");
    const BlobStreaming::TransferTicket& t = grant.ticket;
    if (t.direction != BlobStreaming::PULL || t.offset != 0 || t.length != t.version.size)
        throw Error(Errc::invalid_argument, what + ": the grant is not a pull of a whole Blob (a ticket of " +
                                                std::string(t.direction == BlobStreaming::PULL ? "pull" : "push") +
                                                " [" + std::to_string(t.offset) + ", +" + std::to_string(t.length) +
                                                ") of " + std::to_string(t.version.size) + " bytes)");
    Grant out;
    out.source = BlobStreaming::BlobStore::_duplicate(grant.source.in());
    out.key = endpoint_of(out.source.in());
    out.ticket = ticket_of(t);
    // The grant's data endpoint must be the source's own: this daemon
    // connects where the client says only when it is where the source
    // serves (asked again once, for a source restarted on another port).
    for (bool fresh : {false, true}) {
        SourceId id;
        try {
            id = source_id(out.source.in(), fresh);
        } catch (...) {
            rethrow_as_error(what, "(source)", out.key);
        }
        out.source_name = id.name;
        if (id.data_host == out.ticket.host && id.data_port == out.ticket.port) return out;
        if (fresh)
            throw Error(Errc::invalid_argument, what + ": the grant's data endpoint " + out.ticket.endpoint() +
                                                    " is not store \"" + id.name + "\"'s (" + id.data_host + ":" +
                                                    std::to_string(id.data_port) + ")");
    }
    return out;
}

BlobInfo Fetcher::fetch(const Grant& grant, ReserveMode mode)
{
    const std::string name = grant.name();
    bool first = false;
    const std::shared_ptr<Flight> flight = flights_.join(name, first);
    if (!first) return flights_.landed(*flight);
    std::optional<BlobInfo> info;
    std::exception_ptr error;
    try {
        info = transfer(grant, mode, *flight);
    } catch (...) {
        error = std::current_exception();
    }
    flights_.land(name, *flight, info, error);
    if (error) std::rethrow_exception(error);
    return *info;
}

BlobInfo Fetcher::transfer(const Grant& grant, ReserveMode mode, Flight& flight)
{
    const std::string name = grant.name();
    const BlobInfo& version = *grant.ticket.version;
    const std::string what = "fetch " + quote_name(name) + " from store \"" + grant.source_name + "\"";
    const auto started = std::chrono::steady_clock::now();
    const auto done = [&](const BlobInfo& info, const char* how) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        spdlog::info("fetched {} ({} bytes, {}) from store \"{}\" in {:.3f} s{}", quote_name(name), info.size,
                     info.checksum.brief(), grant.source_name, seconds, how);
        return info;
    };

    if (options_.local && store_.adopts_images()) {
        if (auto image = same_host_.image(grant, what)) {
            const std::string from = what + " (its image on this host)";
            const std::uint8_t* bytes = image->bytes.get();
            std::uint64_t at = 0;
            const BlobInfo info = receive(
                name, image->info.size, image->info.checksum, mode, flight, from,
                [&](Reservation& reservation, BlobInFlight& progress) {  // a store that copied instead of adopting
                    fill_by_reads(reservation, progress, image->info.size, from,
                                  [&](std::uint8_t* data, std::size_t n) {
                                      std::memcpy(data, bytes + at, n);
                                      at += n;
                                      return n;
                                  });
                },
                image->bytes);
            return done(info, " (its image on this host)");
        }
    }
    if (options_.local) {
        if (auto file = same_host_.file(grant, what)) {
            const std::string from = what + " (its file " + file->path + " on this host)";
            std::uint64_t at = file->data_offset;
            const int fd = file->fd.get();
            const BlobInfo info =
                receive(name, file->info.size, file->info.checksum, mode, flight, from,
                        [&](Reservation& reservation, BlobInFlight& progress) {
                            fill_by_reads(reservation, progress, file->info.size, from,
                                          [&](std::uint8_t* data, std::size_t n) {
                                              for (;;) {
                                                  const ssize_t r = ::pread(fd, data, n, static_cast<off_t>(at));
                                                  if (r < 0 && errno == EINTR) continue;
                                                  if (r <= 0)
                                                      throw Error(Errc::io_error,
                                                                  from + ": cannot read it: " +
                                                                      (r < 0 ? std::strerror(errno) : "it ended early"));
                                                  at += static_cast<std::uint64_t>(r);
                                                  return static_cast<std::size_t>(r);
                                              }
                                          });
                        });
            return done(info, " (its file on this host)");
        }
    }

    // The source's data port, through the data plane's client: the grant's
    // ticket is the only authority presented there.
    const BlobInfo info = receive(
        name, version.size, version.checksum, mode, flight, what, [&](Reservation& reservation, BlobInFlight& progress) {
            auto job = std::make_unique<dataplane::TransferJob>();
            job->type = protocol::FrameType::pull;
            job->ticket = grant.ticket;
            job->what = what;
            job->sink = std::make_unique<ReservationSink>(reservation, progress, version.size, what);
            job->whole = true;
            // The reservation checks the checksum when it commits.
            job->verify = false;
            const dataplane::JobOutcome outcome = reader_->run(std::move(job));
            // The message names the fetch (the job's `what`) and the
            // source's reason.
            if (outcome.error) throw Error(static_cast<Errc>(outcome.error.value()), outcome.message);
        });
    return done(info, "");
}

BlobInfo Fetcher::receive(const std::string& name, std::uint64_t size, const Checksum& expected, ReserveMode mode,
                          Flight& flight, const std::string& what, const Fill& fill,
                          std::shared_ptr<const std::uint8_t> image)
{
    auto reservation = store_.reserve(name, size, mode, expected.algorithm);
    // Pulls of this name follow the bytes from here on (read-through, the
    // next store of a copy chain, any pull of it here).
    // No commit time until this store commits (the ticket says 0).
    const auto progress = std::make_shared<BlobInFlight>(BlobInfo{name, size, expected, {}});
    progress->attach(reservation.get());
    struct Detach {
        BlobInFlight& progress;
        ~Detach() { progress.detach(); }
    } detach{*progress};  // before the reservation goes, however this ends
    flights_.begun(flight, progress);
    BlobInfo info;
    try {
        // A sealed image the source verified after sealing: these very bytes
        // were checked against `expected`, and cannot change since.
        if (image && reservation->adopt(std::move(image), &expected)) progress->landed(size);
        else fill(*reservation, *progress);
        progress->detach();
        try {
            info = reservation->commit(&expected);
        } catch (const Error& e) {
            if (e.code() != Errc::digest_mismatch) throw;
            throw Error(Errc::digest_mismatch, what + ": the bytes received do not match the source's checksum " +
                                                   expected.brief() + ": nothing was committed (" + e.what() + ")");
        }
    } catch (const Error& e) {
        progress->fail(e.code(), e.what());
        throw;
    } catch (const std::exception& e) {
        progress->fail(Errc::transfer_failed, what + ": " + e.what());
        throw;
    }
    progress->finish(info);
    return info;
}

void Fetcher::prepare_images(const std::vector<Grant>& grants)
{
    if (options_.local && store_.adopts_images()) same_host_.prepare_images(grants);
}

Grant Fetcher::own_grant(const std::string& name, BlobStreaming::BlobStore_ptr source, const std::string& source_name)
{
    const std::string what = "fetch " + quote_name(name) + " from store \"" + source_name + "\"";
    Grant grant;
    grant.source = BlobStreaming::BlobStore::_duplicate(source);
    grant.source_name = source_name;
    grant.key = endpoint_of(source);
    BlobStreaming::TimeValue lifetime;
    lifetime.seconds = static_cast<CORBA::ULongLong>(options_.idle_timeout.count() / 1000);
    lifetime.microseconds = 0;
    BlobStreaming::TransferTicket_var ticket;
    for (int attempt = 0;; ++attempt) {
        bool cached = false;
        try {
            BlobStreaming::BlobTransporter_var transporter = transporter_of(source, grant.key, cached);
            ticket = transporter->send(name.c_str(), 0, 0, true, lifetime, BlobStreaming::IGNORE_NOTIFICATIONS);
            break;
        } catch (const CORBA::OBJECT_NOT_EXIST&) {
            // The source reclaimed the cached transporter (idle too long,
            // or the source restarted): open a new one, once.
            forget_transporter(grant.key);
            if (!cached || attempt > 0) rethrow_as_error(what, source_name, grant.key);
        } catch (...) {
            forget_transporter(grant.key);
            rethrow_as_error(what, source_name, grant.key);
        }
    }
    grant.ticket = ticket_of(ticket.in());
    return grant;
}

BlobStreaming::BlobTransporter_var Fetcher::transporter_of(BlobStreaming::BlobStore_ptr source, const std::string& key,
                                                           bool& cached)
{
    {
        std::lock_guard lock(mutex_);
        const auto it = transporters_.find(key);
        cached = it != transporters_.end();
        if (cached) return it->second;  // duplicates
    }
    BlobStreaming::BlobTransporter_var opened = bounded(source, options_.call_timeout)->openTransporter();
    omniORB::setClientCallTimeout(opened, static_cast<CORBA::ULong>(options_.call_timeout.count()));
    std::lock_guard lock(mutex_);
    return transporters_.emplace(key, opened)
        .first->second;  // another thread's when it was first: this one is reclaimed by the source
}

void Fetcher::forget_transporter(const std::string& key)
{
    std::lock_guard lock(mutex_);
    transporters_.erase(key);
}

std::string Fetcher::source_name(BlobStreaming::BlobStore_ptr source) { return source_id(source, false).name; }

Fetcher::SourceId Fetcher::source_id(BlobStreaming::BlobStore_ptr source, bool fresh)
{
    const std::string key = endpoint_of(source);
    if (!fresh) {
        std::lock_guard lock(mutex_);
        if (const auto it = sources_.find(key); it != sources_.end()) return it->second;
    }
    const BlobStreaming::BlobStore_var ref = bounded(source, options_.call_timeout);
    CORBA::String_var n = ref->name();
    BlobStreaming::DataEndpoint_var data = ref->dataAddress();
    SourceId id{n.in(), data->host.in(), data->port};
    std::lock_guard lock(mutex_);
    return sources_[key] = id;
}

Fetcher::Holders Fetcher::holders(const std::string& name, const FartherTiers& upstream) const
{
    Holders out;
    struct Candidate {
        BlobStreaming::StoreTier tier;
        std::string store;
        bool holds = true;
    };
    std::vector<Candidate> found;
    std::vector<std::string> stores;
    try {
        stores = list_stores(upstream.naming);
    } catch (...) {
        return out;
    }
    for (const std::string& store : stores) {
        if (store == upstream.own_name) continue;
        try {
            BlobStreaming::BlobStore_var ref = resolve_store(upstream.naming, store, upstream.naming_url);
            omniORB::setClientCallTimeout(ref, static_cast<CORBA::ULong>(options_.call_timeout.count()));
            BlobStreaming::StoreStatus_var status = ref->status();
            if (status->tier <= upstream.own_tier) continue;
            if (!ref->contains(name.c_str())) continue;
            found.push_back({status->tier, store, true});
        } catch (const CORBA::SystemException& e) {
            spdlog::debug("read-through {}: store \"{}\" did not answer: CORBA {}", quote_name(name), store, e._name());
            out.silent.push_back(store);
        } catch (const CORBA::Exception& e) {
            spdlog::debug("read-through {}: store \"{}\" skipped: CORBA {}", quote_name(name), store, e._name());
        } catch (const std::exception& e) {
            spdlog::debug("read-through {}: store \"{}\" skipped: {}", quote_name(name), store, e.what());
        }
    }
    found = nearest(std::move(found));
    for (auto& c : found) out.stores.push_back(std::move(c.store));
    return out;
}

std::pair<BlobStreaming::BlobStore_var, std::string> Fetcher::nearest_holder(const std::string& name,
                                                                             const FartherTiers& upstream) const
{
    const Holders found = holders(name, upstream);
    if (found.stores.empty()) {
        std::string silent;
        for (const auto& s : found.silent) silent += (silent.empty() ? "" : ", ") + s;
        throw Error(Errc::no_such_blob, "no blob named " + quote_name(name) + " in store \"" + upstream.own_name +
                                            "\" nor in any store of a farther tier (read-through" +
                                            (silent.empty() ? std::string() : "; did not answer: " + silent) + ")");
    }
    // The nearest holder; a failure there is the pull's failure (no silent
    // fallback that would hide a broken tier).
    const std::string& nearest = found.stores.front();
    try {
        return {resolve_store(upstream.naming, nearest, upstream.naming_url), nearest};
    } catch (...) {
        rethrow_as_error("read-through " + quote_name(name), nearest, "");
    }
}

BlobInfo Fetcher::fill_from(const std::string& name, const FartherTiers& tiers, FlightTable::Flight& flight)
{
    auto [source, source_name] = nearest_holder(name, tiers);
    return transfer(own_grant(name, source.in(), source_name), ReserveMode::create, flight);
}

void Fetcher::begin(const Grant& grant, ReserveMode mode, const std::string& client)
{
    const std::string name = grant.name();
    bool first = false;
    const std::shared_ptr<Flight> flight = flights_.join(name, first);
    flights_.keep_for(*flight, client);
    if (first)
        flights_.spawn(name, flight, "fetch", [this, grant, mode, flight] { return transfer(grant, mode, *flight); });
    flights_.wait_begun(*flight);
}

BlobInfo Fetcher::await(const std::string& name, const std::string& store_name, const std::string& client)
{
    return flights_.await(name, store_name, client);
}

void Fetcher::stop() noexcept
{
    reader_->stop();  // transfers under way fail (cancelled)
    flights_.stop();
}

}  // namespace blobstreaming::corba
