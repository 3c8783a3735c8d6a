#include <blobstreaming/blobstore/FileStore.h>

#define BOOST_TEST_MODULE FileStore
#include "TestSupport.h"

#include <csignal>
#include <cstring>
#include <fstream>

#include <sys/wait.h>
#include <unistd.h>

using namespace blobstreaming;
using test::random_bytes;
namespace fs = std::filesystem;

namespace {

void put(Store& store, const std::string& name, const std::vector<std::uint8_t>& bytes)
{
    auto r = store.reserve(name, bytes.size());
    BOOST_REQUIRE(!r->write(bytes.data(), bytes.size()));
    r->commit();
}

std::size_t count_files(const fs::path& dir)
{
    std::size_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) ++n;
    return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(blobs_persist_across_reopen)
{
    test::TempDir dir;
    const auto bytes = random_bytes(300000);
    BlobInfo committed;
    {
        FileStore store(dir.path());
        put(store, "CT.1", bytes);
        committed = store.stat("CT.1");
    }
    FileStore store(dir.path());
    const BlobInfo again = store.stat("CT.1");
    BOOST_TEST(again.size == committed.size);
    BOOST_TEST(to_hex(again.digest) == to_hex(committed.digest));
    BOOST_TEST((again.committed == committed.committed));
    const BlobRange v = store.read_all("CT.1");
    BOOST_TEST(std::memcmp(v.data(), bytes.data(), bytes.size()) == 0);
    BOOST_TEST(store.usage().used == bytes.size());
}

BOOST_AUTO_TEST_CASE(second_open_of_a_directory_is_busy)
{
    test::TempDir dir;
    FileStore first(dir.path());
    BS_CHECK_ERROR(FileStore second(dir.path()), Errc::store_busy, "is in use by another process or store object");
}

BOOST_AUTO_TEST_CASE(reservation_of_a_killed_process_is_removed_on_reopen)
{
    test::TempDir dir;
    {
        FileStore store(dir.path());
        put(store, "kept", random_bytes(1000));
    }

    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        // A writer that dies by SIGKILL in the middle of a Blob.
        FileStore store(dir.path());
        auto r = store.reserve("partial", 1 << 20);
        const auto half = random_bytes(1 << 19);
        if (r->write(half.data(), half.size())) ::_exit(3);
        ::raise(SIGKILL);
        ::_exit(4);
    }
    int status = 0;
    BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
    BOOST_REQUIRE(WIFSIGNALED(status));
    BOOST_REQUIRE(WTERMSIG(status) == SIGKILL);
    BOOST_TEST(count_files(dir.path() / "tmp") == 1u);  // the leftover exists on disk

    FileStore store(dir.path());
    BOOST_TEST(store.recovered_reservations() == 1u);
    BOOST_TEST(count_files(dir.path() / "tmp") == 0u);
    const auto all = store.list();
    BOOST_REQUIRE(all.size() == 1u);
    BOOST_TEST(all[0].name == "kept");
    BS_CHECK_ERROR(store.stat("partial"), Errc::no_such_blob, "blob \"partial\" not found");
    BOOST_TEST(store.usage().reserved == 0u);
    BOOST_TEST(store.usage().used == 1000u);
}

BOOST_AUTO_TEST_CASE(damaged_files_are_never_listed)
{
    test::TempDir dir;
    fs::path truncated, foreign;
    {
        FileStore store(dir.path());
        put(store, "good", random_bytes(5000, 1));
        put(store, "cut", random_bytes(5000, 2));
        truncated = store.locate("cut").path;
        foreign = store.locate("good").path.parent_path() / "stray";
    }
    fs::resize_file(truncated, fs::file_size(truncated) - 1);
    std::ofstream(foreign) << "not a blob";
    FileStore store(dir.path());
    const auto all = store.list();
    BOOST_REQUIRE(all.size() == 1u);
    BOOST_TEST(all[0].name == "good");
    BS_CHECK_ERROR(store.stat("cut"), Errc::no_such_blob, "not found");
}

BOOST_AUTO_TEST_CASE(layout_is_header_then_bytes_in_a_fanout_directory)
{
    test::TempDir dir;
    FileStore store(dir.path());
    const auto bytes = random_bytes(12345);
    put(store, "MG.4", bytes);
    const auto loc = store.locate("MG.4");
    BOOST_TEST(loc.data_offset == FileStore::kHeaderSize);
    BOOST_TEST(loc.path.parent_path().parent_path() == dir.path() / "blobs");
    BOOST_TEST(loc.path.parent_path().filename().string().size() == 2u);
    BOOST_TEST(fs::file_size(loc.path) == FileStore::kHeaderSize + bytes.size());
    std::ifstream in(loc.path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(loc.data_offset));
    std::vector<std::uint8_t> on_disk(bytes.size());
    in.read(reinterpret_cast<char*>(on_disk.data()), static_cast<std::streamsize>(on_disk.size()));
    BOOST_TEST(on_disk == bytes);
}

