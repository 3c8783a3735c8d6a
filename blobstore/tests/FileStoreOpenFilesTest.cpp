#include <blobstreaming/blobstore/FileStore.h>

#define BOOST_TEST_MODULE FileStoreOpenFiles
#include "TestSupport.h"

// Internal: the settle time of a kept file.
#include "../src/store/OpenFiles.h"

#include <blobstreaming/common/DescriptorReserve.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace blobstreaming;
using test::random_bytes;
namespace fs = std::filesystem;
using detail::OpenFiles;

namespace {

void put(Store& store, const std::string& name, const std::vector<std::uint8_t>& bytes,
         ReserveMode mode = ReserveMode::create)
{
    auto r = store.reserve(name, bytes.size(), mode);
    BOOST_REQUIRE(!r->write(bytes.data(), bytes.size()));
    r->commit();
}

/// Returns once the file at `path` was last changed longer ago than
/// identity_settle_time, so that a read keeps it open.
void settle(const fs::path& path)
{
    struct stat st {};
    BOOST_REQUIRE(::stat(path.c_str(), &st) == 0);
    const auto wait = identity_settle_time(st) + std::chrono::milliseconds(1);
    BOOST_REQUIRE(wait <= std::chrono::seconds(4));  // bounded
    for (int i = 0; i < 2 && !identity_settled(st, realtime_now()); ++i) std::this_thread::sleep_for(wait);
    BOOST_REQUIRE(identity_settled(st, realtime_now()));
}

void poke(const fs::path& path, std::uint64_t at, std::uint8_t value)
{
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(at));
    f.write(reinterpret_cast<const char*>(&value), 1);
}

bool holds(const BlobRange& v, const std::vector<std::uint8_t>& bytes)
{
    return v.size() == bytes.size() && std::memcmp(v.data(), bytes.data(), bytes.size()) == 0;
}

