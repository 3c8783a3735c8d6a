// StoreService: the files and images offered to processes of this host, and
// the version a reader is served (ReadThroughStore: fills in flight,
// read-through).

#include "StoreService.h"

// The image shelf: a plain C++ interface of the servants' folder.
#include "servants/ImageShelf.h"

#include <blobstreaming/blobstore/ReadThroughStore.h>

#include <blobstreaming/common/BlobName.h>

#include <spdlog/spdlog.h>

namespace blobstreaming::service {

BlobInfo StoreService::held_version(const std::string& name) const
{
    // A Blob this store is receiving (a copy to it, read-through) is the
    // version being received, also when an older version is still here
    // (the next store of a copy chain must get the version this one
    // receives), and the data port's read follows its bytes as they
    // arrive. Read-through: the fill of a Blob only a farther tier holds
    // begins here.
    return options_.read_through ? options_.read_through->holding(name).version : store_.stat(name);
}

std::optional<Store::LocalFile> StoreService::offered_file(const std::string& name, bool offering) const
{
    if (!offering) {
        store_.stat(name);  // NoSuchBlob still applies
        return std::nullopt;
    }
    // A Blob a fill is bringing here: none (ReadThroughStore::local_file),
    // its committed file (if any) being the version replaced; a pull
    // follows the new bytes.
    auto local = store_.local_file(name);
    // Nothing to map (mmap of 0 bytes fails): use the socket.
    if (!local || local->info.size == 0) return std::nullopt;
    return local;
}

std::optional<Store::LocalFile> StoreService::local_file(const Caller& caller, const std::string& name)
{
    require(caller, server::Permission::read, "findLocalFile");
    validate_blob_name(name);
    if (options_.read_through) options_.read_through->fill_and_wait(name);
    return offered_file(name, options_.local_fast_path);
}

std::vector<std::optional<Store::LocalFile>> StoreService::local_files(const Caller& caller,
                                                                      const std::vector<std::string>& names)
{
    require(caller, server::Permission::read, "findLocalFiles");
    check_batch(names.size(), "findLocalFiles", "names");
    std::vector<std::optional<Store::LocalFile>> out(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        try {
            validate_blob_name(names[i]);
            if (options_.read_through) options_.read_through->fill_and_wait(names[i]);
            out[i] = offered_file(names[i], options_.local_fast_path);
        } catch (const std::exception& e) {
            // findLocalFile() of that name says why.
            spdlog::debug("findLocalFiles: {}: {}", quote_name(names[i]), e.what());
        }
    }
    return out;
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
    // A grant of a Blob still arriving names the version being received
    // (no commit time): no file matches it, and the data port follows it.
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
            auto image = share_image(binding.blob);
            if (image && same_version(image->info, *binding.version)) out[i] = std::move(image);
        } catch (const std::exception& e) {
            spdlog::debug("shareGrantedImages: {}", e.what());
        }
    }
    return out;
}

}  // namespace blobstreaming::service
