#include "servants/ImageShelf.h"

#include "service/StoreService.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE ImageShelf
#include <boost/test/unit_test.hpp>

#include "ServerTestSupport.h"
#include "TestSupport.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

using namespace blobstreaming;
using namespace blobstreaming::corba;
using namespace std::chrono_literals;

using blobstreaming::server::test::message_of;
using blobstreaming::test::random_bytes;
using blobstreaming::test::TempDir;

namespace {

struct Fixture {
    BlobInfo put(const std::string& name, const std::vector<std::uint8_t>& bytes,
                 ReserveMode mode = ReserveMode::create)
    {
        auto r = store.reserve(name, bytes.size(), mode);
        BOOST_REQUIRE(!r->write(bytes.data(), bytes.size()));
        return r->commit();
    }

    std::vector<std::uint8_t> read_fd(int fd, std::size_t n)
    {
        std::vector<std::uint8_t> out(n);
        BOOST_REQUIRE_EQUAL(::pread(fd, out.data(), n, 0), static_cast<ssize_t>(n));
        return out;
    }

    TempDir dir;
    FileStore store{dir.path()};
    ImageShelf shelf;
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(an_image_holds_the_blobs_bytes_sealed_and_is_kept, Fixture)
{
    const auto bytes = random_bytes(100000, 7);
    put("CT.1", bytes);
    const auto file = store.local_file("CT.1");
    BOOST_REQUIRE(file);
    const auto image = shelf.image_of(*file);
    BOOST_REQUIRE(image);
    BOOST_CHECK(same_version(image->info, file->info));
    BOOST_CHECK(read_fd(image->fd, bytes.size()) == bytes);
    const int seals = ::fcntl(image->fd, F_GET_SEALS);
    BOOST_CHECK_EQUAL(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL),
                      F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    // Asked again within kKeep: the same image.
    const auto again = shelf.image_of(*file);
    BOOST_REQUIRE(again);
    BOOST_CHECK_EQUAL(again->fd, image->fd);
    BOOST_CHECK_EQUAL(again->inode, image->inode);
}

BOOST_FIXTURE_TEST_CASE(no_image_of_an_empty_blob, Fixture)
{
    put("empty", {});
    Store::LocalFile file;
    file.path = dir.path() / "nowhere";
    file.info = store.stat("empty");
    BOOST_CHECK(!shelf.image_of(file));
}

BOOST_FIXTURE_TEST_CASE(a_replaced_blob_is_not_imaged_as_the_old_version, Fixture)
{
    put("CT.1", random_bytes(10, 1));
    const auto old_file = store.local_file("CT.1");
    BOOST_REQUIRE(old_file);
    put("CT.1", random_bytes(10, 2), ReserveMode::replace);
    const auto fresh = store.local_file("CT.1");
    BOOST_REQUIRE(fresh);
    BOOST_REQUIRE(fresh->path == old_file->path);  // the new version renamed over the old file
    const std::string msg = message_of([&] { shelf.image_of(*old_file); }, Errc::blob_changed, "none");
    BOOST_CHECK_MESSAGE(msg.find("image of \"CT.1\": ") == 0 && msg.find(" no longer holds ") != std::string::npos,
                        msg);
}

BOOST_FIXTURE_TEST_CASE(a_rotted_file_is_not_shared, Fixture)
{
    const auto info = put("CT.1", random_bytes(4096, 3));
    const auto file = store.local_file("CT.1");
    BOOST_REQUIRE(file);
    std::filesystem::permissions(file->path, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
    {
        const int fd = ::open(file->path.c_str(), O_WRONLY | O_CLOEXEC);
        BOOST_REQUIRE(fd >= 0);
        const std::uint8_t flipped = 0xff;
        BOOST_REQUIRE_EQUAL(::pwrite(fd, &flipped, 1, static_cast<off_t>(file->data_offset + 100)), 1);
        ::close(fd);
    }
    const std::string msg = message_of([&] { shelf.image_of(*file); }, Errc::digest_mismatch, "none");
    BOOST_CHECK_MESSAGE(msg.find("the Blob's is " + info.checksum.text() + ": not shared") != std::string::npos, msg);

    // The store service offers no image then (and says why in the log).
    server::ReservationTable reservations(60s);
    server::TicketRegistry tickets(30s);
    service::StoreServiceOptions options;
    options.images = &shelf;
    service::StoreService service(store, reservations, tickets, options);
    const service::Caller caller{"", "local"};
    BOOST_CHECK(!service.image(caller, "CT.1"));
    put("CT.2", random_bytes(50, 4));
    const auto images = service.images(caller, {"CT.1", "CT.2", "CT.3"});
    BOOST_REQUIRE_EQUAL(images.size(), 3u);
    BOOST_CHECK(!images[0]);
    BOOST_REQUIRE(images[1]);
    BOOST_CHECK(read_fd(images[1]->fd, 50) == random_bytes(50, 4));
    BOOST_CHECK(!images[2]);  // no such Blob: no image
}
