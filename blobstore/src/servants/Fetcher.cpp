#include "Fetcher.h"

#include <blobstreaming/blobstore/Reservation.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/DataIo.h>
#include <blobstreaming/transporter/Protocol.h>
#include <blobstreaming/transporter/Tls.h>
#include <blobstreaming/transporter/corba/ChecksumIdl.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/References.h>

#include <omniORB4/omniORB.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace blobstreaming::corba {
namespace {

/// Bytes asked of the reservation per receive: large enough that a read is
/// a few system calls per MiB, small enough for a FileStore mapping window.
constexpr std::size_t kReceiveChunk = std::size_t{1} << 20;

std::string ms_text(std::chrono::milliseconds ms) { return fmt::format("{:.3f} s", ms.count() / 1000.0); }

/// One data connection to the source's data port, driven by poll() on the
/// calling thread: every wait is bounded by the idle timeout.
class Connection {
public:
    Connection(const std::string& endpoint, const FetchOptions& options, std::string what)
        : endpoint_(endpoint), options_(options), what_(std::move(what))
    {
        const auto colon = endpoint.rfind(':');
        std::string host = endpoint.substr(0, colon);
        const std::string port = endpoint.substr(colon + 1);
        if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0)
            throw Error(Errc::unreachable,
                        what_ + ": cannot resolve data endpoint " + endpoint + ": " + gai_strerror(rc));
        std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
        fd_.reset(::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!fd_) throw Error(Errc::unreachable, what_ + ": cannot create a socket: " + std::strerror(errno));
        if (::connect(fd_.get(), found->ai_addr, found->ai_addrlen) != 0 && errno != EINPROGRESS)
            throw Error(Errc::unreachable,
                        what_ + ": cannot connect to data endpoint " + endpoint + ": " + std::strerror(errno));
        wait(POLLOUT, options_.call_timeout, "connecting");
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0)
            throw Error(Errc::unreachable,
                        what_ + ": cannot connect to data endpoint " + endpoint + ": " + std::strerror(err));
        if (options_.tls) {
            io_ = std::make_unique<Channel>(fd_.get(), *options_.tls, host);
            for (;;) {
                const auto step = io_->handshake();
                if (step == Channel::Handshake::done) break;
                if (step == Channel::Handshake::failed)
                    throw Error(Errc::unreachable, what_ + ": TLS handshake with data endpoint " + endpoint +
                                                       " failed: " + io_->handshake_error());
                wait(step == Channel::Handshake::want_write ? POLLOUT : POLLIN, options_.call_timeout, "TLS handshake");
            }
        } else {
            io_ = std::make_unique<Channel>(fd_.get());
        }
    }

    ~Connection()
    {
        if (io_) io_->close_notify();
    }

    void write_all(const void* data, std::size_t size)
    {
        const auto* p = static_cast<const std::uint8_t*>(data);
        while (size > 0) {
            const IoResult r = write_some(*io_, p, size);
            p += r.bytes();
            size -= r.bytes();
            if (r.failed())
                throw Error(Errc::transfer_failed,
                            what_ + ": sending to data endpoint " + endpoint_ + " failed: " + r.text());
            if (r.blocked()) wait(r.status() == IoResult::Status::want_read ? POLLIN : POLLOUT, options_.idle_timeout);
        }
    }

    /// Up to `size` bytes, at least one. End of stream: transfer_failed.
    std::size_t read_some_bytes(void* data, std::size_t size)
    {
        for (;;) {
            const IoResult r = read_some(*io_, data, size);
            if (r.done()) return r.bytes();
            if (r.eof())
                throw Error(Errc::transfer_failed,
                            what_ + ": data endpoint " + endpoint_ + " closed the connection before the end");
            if (r.failed())
                throw Error(Errc::transfer_failed,
                            what_ + ": receiving from data endpoint " + endpoint_ + " failed: " + r.text());
            wait(r.status() == IoResult::Status::want_write ? POLLOUT : POLLIN, options_.idle_timeout);
        }
    }

    void read_exact(void* data, std::size_t size)
    {
        auto* p = static_cast<std::uint8_t*>(data);
        while (size > 0) {
            const std::size_t n = read_some_bytes(p, size);
            p += n;
            size -= n;
        }
    }

