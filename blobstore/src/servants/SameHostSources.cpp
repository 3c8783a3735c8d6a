#include "SameHostSources.h"

#include <blobstreaming/transporter/corba/BlobInfoIdl.h>

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Host.h>
#include <blobstreaming/transporter/corba/ChecksumIdl.h>
#include <blobstreaming/transporter/corba/Exceptions.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace blobstreaming::corba {

namespace {

/// How long whether a source offers its files to this host (its status) is
/// taken as known: one round trip per source and minute.
constexpr std::chrono::seconds kLocalRecheck{60};
/// How long an image shareGrantedImages() described is used for a fetch of
/// it: the source keeps it 10 s after the request (ImageShelf::kKeep).
constexpr std::chrono::seconds kPreparedFor{5};

}  // namespace

SameHostSources::SameHostSources(std::chrono::milliseconds call_timeout) : call_timeout_(call_timeout) {}

std::optional<SameHostSources::File> SameHostSources::file(const Grant& grant, const std::string& what)
{
    const std::string& key = grant.key;
    if (!offers_files(grant.source.in(), key)) return std::nullopt;
    BlobStreaming::LocalFile_var file;
    bool offered = false;
    try {
        BlobStreaming::TicketId id;
        to_idl_id(grant.ticket, id);
        offered = bounded(grant.source.in(), call_timeout_)->findGrantedFile(id, file.out());
    } catch (...) {
        rethrow_as_error(what, grant.source_name, key);
    }
    // Not this one (an empty Blob, or one still arriving there, whose pull
    // follows the bytes): the data port serves it.
    if (!offered || !on_this_host(file->host.in())) return std::nullopt;
    File out;
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
    if (!held || !same_version(*held, out.info) || !same_version(out.info, *grant.ticket.version)) {
        spdlog::debug("{}: the source's file {} no longer holds {}: through its data port", what, out.path,
                      describe_version(out.info));
        return std::nullopt;
    }
    return out;
}

bool SameHostSources::images_open(BlobStreaming::BlobStore_ptr source, const std::string& key)
{
    {
        std::lock_guard lock(mutex_);
        if (const auto it = no_images_.find(key);
            it != no_images_.end() && std::chrono::steady_clock::now() < it->second)
            return false;
    }
    return offers_files(source, key);
}

SameHostSources::ImageRef SameHostSources::image_ref(const BlobStreaming::SharedImage& image, const std::string& what)
{
    return ImageRef{image.host.in(), image.pid, image.fd, image.inode, from_idl(image.info, what)};
}

void SameHostSources::prepare_images(const std::vector<Grant>& grants)
{
    if (grants.empty()) return;
    const Grant& first = grants.front();
    if (!images_open(first.source.in(), first.key)) return;
    BlobStreaming::TicketIdSeq ids;
    ids.length(static_cast<CORBA::ULong>(grants.size()));
    for (CORBA::ULong i = 0; i < ids.length(); ++i) to_idl_id(grants[i].ticket, ids[i]);
    BlobStreaming::SharedImageSeq_var got;
    try {
        got = bounded(first.source.in(), call_timeout_)->shareGrantedImages(ids);
    } catch (const CORBA::Exception& e) {
        // Each fetch asks for its own image, and says why it cannot.
        spdlog::debug("shareGrantedImages of {} Blobs from the store at {}: CORBA {}", grants.size(), first.key,
                      e._name());
        return;
    }
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    for (auto it = prepared_.begin(); it != prepared_.end();)
        it = now < it->second.until ? std::next(it) : prepared_.erase(it);
    for (CORBA::ULong i = 0; i < got->length() && i < grants.size(); ++i) {
        if (got[i].fd < 0) continue;
        try {
            prepared_[ticket_tag(grants[i].ticket)] = {image_ref(got[i], "shareGrantedImages"), now + kPreparedFor};
        } catch (const Error&) {
            // A checksum this daemon cannot read: that fetch asks again.
        }
    }
}

std::optional<SameHostSources::ImageRef> SameHostSources::take_prepared(const Grant& grant)
{
    std::lock_guard lock(mutex_);
    const auto it = prepared_.find(ticket_tag(grant.ticket));
    if (it == prepared_.end()) return std::nullopt;
    std::optional<ImageRef> out;
    if (std::chrono::steady_clock::now() < it->second.until) out = std::move(it->second.image);
    prepared_.erase(it);
    return out;
}

std::optional<SameHostSources::Image> SameHostSources::image(const Grant& grant, const std::string& what)
{
    const std::string& key = grant.key;
    if (!images_open(grant.source.in(), key)) return std::nullopt;
    std::optional<ImageRef> image = take_prepared(grant);
    if (!image) {
        BlobStreaming::SharedImageSeq_var got;
        try {
            BlobStreaming::TicketIdSeq ids;
            ids.length(1);
            to_idl_id(grant.ticket, ids[0]);
            got = bounded(grant.source.in(), call_timeout_)->shareGrantedImages(ids);
        } catch (...) {
            rethrow_as_error(what, grant.source_name, key);
        }
        if (got->length() != 1 || got[0].fd < 0) return std::nullopt;
        image = image_ref(got[0], what);
    }
    if (!on_this_host(image->host) || !same_version(image->info, *grant.ticket.version)) return std::nullopt;
    Image out;
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

bool SameHostSources::offers_files(BlobStreaming::BlobStore_ptr source, const std::string& key)
{
    const auto now = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(mutex_);
        if (const auto it = offers_.find(key); it != offers_.end() && now < it->second.until) return it->second.offers;
    }
    bool offers = false;
    try {
        BlobStreaming::StoreStatus_var status = bounded(source, call_timeout_)->status();
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

}  // namespace blobstreaming::corba
