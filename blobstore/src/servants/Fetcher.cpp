#include "Fetcher.h"

#include "BlobInfoIdl.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/blobstore/Reservation.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Host.h>
#include <blobstreaming/common/MappedRegion.h>
#include <blobstreaming/common/UniqueFd.h>
#include <blobstreaming/transporter/DataIo.h>
#include <blobstreaming/transporter/Protocol.h>
#include <blobstreaming/transporter/Tls.h>
#include <blobstreaming/transporter/corba/ChecksumIdl.h>
#include <blobstreaming/transporter/corba/Exceptions.h>
#include <blobstreaming/transporter/corba/NameSeqIdl.h>
#include <blobstreaming/transporter/corba/Orb.h>
#include <blobstreaming/transporter/corba/References.h>

#include <omniORB4/omniORB.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace blobstreaming::corba {
namespace {

/// Bytes asked of the reservation per receive: large enough that a read is
/// a few system calls per MiB, small enough for a FileStore mapping window.
constexpr std::size_t kReceiveChunk = std::size_t{1} << 20;

/// How long the failure of a read-through fetch that pulls followed is
/// the answer to a pull of that Blob: long enough for such a pull to ask
/// why its data connection broke off (PullOperation asks once, at once).
constexpr std::chrono::seconds kFailureMemory{3};
/// Fetches running on threads of their own (read-through, beginFetch) at
/// once, at most.
constexpr std::size_t kMaxThreads = 128;

/// How long await() finds the outcome of a fetch begin() started.
constexpr std::chrono::seconds kOutcomeMemory{60};
/// At most this many such failures, and as many outcomes, are remembered
/// (the oldest forgotten first).
constexpr std::size_t kMaxRemembered = 4096;

/// Data connections to a source kept between fetches: at most this many
/// per source, reused within this time (well inside a store's idle timeout
/// of 60 s, so that the source does not close one as it is reused).
constexpr std::size_t kMaxIdle = 16;
constexpr std::chrono::seconds kIdleReuse{20};

/// How long whether a source offers its files to this host (its status) is
/// taken as known: one round trip per source and minute.
constexpr std::chrono::seconds kLocalRecheck{60};
/// How long an image shareImages() described is used for a fetch of it: the
/// source keeps it 10 s after the request (ImageShelf::kKeep).
constexpr std::chrono::seconds kPreparedFor{5};

/// How soon a fetch waiting for the network notices that the store stops.
constexpr std::chrono::milliseconds kStopSlice{250};

std::string ms_text(std::chrono::milliseconds ms) { return fmt::format("{:.3f} s", ms.count() / 1000.0); }

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

/// One data connection to the source's data port, driven by poll() on the
/// calling thread: every wait is bounded by the idle timeout.
class FetchConnection {
public:
    FetchConnection(const std::string& endpoint, const FetchOptions& options, std::string what,
                    const std::atomic<bool>& stop)
        : endpoint_(endpoint), options_(options), what_(std::move(what)), stop_(stop)
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
        apply_socket_options(fd_.get(), options_.socket, endpoint);
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

    ~FetchConnection()
    {
        if (io_) io_->close_notify();
    }

    /// What its messages name (a pooled connection serves one fetch after
    /// another).
    void use_for(std::string what) { what_ = std::move(what); }

    /// Idle in the pool: false when the source closed it (or sent
    /// anything: between transfers it has nothing to say).
    bool idle_and_open() const
    {
        if (io_->pending() > 0) return false;
        pollfd p{fd_.get(), POLLIN, 0};
        return ::poll(&p, 1, 0) == 0;
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
        const auto until = std::chrono::steady_clock::now() + bound;
        for (;;) {
            if (stop_.load()) throw Error(Errc::cancelled, what_ + ": cancelled: the store is shutting down");
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
            if (left.count() <= 0)
                throw Error(Errc::timeout, what_ + ": data endpoint " + endpoint_ + ": no progress within " +
                                               ms_text(bound) + " (" + doing + ")");
            // In slices, so that a stopping store is not held up by a stall.
            const int rc = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), kStopSlice.count())));
            if (rc > 0) return;  // ready, or an error the next call reports
            if (rc < 0 && errno != EINTR)
                throw Error(Errc::transfer_failed, what_ + ": poll failed: " + std::string(std::strerror(errno)));
        }
    }

    const std::string endpoint_;
    const FetchOptions& options_;
    std::string what_;
    const std::atomic<bool>& stop_;
    UniqueFd fd_;
    std::unique_ptr<Channel> io_;
};