private:
    void wait(short events, std::chrono::milliseconds bound, const char* doing = "waiting for bytes")
    {
        if (events == POLLIN && io_ && io_->pending() > 0) return;
        pollfd p{fd_.get(), events, 0};
        for (;;) {
            const int rc = ::poll(&p, 1, static_cast<int>(bound.count()));
            if (rc > 0) return;  // ready, or an error the next call reports
            if (rc == 0)
                throw Error(Errc::timeout, what_ + ": data endpoint " + endpoint_ + ": no progress within " +
                                               ms_text(bound) + " (" + doing + ")");
            if (errno != EINTR)
                throw Error(Errc::transfer_failed, what_ + ": poll failed: " + std::string(std::strerror(errno)));
        }
    }

    const std::string endpoint_;
    const FetchOptions& options_;
    const std::string what_;
    UniqueFd fd_;
    std::unique_ptr<Channel> io_;
};

protocol::TicketId ticket_id(const BlobStreaming::TicketId id)
{
    protocol::TicketId out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = id[i];
    return out;
}

std::string endpoint_text(const BlobStreaming::DataEndpoint& e)
{
    const std::string host = e.host.in();
    const bool ipv6 = host.find(':') != std::string::npos;
    return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(e.port);
}

}  // namespace

Fetcher::Fetcher(Store& store, FetchOptions options) : store_(store), options_(std::move(options)) {}

BlobInfo Fetcher::fetch(const std::string& name, BlobStreaming::BlobStore_ptr source, const std::string& source_name,
                        ReserveMode mode)
{
    std::shared_ptr<Flight> flight;
    bool first = false;
    {
        std::lock_guard lock(mutex_);
        auto& slot = flights_[name];
        if (!slot) {
            slot = std::make_shared<Flight>();
            first = true;
        }
        flight = slot;
    }
    if (!first) {
        std::unique_lock lock(mutex_);
        landed_.wait(lock, [&] { return flight->done; });
        if (flight->error) std::rethrow_exception(flight->error);
        return *flight->info;
    }
    std::optional<BlobInfo> info;
    std::exception_ptr error;
    try {
        info = transfer(name, source, source_name, mode);
    } catch (...) {
        error = std::current_exception();
    }
    {
        std::lock_guard lock(mutex_);
        flight->done = true;
        flight->info = info;
        flight->error = error;
        flights_.erase(name);
    }
    landed_.notify_all();
    if (error) std::rethrow_exception(error);
    return *info;
}

