// StoreService: the files and images offered to processes of this host, and
// how a Blob is held for a reader (read-through, fetches in flight).

#include "StoreService.h"

// The store copier and the image shelf: plain C++ interfaces of the
// servants' folder (the copier is a CORBA client of other stores inside).
#include "servants/Fetcher.h"
#include "servants/ImageShelf.h"

#include <blobstreaming/common/BlobName.h>

#include <spdlog/spdlog.h>

namespace blobstreaming::service {

// Read-through and fetches in flight, as the servants decided them before
// (BlobTransporter_i::pull_binding, BlobStore_i::findLocalFile and
// offered_file), in one place.
StoreService::Holding StoreService::resolve(const std::string& name, Need need) const
{
    if (need == Need::fetched) {
        if (options_.read_through) options_.fetcher->fetch_missing(name, *options_.read_through);
        return {};
    }
    if (need == Need::flight) {
        // A Blob a fetch is bringing here: its committed file (if any) is the
        // version being replaced, and a pull follows the new bytes.
        Holding holding;
        if (options_.fetcher) holding.flight = options_.fetcher->in_flight(name);
        return holding;
    }
    // A Blob this store is receiving (a copy to it, read-through): the
    // pull follows the bytes as they arrive, also when an older version
    // is still here (the next store of a copy chain must get the version
    // this one receives). Read-through: a Blob only a farther tier holds
    // is fetched first.
    corba::Fetcher::Follow follow;
    if (options_.fetcher) follow.flight = options_.fetcher->in_flight(name);
    if (!follow.flight && options_.read_through) {
        follow = options_.fetcher->follow_missing(name, *options_.read_through);
    } else if (!follow.flight) {
        try {
            follow.held = store_.stat(name);
        } catch (const Error& e) {
            // A fetch that began meanwhile.
            if (e.code() != Errc::no_such_blob || !options_.fetcher) throw;
            if (!(follow.flight = options_.fetcher->in_flight(name))) throw;
        }
    }
    Holding holding;
    holding.held = std::move(follow.held);
    holding.flight = std::move(follow.flight);
    return holding;
}

std::optional<Store::LocalFile> StoreService::offered_file(const std::string& name, bool offering) const
{
    if (!offering) {
        store_.stat(name);  // NoSuchBlob still applies
        return std::nullopt;
    }
    if (resolve(name, Need::flight).flight) return std::nullopt;
    auto local = store_.local_file(name);
    // Nothing to map (mmap of 0 bytes fails): use the socket.
    if (!local || local->info.size == 0) return std::nullopt;
    return local;
}

std::optional<Store::LocalFile> StoreService::local_file(const Caller& caller, const std::string& name)
{
    require(caller, server::Permission::read, "findLocalFile");
    validate_blob_name(name);
    resolve(name, Need::fetched);
    return offered_file(name, options_.local_fast_path);
}

std::optional<StoreService::Image> StoreService::share_image(const std::string& name)
{
    validate_blob_name(name);
    const auto local = offered_file(name, options_.images != nullptr);
    if (!local) return std::nullopt;
    std::optional<corba::ImageShelf::Image> made;
    try {
        made = options_.images->image_of(*local);
    } catch (const Error& e) {
        // An image is a shortcut: without one the caller reads the file or
        // the data port, which say what is wrong (a rotted file: exit 24).
        if (e.code() == Errc::digest_mismatch) spdlog::error("shareImage: {}", e.what());
        else spdlog::info("shareImage: {}", e.what());
        return std::nullopt;
    }
    if (!made) return std::nullopt;
    Image image;
    image.fd = made->fd;
    image.inode = made->inode;
    image.info = made->info;
    return image;
}

std::optional<StoreService::Image> StoreService::image(const Caller& caller, const std::string& name)
{
    require(caller, server::Permission::read, "shareImage");
    return share_image(name);
}

std::vector<std::optional<StoreService::Image>> StoreService::images(const Caller& caller,
                                                                     const std::vector<std::string>& names)
{
    require(caller, server::Permission::read, "shareImages");
    check_batch(names.size(), "shareImages", "names");
    std::vector<std::optional<Image>> out(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        try {
            out[i] = share_image(names[i]);
        } catch (...) {
            // shareImage() of that name says why.
        }
    }
    return out;
}

std::optional<Store::LocalFile> StoreService::granted_file(const Caller& caller, const protocol::TicketId& grant,
                                                           std::string& name)
{
    const server::TicketBinding binding = granted(caller, grant, "findGrantedFile");
    name = binding.blob;
    if (binding.follow) return std::nullopt;  // still arriving: the data port follows it
    auto local = offered_file(name, options_.local_fast_path);
    if (!local || !same_version(local->info, *binding.version)) return std::nullopt;
    return local;
}

std::vector<std::optional<StoreService::Image>> StoreService::granted_images(
    const Caller& caller, const std::vector<protocol::TicketId>& grants)
{
    check_batch(grants.size(), "shareGrantedImages", "grants");
    std::vector<std::optional<Image>> out(grants.size());
    for (std::size_t i = 0; i < grants.size(); ++i) {
        try {
            const server::TicketBinding binding = granted(caller, grants[i], "shareGrantedImages");
            if (binding.follow) continue;
            auto image = share_image(binding.blob);
            if (image && same_version(image->info, *binding.version)) out[i] = std::move(image);
        } catch (const std::exception& e) {
            spdlog::debug("shareGrantedImages: {}", e.what());
        }
    }
    return out;
}

}  // namespace blobstreaming::service