Fetcher::Fetcher(Store& store, FetchOptions options)
    : store_(store), options_(std::move(options)), failures_(kFailureMemory, kMaxRemembered),
      outcomes_(kOutcomeMemory, kMaxRemembered)
{}

Fetcher::~Fetcher() = default;

std::unique_ptr<FetchConnection> Fetcher::connection_to(const std::string& endpoint, const std::string& what,
                                                        bool& reused)
{
    {
        std::lock_guard lock(mutex_);
        auto& idle = idle_[endpoint];
        const auto now = std::chrono::steady_clock::now();
        while (!idle.empty()) {
            Idle last = std::move(idle.back());
            idle.pop_back();
            if (now - last.since < kIdleReuse && last.connection->idle_and_open()) {
                reused = true;
                last.connection->use_for(what);
                return std::move(last.connection);
            }
        }
    }
    reused = false;
    return std::make_unique<FetchConnection>(endpoint, options_, what, stop_requested_);
}

void Fetcher::give_back(const std::string& endpoint, std::unique_ptr<FetchConnection> connection)
{
    std::lock_guard lock(mutex_);
    auto& idle = idle_[endpoint];
    if (idle.size() < kMaxIdle && !stopping_) idle.push_back({std::chrono::steady_clock::now(), std::move(connection)});
}

std::shared_ptr<Fetcher::Flight> Fetcher::join_flight(const std::string& name, bool& first)
{
    std::lock_guard lock(mutex_);
    auto& slot = flights_[name];
    first = !slot;
    if (first) {
        if (stopping_) {
            flights_.erase(name);
            throw Error(Errc::cancelled, "fetch " + quote_name(name) + ": the store is shutting down");
        }
        slot = std::make_shared<Flight>();
    }
    return slot;
}

void Fetcher::land(const std::string& name, Flight& flight, std::optional<BlobInfo> info, std::exception_ptr error)
{
    {
        std::lock_guard lock(mutex_);
        flight.done = true;
        flight.info = std::move(info);
        flight.error = std::move(error);
        flights_.erase(name);
        if (flight.keep) {  // for await()
            outcomes_.record(name, {flight.info, flight.error});
        }
    }
    landed_.notify_all();
}

BlobInfo Fetcher::fetch(const std::string& name, BlobStreaming::BlobStore_ptr source, const std::string& source_name,
                        ReserveMode mode)
{
    bool first = false;
    const std::shared_ptr<Flight> flight = join_flight(name, first);
    if (!first) {
        std::unique_lock lock(mutex_);
        landed_.wait(lock, [&] { return flight->done; });
        if (flight->error) std::rethrow_exception(flight->error);
        return *flight->info;
    }
    std::optional<BlobInfo> info;
    std::exception_ptr error;
    try {
        info = transfer(name, source, source_name, mode, *flight);
    } catch (...) {
        error = std::current_exception();
    }
    land(name, *flight, info, error);
    if (error) std::rethrow_exception(error);
    return *info;
}

struct Fetcher::LocalSource {
    UniqueFd fd;
    std::string path;
    std::uint64_t data_offset = 0;
    BlobInfo info;
};