BlobInfo Fetcher::transfer(const std::string& name, BlobStreaming::BlobStore_ptr source, const std::string& source_name,
                           ReserveMode mode)
{
    const std::string what = "fetch " + quote_name(name) + " from store \"" + source_name + "\"";
    const auto started = std::chrono::steady_clock::now();
    BlobStreaming::TransferTicket_var ticket;
    const std::string source_endpoint = endpoint_of(source);
    BlobStreaming::TimeValue lifetime;
    lifetime.seconds = static_cast<CORBA::ULongLong>(options_.idle_timeout.count() / 1000);
    lifetime.microseconds = 0;
    for (int attempt = 0;; ++attempt) {
        bool cached = false;
        try {
            BlobStreaming::BlobTransporter_var transporter = transporter_of(source, source_endpoint, cached);
            ticket = transporter->send(name.c_str(), 0, 0, true, lifetime, BlobStreaming::IGNORE_NOTIFICATIONS);
            break;
        } catch (const CORBA::OBJECT_NOT_EXIST&) {
            // The source reclaimed the cached transporter (idle too long,
            // or the source restarted): open a new one, once.
            forget_transporter(source_endpoint);
            if (!cached || attempt > 0) rethrow_as_error(what, source_name, source_endpoint);
        } catch (...) {
            forget_transporter(source_endpoint);
            rethrow_as_error(what, source_name, source_endpoint);
        }
    }

    const Checksum expected = checksum_of(ticket->version.checksum, what);
    const std::uint64_t size = ticket->length;
    Connection connection(endpoint_text(ticket->endpoint), options_, what);
    protocol::Request request;
    request.type = protocol::FrameType::pull;
    request.ticket = ticket_id(ticket->id);
    request.offset = 0;
    request.length = size;
    std::uint8_t frame[protocol::kRequestSize];
    protocol::encode(request, frame);
    connection.write_all(frame, sizeof frame);

    std::uint8_t header[protocol::kResponseHeaderSize];
    connection.read_exact(header, sizeof header);
    protocol::Response response;
    std::size_t message_size = 0;
    std::string why;
    if (protocol::decode(header, response, message_size, why))
        throw Error(Errc::protocol_error, what + ": the source's data endpoint answered garbage: " + why);
    if (response.status != Errc::ok) {
        std::string message(std::min(message_size, protocol::kMaxMessageSize), '\0');
        connection.read_exact(message.data(), message.size());
        throw Error(response.status, what + ": the source refused the transfer: " + message);
    }
    if (response.length != size || !response.checksum || !(*response.checksum == expected))
        throw Error(Errc::protocol_error, what + ": the source announced " + std::to_string(response.length) +
                                              " bytes, its ticket " + std::to_string(size));

    auto reservation = store_.reserve(name, size, mode, expected.algorithm);
    std::uint64_t received = 0;
    while (received < size) {
        std::error_code ec;
        const auto window =
            reservation->window(static_cast<std::size_t>(std::min<std::uint64_t>(kReceiveChunk, size - received)), ec);
        if (ec) throw Error(static_cast<Errc>(ec.value()), what + ": " + reservation->error_message());
        const std::size_t n = connection.read_some_bytes(window.data, window.size);
        if (auto advanced = reservation->advance(n))
            throw Error(static_cast<Errc>(advanced.value()), what + ": " + reservation->error_message());
        received += n;
    }
    BlobInfo info;
    try {
        info = reservation->commit(&expected);
    } catch (const Error& e) {
        if (e.code() != Errc::digest_mismatch) throw;
        throw Error(Errc::digest_mismatch, what + ": the bytes received do not match the source's checksum " +
                                               expected.brief() + ": nothing was committed (" + e.what() + ")");
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    spdlog::info("fetched {} ({} bytes, {}) from store \"{}\" in {:.3f} s", quote_name(name), info.size,
                 info.checksum.brief(), source_name, seconds);
    return info;
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
    BlobStreaming::BlobStore_var holder = BlobStreaming::BlobStore::_duplicate(source);
    omniORB::setClientCallTimeout(holder, static_cast<CORBA::ULong>(options_.call_timeout.count()));
    BlobStreaming::BlobTransporter_var opened = holder->openTransporter();
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

std::string Fetcher::source_name(BlobStreaming::BlobStore_ptr source)
{
    const std::string key = endpoint_of(source);
    {
        std::lock_guard lock(mutex_);
        if (const auto it = names_.find(key); it != names_.end()) return it->second;
    }
    BlobStreaming::BlobStore_var bounded = BlobStreaming::BlobStore::_duplicate(source);
    omniORB::setClientCallTimeout(bounded, static_cast<CORBA::ULong>(options_.call_timeout.count()));
    CORBA::String_var n = bounded->name();
    std::lock_guard lock(mutex_);
    return names_[key] = n.in();
}

Fetcher::Holders Fetcher::holders(const std::string& name, const Upstream& upstream) const
{
    Holders out;
    struct Candidate {
        BlobStreaming::StoreTier tier;
        std::string store;
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
            found.push_back({status->tier, store});
        } catch (const CORBA::SystemException& e) {
            spdlog::debug("read-through {}: store \"{}\" did not answer: CORBA {}", quote_name(name), store, e._name());
            out.silent.push_back(store);
        } catch (const CORBA::Exception& e) {
            spdlog::debug("read-through {}: store \"{}\" skipped: CORBA {}", quote_name(name), store, e._name());
        } catch (const std::exception& e) {
            spdlog::debug("read-through {}: store \"{}\" skipped: {}", quote_name(name), store, e.what());
        }
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const Candidate& a, const Candidate& b) { return a.tier < b.tier; });
    for (auto& c : found) out.stores.push_back(std::move(c.store));
    return out;
}

BlobInfo Fetcher::fetch_missing(const std::string& name, const Upstream& upstream)
{
    try {
        return store_.stat(name);
    } catch (const Error& e) {
        if (e.code() != Errc::no_such_blob) throw;
    }
    const Holders found = holders(name, upstream);
    const std::vector<std::string>& holders = found.stores;
    if (holders.empty()) {
        std::string silent;
        for (const auto& s : found.silent) silent += (silent.empty() ? "" : ", ") + s;
        throw Error(Errc::no_such_blob, "no blob named " + quote_name(name) + " in store \"" + upstream.own_name +
                                            "\" nor in any store of a farther tier (read-through" +
                                            (silent.empty() ? std::string() : "; did not answer: " + silent) + ")");
    }
    // The nearest holder; a failure there is the pull's failure (no silent
    // fallback that would hide a broken tier).
    BlobStreaming::BlobStore_var source;
    try {
        source = resolve_store(upstream.naming, holders.front(), upstream.naming_url);
    } catch (...) {
        rethrow_as_error("read-through " + quote_name(name), holders.front(), "");
    }
    try {
        return fetch(name, source.in(), holders.front(), ReserveMode::create);
    } catch (const Error& e) {
        // Another fetch or a push committed it meanwhile: that one serves.
        if (e.code() == Errc::already_exists) return store_.stat(name);
        throw;
    }
}

}  // namespace blobstreaming::corba