BOOST_AUTO_TEST_CASE(verify_detects_a_byte_changed_on_disk)
{
    test::TempDir dir;
    FileStore store(dir.path());
    const auto bytes = random_bytes(200000);
    put(store, "US.9", bytes);
    put(store, "US.10", bytes);
    const auto loc = store.locate("US.9");
    {
        std::fstream f(loc.path, std::ios::binary | std::ios::in | std::ios::out);
        f.seekp(static_cast<std::streamoff>(loc.data_offset + 123456));
        const char flipped = static_cast<char>(bytes[123456] ^ 0x01);
        f.write(&flipped, 1);
    }
    BS_CHECK_ERROR(store.verify("US.9"), Errc::corrupt, "200000 stored bytes have SHA-256");
    BS_CHECK_ERROR(store.verify("US.9"), Errc::corrupt, to_hex(store.stat("US.9").digest));
    BOOST_TEST(to_hex(store.verify("US.10").digest) == to_hex(store.stat("US.10").digest));
}

BOOST_AUTO_TEST_CASE(read_view_exposes_a_descriptor_range_for_sendfile)
{
    test::TempDir dir;
    FileStore store(dir.path());
    const auto bytes = random_bytes(70000);
    put(store, "x", bytes);
    const BlobRange v = store.read("x", 1000, 61000);
    BOOST_REQUIRE(v.fd() >= 0);
    BOOST_TEST(v.file_offset() == FileStore::kHeaderSize + 1000);
    std::vector<std::uint8_t> via_fd(v.size());
    BOOST_REQUIRE(::pread(v.fd(), via_fd.data(), via_fd.size(), static_cast<off_t>(v.file_offset())) ==
                  static_cast<ssize_t>(v.size()));
    BOOST_TEST(std::memcmp(via_fd.data(), bytes.data() + 1000, v.size()) == 0);
}

BOOST_AUTO_TEST_CASE(blob_larger_than_the_mapping_window)
{
    test::TempDir dir;
    FileStore store(dir.path(), {0, false});
    const std::size_t size = (40u << 20) + 4095;  // spans three 16 MiB windows
    const auto bytes = random_bytes(size, 9);
    auto r = store.reserve("big", size);
    std::size_t at = 0;
    while (at < size) {  // receive-style: whatever window the store offers
        std::error_code ec;
        auto w = r->window(1 << 20, ec);
        BOOST_REQUIRE(!ec);
        std::memcpy(w.data, bytes.data() + at, w.size);
        BOOST_REQUIRE(!r->advance(w.size));
        at += w.size;
    }
    const BlobInfo info = r->commit();
    BOOST_TEST(to_hex(info.digest) == to_hex(Sha256::of(bytes.data(), bytes.size())));
    const BlobRange v = store.read("big", (16u << 20) - 10, (32u << 20) + 10);
    BOOST_TEST(std::memcmp(v.data(), bytes.data() + (16u << 20) - 10, v.size()) == 0);
}