/// A store with "CT.1" committed and settled, read once: its file is kept.
struct Kept {
    test::TempDir parent;
    fs::path dir = parent.path() / "store";
    FileStore store{dir};
    std::vector<std::uint8_t> bytes = random_bytes(20000, 1);
    fs::path path;
    Kept()
    {
        put(store, "CT.1", bytes);
        path = store.locate("CT.1").path;
        settle(path);
        BOOST_REQUIRE(holds(store.read_all("CT.1"), bytes));
        BOOST_REQUIRE_EQUAL(store.open_files(), 1u);
        BOOST_REQUIRE_EQUAL(store.reads_from_open_files(), 0u);
    }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(a_second_read_of_the_same_version_uses_the_file_kept_open, Kept)
{
    const BlobRange first = store.read_all("CT.1");
    const BlobRange second = store.read(store.stat("CT.1").name, 100, 600);
    BOOST_TEST(store.reads_from_open_files() == 2u);
    BOOST_TEST(first.fd() == second.fd());  // the same descriptor, not another open
    BOOST_TEST(holds(first, bytes));
    BOOST_TEST(std::memcmp(second.data(), bytes.data() + 100, 500) == 0);
    BOOST_TEST(second.file_offset() == FileStore::kHeaderSize + 100);
    // Mapped once with the kept file, for every view: data() costs nothing.
    BOOST_TEST(first.mapped());
    BOOST_TEST(second.mapped());
    BOOST_TEST(second.data() == first.data() + 100);
    BS_CHECK_ERROR(store.read("CT.1", 0, 20001), Errc::invalid_range, "CT.1");
}

BOOST_AUTO_TEST_CASE(a_file_changed_just_now_is_not_kept)
{
    test::TempDir dir;
    FileStore store(dir.path());
    put(store, "CT.1", random_bytes(1000));
    struct stat st {};
    BOOST_REQUIRE(::stat(store.locate("CT.1").path.c_str(), &st) == 0);
    const BlobRange v = store.read_all("CT.1");
    const timespec after = realtime_now();
    // Kept only when its last change was identity_settle_time before the read.
    if (!identity_settled(st, after)) {
        BOOST_TEST(store.open_files() == 0u);
        BOOST_TEST(!v.mapped());  // a view of its own: mapped only on its first data()
    }
    BOOST_TEST(v.size() == 1000u);
}

BOOST_FIXTURE_TEST_CASE(a_blob_replaced_through_the_store_drops_its_open_file, Kept)
{
    const BlobRange before = store.read_all("CT.1");
    const auto second = random_bytes(30000, 2);
    put(store, "CT.1", second, ReserveMode::replace);
    BOOST_TEST(store.open_files() == 0u);  // the old version's file (and its space) let go
    BOOST_TEST(holds(store.read_all("CT.1"), second));
    BOOST_TEST(holds(before, bytes));  // an earlier view keeps its version
    settle(path);
    BOOST_TEST(holds(store.read_all("CT.1"), second));
    BOOST_TEST(holds(store.read_all("CT.1"), second));
    BOOST_TEST(store.reads_from_open_files() == 2u);
}

BOOST_FIXTURE_TEST_CASE(a_blob_removed_through_the_store_is_gone_with_its_open_file, Kept)
{
    store.remove("CT.1");
    BOOST_TEST(store.open_files() == 0u);
    BS_CHECK_ERROR(store.read_all("CT.1"), Errc::no_such_blob, "blob \"CT.1\" not found");
}

BOOST_FIXTURE_TEST_CASE(a_header_changed_behind_the_store_after_it_was_kept_is_corrupt, Kept)
{
    poke(path, 1000, 0x5a);  // the zero padding, under the header's SHA-256
    BS_CHECK_ERROR(store.read_all("CT.1"), Errc::corrupt,
                   "read \"CT.1\": " + path.string() + ": header checksum mismatch");
    BOOST_TEST(store.reads_from_open_files() == 0u);
    BOOST_TEST(store.open_files() == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_byte_changed_behind_the_store_after_it_was_kept_is_read_from_the_file, Kept)
{
    poke(path, FileStore::kHeaderSize + 7, static_cast<std::uint8_t>(bytes[7] ^ 0xff));
    const BlobRange v = store.read_all("CT.1");
    BOOST_TEST(store.reads_from_open_files() == 0u);  // reopened: the next verify sees the change
    BOOST_TEST(v.data()[7] == static_cast<std::uint8_t>(bytes[7] ^ 0xff));
}

BOOST_FIXTURE_TEST_CASE(a_file_replaced_behind_the_store_after_it_was_kept_is_read_as_its_header_says, Kept)
{
    const auto other_bytes = random_bytes(20000, 3);
    {
        FileStore other(parent.path() / "other");
        put(other, "CT.1", other_bytes);
        fs::copy_file(other.locate("CT.1").path, path.string() + ".new");
    }
    fs::rename(path.string() + ".new", path);
    const BlobRange v = store.read_all("CT.1");
    BOOST_TEST(store.reads_from_open_files() == 0u);
    BOOST_TEST(holds(v, other_bytes));
    BOOST_TEST(v.blob().checksum.text() != store.stat("CT.1").checksum.text());  // what its own header says
}

BOOST_FIXTURE_TEST_CASE(a_file_removed_behind_the_store_after_it_was_kept_is_gone, Kept)
{
    fs::remove(path);
    BS_CHECK_ERROR(store.read_all("CT.1"), Errc::no_such_blob,
                   "read \"CT.1\": blob \"CT.1\" not found: its file " + path.string() +
                       " was removed outside the store");
    BOOST_TEST(store.open_files() == 0u);
    BOOST_TEST(store.reads_from_open_files() == 0u);
}

BOOST_FIXTURE_TEST_CASE(the_store_directory_renamed_or_removed_after_a_file_was_kept, Kept)
{
    // Renamed: its own files, relative to blobs/ as it opened it, as
    // without a kept file (FileStoreTest).
    fs::rename(dir, parent.path() / "moved");
    BOOST_TEST(holds(store.read_all("CT.1"), bytes));
    BOOST_TEST(store.reads_from_open_files() == 1u);
    // Removed: the kept file is not served; the read says why.
    fs::remove_all(parent.path() / "moved");
    BS_CHECK_ERROR(store.read_all("CT.1"), Errc::io_error,
                   "read \"CT.1\": file store " + dir.string() + ": cannot access its directory");
    BOOST_TEST(store.reads_from_open_files() == 1u);
}

BOOST_AUTO_TEST_CASE(at_most_the_capacity_is_kept_the_least_recently_read_dropped)
{
    test::TempDir dir;
    FileStore::Options options;
    options.open_files = 3;
    FileStore store(dir.path(), options);
    for (int i = 1; i <= 5; ++i) put(store, "CT." + std::to_string(i), random_bytes(100, static_cast<unsigned>(i)));
    for (int i = 1; i <= 5; ++i) settle(store.locate("CT." + std::to_string(i)).path);
    for (int i = 1; i <= 5; ++i) store.read_all("CT." + std::to_string(i));
    BOOST_TEST(store.open_files() == 3u);
    store.read_all("CT.5");
    BOOST_TEST(store.reads_from_open_files() == 1u);
    store.read_all("CT.1");  // dropped first: opened again
    BOOST_TEST(store.reads_from_open_files() == 1u);
    BOOST_TEST(store.open_files() == 3u);

    options.open_files = 0;
    FileStore none(dir.path() / "none", options);
    put(none, "CT.1", random_bytes(100));
    settle(none.locate("CT.1").path);
    none.read_all("CT.1");
    BOOST_TEST(none.open_files() == 0u);
}

BOOST_FIXTURE_TEST_CASE(out_of_descriptors_the_open_files_give_way, Kept)
{
    put(store, "CT.2", random_bytes(1000, 2));
    // Asked by the data port's DescriptorReserve (or anyone): all closed.
    BOOST_TEST(IdleDescriptors::release_all() >= 1u);
    BOOST_TEST(store.open_files() == 0u);
    BOOST_REQUIRE(holds(store.read_all("CT.1"), bytes));
    BOOST_REQUIRE_EQUAL(store.open_files(), 1u);

    // Every descriptor taken under a lowered limit: the read of another
    // Blob closes the kept file to open its own.
    rlimit saved{};
    BOOST_REQUIRE_EQUAL(::getrlimit(RLIMIT_NOFILE, &saved), 0);
    rlimit low = saved;
    low.rlim_cur = 256;
    BOOST_REQUIRE_EQUAL(::setrlimit(RLIMIT_NOFILE, &low), 0);
    std::vector<UniqueFd> filler;
    for (int i = 0; i < 256; ++i) {
        UniqueFd fd(::dup(0));
        if (!fd) break;
        filler.push_back(std::move(fd));
    }
    BOOST_TEST(::dup(0) == -1);
    const auto read = [&] { return store.read_all("CT.2").size(); };
    std::size_t got = 0;
    BOOST_CHECK_NO_THROW(got = read());
    filler.clear();
    BOOST_REQUIRE_EQUAL(::setrlimit(RLIMIT_NOFILE, &saved), 0);
    BOOST_TEST(got == 1000u);
    BOOST_TEST(store.open_files() <= 1u);
}