std::optional<Fetcher::LocalSource> Fetcher::local_source(const std::string& name, BlobStreaming::BlobStore_ptr source,
                                                          const std::string& source_name, const std::string& key,
                                                          const std::string& what)
{
    if (!offers_files(source, key)) return std::nullopt;
    BlobStreaming::LocalFile_var file;
    bool offered = false;
    try {
        offered = bounded(source)->findLocalFile(name.c_str(), file.out());
    } catch (...) {
        rethrow_as_error(what, source_name, key);
    }
    // Not this one (an empty Blob, or one still arriving there, whose pull
    // follows the bytes): the data port serves it.
    if (!offered || !on_this_host(file->host.in())) return std::nullopt;
    LocalSource out;
    out.path = file->path.in();
    out.data_offset = file->dataOffset;
    out.info = from_idl(file->info, what);
    // O_NONBLOCK: a path that names a FIFO must not hold the fetch (for a
    // regular file it changes nothing).
    out.fd.reset(::open(out.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!out.fd) {
        const int error = errno;
        spdlog::info("{}: cannot open the source's file {} ({}): through its data port", what, out.path,
                     std::strerror(error));
        // This daemon may not read the source's files (another user): its
        // data port serves, now and for a while. Any other reason (the Blob
        // removed or replaced just now) concerns this Blob only.
        if (error == EACCES || error == EPERM) {
            std::lock_guard lock(mutex_);
            offers_[key] = {false, std::chrono::steady_clock::now() + kLocalRecheck};
        }
        return std::nullopt;
    }
    // The path names whatever version was committed last: the open file
    // must be the one the source described (else it was replaced just now,
    // and the data port serves the version it holds).
    struct stat st {};
    if (::fstat(out.fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::uint64_t>(st.st_size) < out.data_offset + out.info.size) {
        spdlog::info("{}: {} is not a file of the Blob's size: through its data port", what, out.path);
        return std::nullopt;
    }
    std::string why;
    const auto held = FileStore::file_info(out.fd.get(), why);
    if (!held || !same_version(*held, out.info)) {
        spdlog::debug("{}: the source's file {} no longer holds {}: through its data port", what, out.path,
                      describe_version(out.info));
        return std::nullopt;
    }
    return out;
}

bool Fetcher::images_open(BlobStreaming::BlobStore_ptr source, const std::string& key)
{
    {
        std::lock_guard lock(mutex_);
        if (const auto it = no_images_.find(key);
            it != no_images_.end() && std::chrono::steady_clock::now() < it->second)
            return false;
    }
    return offers_files(source, key);
}

Fetcher::ImageRef Fetcher::image_ref(const BlobStreaming::SharedImage& image, const std::string& what)
{
    return ImageRef{image.host.in(), image.pid, image.fd, image.inode, from_idl(image.info, what)};
}

void Fetcher::prepare_images(const std::vector<std::string>& names, BlobStreaming::BlobStore_ptr source)
{
    if (!options_.local || !store_.adopts_images() || names.empty()) return;
    const std::string key = endpoint_of(source);
    if (!images_open(source, key)) return;
    BlobStreaming::SharedImageSeq_var got;
    try {
        got = bounded(source)->shareImages(to_name_seq(names));
    } catch (const CORBA::Exception& e) {
        // Each fetch asks for its own image, and says why it cannot.
        spdlog::debug("shareImages of {} Blobs from the store at {}: CORBA {}", names.size(), key, e._name());
        return;
    }
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    for (auto it = prepared_.begin(); it != prepared_.end();)
        it = now < it->second.until ? std::next(it) : prepared_.erase(it);
    for (CORBA::ULong i = 0; i < got->length() && i < names.size(); ++i) {
        if (got[i].fd < 0) continue;
        try {
            prepared_[key + '\n' + names[i]] = {image_ref(got[i], "shareImages"), now + kPreparedFor};
        } catch (const Error&) {
            // A checksum this daemon cannot read: that fetch asks again.
        }
    }
}

std::optional<Fetcher::ImageRef> Fetcher::take_prepared(const std::string& key, const std::string& name)
{
    std::lock_guard lock(mutex_);
    const auto it = prepared_.find(key + '\n' + name);
    if (it == prepared_.end()) return std::nullopt;
    std::optional<ImageRef> out;
    if (std::chrono::steady_clock::now() < it->second.until) out = std::move(it->second.image);
    prepared_.erase(it);
    return out;
}

struct Fetcher::SharedSource {
    std::shared_ptr<const std::uint8_t> bytes;
    BlobInfo info;
};

std::optional<Fetcher::SharedSource> Fetcher::shared_image(const std::string& name, BlobStreaming::BlobStore_ptr source,
                                                           const std::string& source_name, const std::string& key,
                                                           const std::string& what)
{
    if (!images_open(source, key)) return std::nullopt;
    std::optional<ImageRef> image = take_prepared(key, name);
    if (!image) {
        BlobStreaming::SharedImage_var got;
        bool offered = false;
        try {
            offered = bounded(source)->shareImage(name.c_str(), got.out());
        } catch (...) {
            rethrow_as_error(what, source_name, key);
        }
        if (!offered) return std::nullopt;
        image = image_ref(got.in(), what);
    }
    if (!on_this_host(image->host)) return std::nullopt;
    SharedSource out;
    out.info = image->info;
    const std::string path = "/proc/" + std::to_string(image->pid) + "/fd/" + std::to_string(image->fd);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!fd) {
        const int error = errno;
        spdlog::info("{}: cannot open the source's image {} ({}): its file instead", what, path, std::strerror(error));
        // Not allowed to read that process (another user, a hardened
        // daemon): not again for a while. Any other reason (the image
        // dropped just now) concerns this Blob only.
        if (error == EACCES || error == EPERM) {
            std::lock_guard lock(mutex_);
            no_images_[key] = std::chrono::steady_clock::now() + kLocalRecheck;
        }
        return std::nullopt;
    }
    // The descriptor number may have been reused since the source answered
    // (the image dropped, another one made): the inode says which it is.
    // The seals say that nobody can shorten or change it while it is mapped
    // here (no SIGBUS, no bytes changing after the checksum).
    struct stat st {};
    const int seals = ::fcntl(fd.get(), F_GET_SEALS);
    constexpr int kSealed = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_ino) != image->inode ||
        static_cast<std::uint64_t>(st.st_size) != out.info.size || seals < 0 || (seals & kSealed) != kSealed) {
        spdlog::info("{}: {} is not the sealed image the source described: its file instead", what, path);
        return std::nullopt;
    }
    std::error_code ec;
    auto region =
        std::make_shared<MappedRegion>(MappedRegion::of_file(fd.get(), 0, static_cast<std::size_t>(out.info.size), ec));
    if (ec) {
        spdlog::info("{}: cannot map the source's image {} ({}): its file instead", what, path, ec.message());
        return std::nullopt;
    }
    out.bytes = std::shared_ptr<const std::uint8_t>(region, region->data());
    return out;
}