namespace {

std::size_t open_descriptors()
{
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

fs::path file_of(const fs::path& dir, const std::string& name)
{
    for (const auto& e : fs::recursive_directory_iterator(dir / "blobs"))
        if (e.path().filename() == name) return e.path();
    return {};
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_unused_reservation_holds_no_descriptor)
{
    test::TempDir dir;
    FileStore store(dir.path());
    const std::size_t before = open_descriptors();
    std::vector<std::unique_ptr<Reservation>> held;
    for (int i = 0; i < 300; ++i) held.push_back(store.reserve("R." + std::to_string(i), 4096));
    BOOST_TEST(open_descriptors() == before);
    BOOST_TEST(store.usage().reserved == 300u * 4096u);

    // Filling takes the file again; suspend() gives it back; the bytes stay.
    const auto bytes = random_bytes(4096);
    BOOST_REQUIRE(!held[7]->write(bytes.data(), 1000));
    BOOST_TEST(open_descriptors() == before + 1);
    held[7]->suspend();
    BOOST_TEST(open_descriptors() == before);
    BOOST_REQUIRE(!held[7]->write(bytes.data() + 1000, bytes.size() - 1000));
    held[7]->commit();
    BOOST_TEST(open_descriptors() == before);
    const BlobRange v = store.read_all("R.7");
    BOOST_TEST(std::memcmp(v.data(), bytes.data(), bytes.size()) == 0);
    held.clear();
    BOOST_TEST(store.usage().reserved == 0u);
    BOOST_TEST(count_files(dir.path() / "tmp") == 0u);
}

BOOST_AUTO_TEST_CASE(a_removed_store_directory_is_an_io_error_naming_it)
{
    test::TempDir parent;
    const fs::path dir = parent.path() / "store";
    FileStore store(dir);
    put(store, "CT.1", random_bytes(1000));
    fs::remove_all(dir);
    const std::string gone = "cannot access its directory " + dir.string() + ": No such file or directory";
    BS_CHECK_ERROR(store.stat("CT.1"), Errc::io_error, "stat \"CT.1\": file store " + dir.string() + ": " + gone);
    BS_CHECK_ERROR(store.list(), Errc::io_error, "list: file store " + dir.string() + ": " + gone);
    BS_CHECK_ERROR(store.read_all("CT.1"), Errc::io_error, "read \"CT.1\": file store " + dir.string());
    BS_CHECK_ERROR(store.verify("CT.1"), Errc::io_error, gone);
    BS_CHECK_ERROR(store.reserve("CT.2", 10), Errc::io_error, "reserve \"CT.2\": file store " + dir.string());
    BS_CHECK_ERROR(store.remove("CT.1"), Errc::io_error, "remove \"CT.1\": file store " + dir.string());
    // Nothing was dropped or leaked: the store may come back (a remount).
    BOOST_TEST(store.usage().blob_count == 1u);
    BOOST_TEST(store.usage().reserved == 0u);
}

BOOST_AUTO_TEST_CASE(a_replaced_store_directory_is_not_the_store)
{
    test::TempDir parent;
    const fs::path dir = parent.path() / "store";
    FileStore store(dir);
    fs::remove_all(dir);
    fs::create_directories(dir / "blobs");
    fs::create_directories(dir / "tmp");
    BS_CHECK_ERROR(store.list(), Errc::io_error, "was replaced since the store opened it");
}

BOOST_AUTO_TEST_CASE(a_blob_file_removed_behind_the_store_is_gone)
{
    test::TempDir dir;
    FileStore store(dir.path());
    put(store, "CT.1", random_bytes(1000));
    put(store, "CT.2", random_bytes(2000));
    put(store, "CT.3", random_bytes(3000));
    const fs::path one = file_of(dir.path(), "CT.1");
    fs::remove(one);
    BS_CHECK_ERROR(store.stat("CT.1"), Errc::no_such_blob,
                   "stat \"CT.1\": blob \"CT.1\" not found: its file " + one.string() +
                       " was removed outside the store");
    BOOST_TEST(store.list().size() == 2u);
    BOOST_TEST(store.usage().used == 5000u);
    BS_CHECK_ERROR(store.stat("CT.1"), Errc::no_such_blob, "blob \"CT.1\" not found");

    const fs::path two = file_of(dir.path(), "CT.2");
    fs::remove(two);
    BS_CHECK_ERROR(store.read_all("CT.2"), Errc::no_such_blob, "its file " + two.string() + " was removed");
    BOOST_TEST(!store.contains("CT.2"));

    const fs::path three = file_of(dir.path(), "CT.3");
    fs::remove(three);
    BS_CHECK_ERROR(store.remove("CT.3"), Errc::no_such_blob, "its file " + three.string() + " was removed");
    BOOST_TEST(store.usage().blob_count == 0u);
    BOOST_TEST(store.usage().used == 0u);
}

BOOST_AUTO_TEST_CASE(remove_that_cannot_unlink_keeps_the_entry)
{
    test::TempDir dir;
    FileStore store(dir.path());
    put(store, "CT.1", random_bytes(1000));
    const fs::path file = file_of(dir.path(), "CT.1");
    // Something the store cannot unlink in the Blob's place: a directory.
    fs::remove(file);
    fs::create_directories(file / "x");
    BS_CHECK_ERROR(store.remove("CT.1"), Errc::io_error, "remove \"CT.1\": unlink " + file.string() + ": ");
    BOOST_TEST(store.usage().blob_count == 1u);
}

BOOST_AUTO_TEST_CASE(a_reservation_whose_file_vanished_names_it)
{
    test::TempDir dir;
    FileStore store(dir.path());
    auto r = store.reserve("CT.1", 100);
    for (const auto& e : fs::directory_iterator(dir.path() / "tmp")) fs::remove(e.path());
    const auto bytes = random_bytes(100);
    const std::error_code ec = r->write(bytes.data(), bytes.size());
    BOOST_TEST((ec == std::errc::no_such_file_or_directory), ec.message());
    BOOST_TEST(r->error_message().find("push \"CT.1\": cannot open the reservation file " +
                                       (dir.path() / "tmp").string()) == 0u,
               r->error_message());
    r->abort();
    BOOST_TEST(store.usage().reserved == 0u);
}