BlobStreaming::BlobStore_var Fetcher::bounded(BlobStreaming::BlobStore_ptr source) const
{
    BlobStreaming::BlobStore_var ref = BlobStreaming::BlobStore::_duplicate(source);
    omniORB::setClientCallTimeout(ref, static_cast<CORBA::ULong>(options_.call_timeout.count()));
    return ref;
}

bool Fetcher::offers_files(BlobStreaming::BlobStore_ptr source, const std::string& key)
{
    const auto now = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(mutex_);
        if (const auto it = offers_.find(key); it != offers_.end() && now < it->second.until) return it->second.offers;
    }
    bool offers = false;
    try {
        BlobStreaming::StoreStatus_var status = bounded(source)->status();
        offers = status->localFiles && on_this_host(status->host.in());
    } catch (const CORBA::Exception& e) {
        // An older store (no such field), or one not answering: its data
        // port is asked next, and says why.
        spdlog::debug("store at {}: status failed (CORBA {}): its files are not read here", key, e._name());
    }
    std::lock_guard lock(mutex_);
    offers_[key] = {offers, now + kLocalRecheck};
    return offers;
}

BlobInfo Fetcher::transfer(const std::string& name, BlobStreaming::BlobStore_ptr source, const std::string& source_name,
                           ReserveMode mode, Flight& flight)
{
    const std::string what = "fetch " + quote_name(name) + " from store \"" + source_name + "\"";
    const auto started = std::chrono::steady_clock::now();
    const std::string source_endpoint = endpoint_of(source);
    const auto done = [&](const BlobInfo& info, const char* how) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        spdlog::info("fetched {} ({} bytes, {}) from store \"{}\" in {:.3f} s{}", quote_name(name), info.size,
                     info.checksum.brief(), source_name, seconds, how);
        return info;
    };

    if (options_.local && store_.adopts_images()) {
        if (auto image = shared_image(name, source, source_name, source_endpoint, what)) {
            const std::string from = what + " (its image on this host)";
            const std::uint8_t* bytes = image->bytes.get();
            std::uint64_t at = 0;
            const BlobInfo info = receive(
                name, image->info.size, image->info.checksum, mode, flight, from,
                [&](std::uint8_t* data, std::size_t n) {  // a store that copied instead of adopting
                    std::memcpy(data, bytes + at, n);
                    at += n;
                    return n;
                },
                [] {}, image->bytes);
            return done(info, " (its image on this host)");
        }
    }
    if (options_.local) {
        if (auto file = local_source(name, source, source_name, source_endpoint, what)) {
            const std::string from = what + " (its file " + file->path + " on this host)";
            std::uint64_t at = file->data_offset;
            const int fd = file->fd.get();
            const BlobInfo info = receive(
                name, file->info.size, file->info.checksum, mode, flight, from,
                [&](std::uint8_t* data, std::size_t n) {
                    for (;;) {
                        const ssize_t r = ::pread(fd, data, n, static_cast<off_t>(at));
                        if (r < 0 && errno == EINTR) continue;
                        if (r <= 0)
                            throw Error(Errc::io_error, from + ": cannot read it: " +
                                                            (r < 0 ? std::strerror(errno) : "it ended early"));
                        at += static_cast<std::uint64_t>(r);
                        return static_cast<std::size_t>(r);
                    }
                },
                [] {});
            return done(info, " (its file on this host)");
        }
    }

    BlobStreaming::TransferTicket_var ticket;
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
    const std::string data_endpoint = endpoint_text(ticket->endpoint);
    protocol::Request request;
    request.type = protocol::FrameType::pull;
    request.ticket = ticket_id(ticket->id);
    request.offset = 0;
    request.length = size;
    std::uint8_t frame[protocol::kRequestSize];
    protocol::encode(request, frame);
    std::uint8_t header[protocol::kResponseHeaderSize];
    std::unique_ptr<FetchConnection> pooled;
    for (;;) {
        bool reused = false;
        pooled = connection_to(data_endpoint, what, reused);
        try {
            pooled->write_all(frame, sizeof frame);
            pooled->read_exact(header, sizeof header);
            break;
        } catch (const Error& e) {
            // A kept connection the source closed just now: the Request
            // never reached it (the ticket is unused), so a new one.
            if (!reused || e.code() != Errc::transfer_failed) throw;
        }
    }
    FetchConnection& connection = *pooled;
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

    return done(receive(
                    name, size, expected, mode, flight, what,
                    [&](std::uint8_t* data, std::size_t n) { return connection.read_some_bytes(data, n); },
                    [&] { give_back(data_endpoint, std::move(pooled)); }),  // ready for the next fetch
                "");
}

BlobInfo Fetcher::receive(const std::string& name, std::uint64_t size, const Checksum& expected, ReserveMode mode,
                          Flight& flight, const std::string& what,
                          const std::function<std::size_t(std::uint8_t*, std::size_t)>& read,
                          const std::function<void()>& all_read, std::shared_ptr<const std::uint8_t> image)
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
    {
        std::lock_guard lock(mutex_);
        flight.progress = progress;
    }
    landed_.notify_all();
    BlobInfo info;
    try {
        std::uint64_t received = 0;
        // A sealed image the source verified after sealing: these very bytes
        // were checked against `expected`, and cannot change since.
        if (image && reservation->adopt(std::move(image), &expected)) {
            received = size;
            progress->landed(received);
        }
        while (received < size) {
            std::error_code ec;
            const auto window = reservation->window(
                static_cast<std::size_t>(std::min<std::uint64_t>(kReceiveChunk, size - received)), ec);
            if (ec) throw Error(static_cast<Errc>(ec.value()), what + ": " + reservation->error_message());
            const std::size_t n = read(window.data, window.size);
            if (auto advanced = reservation->advance(n))
                throw Error(static_cast<Errc>(advanced.value()), what + ": " + reservation->error_message());
            received += n;
            progress->landed(received);
        }
        all_read();
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

BlobStreaming::BlobTransporter_var Fetcher::transporter_of(BlobStreaming::BlobStore_ptr source, const std::string& key,
                                                           bool& cached)
{
    {
        std::lock_guard lock(mutex_);
        const auto it = transporters_.find(key);
        cached = it != transporters_.end();
        if (cached) return it->second;  // duplicates
    }
    BlobStreaming::BlobTransporter_var opened = bounded(source)->openTransporter();
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
    CORBA::String_var n = bounded(source)->name();
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

std::pair<BlobStreaming::BlobStore_var, std::string> Fetcher::nearest_holder(const std::string& name,
                                                                             const Upstream& upstream) const
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

BlobInfo Fetcher::fetch_missing(const std::string& name, const Upstream& upstream)
{
    try {
        return store_.stat(name);
    } catch (const Error& e) {
        if (e.code() != Errc::no_such_blob) throw;
    }
    auto [source, source_name] = nearest_holder(name, upstream);
    try {
        return fetch(name, source.in(), source_name, ReserveMode::create);
    } catch (const Error& e) {
        // Another fetch or a push committed it meanwhile: that one serves.
        if (e.code() == Errc::already_exists) return store_.stat(name);
        throw;
    }
}

std::shared_ptr<BlobInFlight> Fetcher::in_flight(const std::string& name) const
{
    std::lock_guard lock(mutex_);
    const auto it = flights_.find(name);
    if (it == flights_.end() || it->second->done || !it->second->progress) return nullptr;
    return it->second->progress->receiving() ? it->second->progress : nullptr;
}

Fetcher::Follow Fetcher::follow_missing(const std::string& name, const Upstream& upstream)
{
    try {
        return {store_.stat(name), nullptr};
    } catch (const Error& e) {
        if (e.code() != Errc::no_such_blob) throw;
    }
    {
        // A fetch of it that failed a moment ago: its reason, not another
        // fetch (a pull that followed it asks once why it broke off).
        std::lock_guard lock(mutex_);
        if (const std::exception_ptr* failed = failures_.find(name)) std::rethrow_exception(*failed);
    }
    bool first = false;
    const std::shared_ptr<Flight> flight = join_flight(name, first);
    if (first) {
        spawn(name, flight, "read-through", [this, name, up = &upstream, flight] {
            auto [source, source_name] = nearest_holder(name, *up);
            try {
                return transfer(name, source.in(), source_name, ReserveMode::create, *flight);
            } catch (const Error& e) {
                // Another fetch or a push committed it meanwhile: that one
                // serves the pulls still to come (those following this
                // one have failed).
                if (e.code() == Errc::already_exists) return store_.stat(name);
                throw;
            }
        });
    }
    if (auto progress = wait_begun(*flight)) return {std::nullopt, std::move(progress)};
    std::lock_guard lock(mutex_);
    return {flight->info, nullptr};
}

std::shared_ptr<BlobInFlight> Fetcher::wait_begun(Flight& flight)
{
    std::unique_lock lock(mutex_);
    landed_.wait(lock, [&] { return flight.done || flight.progress; });
    if (!flight.done) return flight.progress;
    if (flight.error) std::rethrow_exception(flight.error);
    return nullptr;
}

void Fetcher::spawn(const std::string& name, std::shared_ptr<Flight> flight, const char* what,
                    std::function<BlobInfo()> work)
{
    std::size_t running = 0;
    {
        std::lock_guard lock(mutex_);
        running = threads_;
        if (running < kMaxThreads) ++threads_;
    }
    if (running >= kMaxThreads) {
        const Error busy(Errc::limit_reached, std::string(what) + " " + quote_name(name) + ": " +
                                                  std::to_string(running) +
                                                  " fetches are running at this store, the limit; try again");
        land(name, *flight, std::nullopt, std::make_exception_ptr(busy));  // and whoever joined it meanwhile
        throw busy;
    }
    try {
        std::thread([this, name, flight, what, work = std::move(work)] { run(name, flight, what, work); }).detach();
    } catch (const std::system_error& e) {
        const Error failed(Errc::limit_reached,
                           std::string(what) + " " + quote_name(name) + ": cannot start a fetch thread: " + e.what());
        land(name, *flight, std::nullopt, std::make_exception_ptr(failed));
        {
            std::lock_guard lock(mutex_);
            --threads_;
        }
        threads_ended_.notify_all();
        throw failed;
    }
}

void Fetcher::run(const std::string& name, const std::shared_ptr<Flight>& flight, const char* what,
                  const std::function<BlobInfo()>& work) noexcept
{
    std::optional<BlobInfo> info;
    std::exception_ptr error;
    try {
        info = work();
    } catch (const std::exception& e) {
        error = std::current_exception();
        spdlog::warn("{} {}: {}", what, quote_name(name), e.what());
    } catch (...) {
        error = std::current_exception();
    }
    land(name, *flight, info, error);
    std::unique_lock lock(mutex_);
    if (error && flight->progress && !flight->keep) remember_failure(name, error);
    --threads_;
    // Wakes stop() only once this thread no longer touches the Fetcher.
    std::notify_all_at_thread_exit(threads_ended_, std::move(lock));
}

void Fetcher::begin(const std::string& name, BlobStreaming::BlobStore_ptr source, const std::string& source_name,
                    ReserveMode mode)
{
    bool first = false;
    const std::shared_ptr<Flight> flight = join_flight(name, first);
    {
        std::lock_guard lock(mutex_);
        flight->keep = true;
    }
    if (first) {
        BlobStreaming::BlobStore_var held = BlobStreaming::BlobStore::_duplicate(source);
        spawn(name, flight, "fetch", [this, name, held, source_name, mode, flight] {
            return transfer(name, held.in(), source_name, mode, *flight);
        });
    }
    wait_begun(*flight);
}

BlobInfo Fetcher::await(const std::string& name, const std::string& store_name)
{
    std::unique_lock lock(mutex_);
    if (const auto it = flights_.find(name); it != flights_.end()) {
        const std::shared_ptr<Flight> flight = it->second;
        landed_.wait(lock, [&] { return flight->done; });
        if (flight->error) std::rethrow_exception(flight->error);
        return *flight->info;
    }
    const Outcome* outcome = outcomes_.find(name);
    if (!outcome)
        throw Error(Errc::no_such_blob, "await fetch " + quote_name(name) + ": no fetch of it began at store \"" +
                                            store_name + "\" within the last " +
                                            std::to_string(kOutcomeMemory.count()) + " s");
    if (outcome->error) std::rethrow_exception(outcome->error);
    return *outcome->info;
}

void Fetcher::remember_failure(const std::string& name, std::exception_ptr error)
{
    failures_.record(name, std::move(error));
}

void Fetcher::stop() noexcept
{
    stop_requested_.store(true);
    std::unique_lock lock(mutex_);
    stopping_ = true;
    idle_.clear();  // kept data connections closed
    threads_ended_.wait(lock, [&] { return threads_ == 0; });
}

}  // namespace blobstreaming::corba
