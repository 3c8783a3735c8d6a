#include <blobstreaming/blobstore/FileStore.h>

#define BOOST_TEST_MODULE FileStore
#include "TestSupport.h"

// Internal: the directory-sync group commit and the fan-out hash.
#include "../src/store/FileStoreState.h"
#include "../src/store/FileSystem.h"

#include <blobstreaming/common/LittleEndian.h>
#include <blobstreaming/common/Sha256.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

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
    BOOST_TEST(again.checksum.text() == committed.checksum.text());
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

BOOST_AUTO_TEST_CASE(reservation_files_are_created_ahead_unnamed)
{
    test::TempDir dir;
    const fs::path tmp = dir.path() / "tmp";
    const auto first = random_bytes(300000);
    const auto second = random_bytes(200000);
    {
        FileStore store(dir.path(), FileStore::Options{0, false});
        // The first reservation creates its own file and starts the helper.
        auto a = store.reserve("first", first.size());
        BOOST_TEST(store.files_created_ahead() == 0u);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!store.file_ready_ahead() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        BOOST_REQUIRE(store.file_ready_ahead());
        // Unnamed until taken: tmp/ shows the open reservation only.
        BOOST_TEST(count_files(tmp) == 1u);

        auto b = store.reserve("second", second.size());
        BOOST_TEST(store.files_created_ahead() == 1u);
        BOOST_TEST(count_files(tmp) == 2u);
        BOOST_REQUIRE(!b->write(second.data(), second.size()));
        const BlobInfo info = b->commit();
        BOOST_TEST(info.size == second.size());
        const BlobRange v = store.read_all("second");
        BOOST_REQUIRE(v.size() == second.size());
        BOOST_TEST(std::memcmp(v.data(), second.data(), second.size()) == 0);
        BOOST_TEST(store.usage().reserved == first.size());

        a->abort();
        BOOST_TEST(count_files(tmp) == 0u);
        BS_CHECK_ERROR(store.stat("first"), Errc::no_such_blob, "blob \"first\" not found");
        // The file made ready meanwhile is not in tmp/, and goes with the store.
        while (!store.file_ready_ahead() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        BOOST_TEST(store.file_ready_ahead());
        BOOST_TEST(count_files(tmp) == 0u);
    }
    BOOST_TEST(count_files(tmp) == 0u);
    FileStore store(dir.path());
    BOOST_TEST(store.recovered_reservations() == 0u);
    BOOST_REQUIRE(store.list().size() == 1u);
    BOOST_TEST(store.stat("second").checksum.text() == store.verify("second").checksum.text());
}

BOOST_AUTO_TEST_CASE(a_file_created_ahead_lands_in_a_replaced_tmp_directory)
{
    // tmp/ removed and made again under the running store after the helper
    // created the next file: the reservation's file is in the new tmp/,
    // where the commit finds it.
    test::TempDir dir;
    const fs::path tmp = dir.path() / "tmp";
    FileStore store(dir.path(), FileStore::Options{0, false});
    put(store, "kept", random_bytes(1000));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!store.file_ready_ahead() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    BOOST_REQUIRE(store.file_ready_ahead());
    fs::remove_all(tmp);
    fs::create_directory(tmp);
    const auto bytes = random_bytes(5000);
    auto r = store.reserve("next", bytes.size());
    BOOST_TEST(store.files_created_ahead() == 1u);
    BOOST_TEST(count_files(tmp) == 1u);
    BOOST_REQUIRE(!r->write(bytes.data(), bytes.size()));
    r->commit();
    BOOST_TEST(count_files(tmp) == 0u);
    const BlobRange v = store.read_all("next");
    BOOST_REQUIRE(v.size() == bytes.size());
    BOOST_TEST(std::memcmp(v.data(), bytes.data(), bytes.size()) == 0);
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
    BS_CHECK_ERROR(store.verify("US.9"), Errc::corrupt, "200000 stored bytes have checksum crc32c:");
    BS_CHECK_ERROR(store.verify("US.9"), Errc::corrupt, "recorded at commit: " + store.stat("US.9").checksum.text());
    BOOST_TEST(store.verify("US.10").checksum.text() == store.stat("US.10").checksum.text());
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

namespace {

/// Fills `r` receive-style: whatever window the store offers, in pieces of
/// at most `piece` bytes.
void fill_by_windows(Reservation& r, const std::vector<std::uint8_t>& bytes, std::size_t piece = 1 << 20)
{
    std::size_t at = 0;
    while (at < bytes.size()) {
        std::error_code ec;
        auto w = r.window(piece, ec);
        BOOST_REQUIRE_MESSAGE(!ec, r.error_message());
        BOOST_REQUIRE(w.size > 0);
        std::memcpy(w.data, bytes.data() + at, w.size);
        BOOST_REQUIRE_MESSAGE(!r.advance(w.size), r.error_message());
        at += w.size;
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(blob_larger_than_the_receive_buffer)
{
    test::TempDir dir;
    FileStore store(dir.path(), {0, false});
    const std::size_t size = (40u << 20) + 4095;  // many 1 MiB buffers
    const auto bytes = random_bytes(size, 9);
    auto r = store.reserve("big", size);
    fill_by_windows(*r, bytes);
    const BlobInfo info = r->commit();
    BOOST_TEST(info.checksum.text() == test::reference_checksum(bytes).text());
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
    // The store itself holds one: the next reservation's file, created
    // ahead once a first reservation was made. Counted once it is ready.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    auto descriptors = [&] {
        while (!store.file_ready_ahead() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        BOOST_REQUIRE(store.file_ready_ahead());
        return open_descriptors();
    };
    store.reserve("first", 4096)->abort();
    const std::size_t before = descriptors();
    std::vector<std::unique_ptr<Reservation>> held;
    for (int i = 0; i < 300; ++i) held.push_back(store.reserve("R." + std::to_string(i), 4096));
    BOOST_TEST(descriptors() == before);
    BOOST_TEST(store.usage().reserved == 300u * 4096u);

    // Filling takes the file again; suspend() gives it back; the bytes stay.
    const auto bytes = random_bytes(4096);
    BOOST_REQUIRE(!held[7]->write(bytes.data(), 1000));
    BOOST_TEST(descriptors() == before + 1);
    held[7]->suspend();
    BOOST_TEST(descriptors() == before);
    BOOST_REQUIRE(!held[7]->write(bytes.data() + 1000, bytes.size() - 1000));
    held[7]->commit();
    BOOST_TEST(descriptors() == before);
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

// Group commit: callers that arrive while a directory's fsync is in flight
// share the next one; its failure reaches every one of them.
BOOST_AUTO_TEST_CASE(directory_syncs_arriving_during_one_in_flight_share_the_next)
{
    std::mutex m;
    std::condition_variable cv;
    bool in_flight = false;
    bool release = false;
    int calls = 0;
    detail::DirectorySync sync([&](const fs::path& d) {
        std::unique_lock lock(m);
        if (++calls == 1) {
            in_flight = true;
            cv.notify_all();
            cv.wait(lock, [&] { return release; });
            return;
        }
        throw Error(Errc::io_error, "fsync directory " + d.string() + ": Input/output error");
    });
    std::thread first([&] { sync.sync("/store/blobs/00"); });
    {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return in_flight; });
    }
    constexpr std::size_t kLate = 7;
    std::vector<std::thread> late;
    std::vector<std::string> errors(kLate);
    for (std::size_t i = 0; i < kLate; ++i)
        late.emplace_back([&, i] {
            try {
                sync.sync("/store/blobs/00");
            } catch (const Error& e) {
                errors[i] = e.what();
            }
        });
    while (sync.waiting() < kLate) std::this_thread::yield();  // all joined the next fsync
    {
        std::lock_guard lock(m);
        release = true;
    }
    cv.notify_all();
    first.join();
    for (auto& t : late) t.join();
    BOOST_TEST(sync.count() == 2u);
    for (const auto& e : errors)
        BOOST_TEST(e.find("fsync directory /store/blobs/00: Input/output error") != std::string::npos, e);
}

BOOST_AUTO_TEST_CASE(concurrent_commits_share_directory_syncs_and_all_survive_reopen)
{
    test::TempDir dir;
    // Names in one fan-out directory, so that their commits can share.
    std::vector<std::string> names;
    for (int i = 0; names.size() < 48; ++i) {
        std::string name = "GC." + std::to_string(i);
        if (detail::fanout(name) == detail::fanout("GC.0")) names.push_back(std::move(name));
    }
    constexpr std::size_t kThreads = 8;
    std::uint64_t syncs = 0;
    {
        FileStore store(dir.path());  // sync on
        std::vector<std::thread> threads;
        std::vector<std::string> failures(kThreads);
        for (std::size_t t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                try {
                    for (std::size_t i = t; i < names.size(); i += kThreads) {
                        const auto bytes = random_bytes(5000 + i, static_cast<std::uint32_t>(i));
                        auto r = store.reserve(names[i], bytes.size());
                        if (r->write(bytes.data(), bytes.size())) throw std::runtime_error(r->error_message());
                        r->commit();
                    }
                } catch (const std::exception& e) {
                    failures[t] = e.what();
                }
            });
        for (auto& t : threads) t.join();
        for (const auto& f : failures) BOOST_TEST(f.empty(), f);
        syncs = store.directory_syncs();
    }
    BOOST_TEST(syncs < names.size());
    BOOST_TEST(syncs > 0u);
    FileStore store(dir.path());
    BOOST_TEST(store.list().size() == names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        const auto bytes = random_bytes(5000 + i, static_cast<std::uint32_t>(i));
        const BlobRange v = store.read_all(names[i]);
        BOOST_REQUIRE(v.size() == bytes.size());
        BOOST_TEST(std::memcmp(v.data(), bytes.data(), bytes.size()) == 0, names[i]);
    }
}

// Early writeback (several of its steps, uneven pieces) leaves the bytes
// exactly as received, durable across reopen.
BOOST_AUTO_TEST_CASE(a_synced_blob_spanning_writeback_steps_is_intact_after_reopen)
{
    test::TempDir dir;
    const std::size_t size = 3 * detail::Writeback::kStep + 12345;
    const auto bytes = random_bytes(size, 11);
    {
        FileStore store(dir.path());
        auto r = store.reserve("WB.1", size);
        fill_by_windows(*r, bytes, 300000);
        r->commit();
    }
    FileStore store(dir.path());
    const BlobRange v = store.read_all("WB.1");
    BOOST_REQUIRE(v.size() == size);
    BOOST_TEST(std::memcmp(v.data(), bytes.data(), size) == 0);
}

namespace {

/// A small ext2 file system (no fallocate: reservations there are sparse
/// files written with pwrite) loop-mounted for one test; empty path when
/// this process cannot mount one (not root, no loop device).
class Ext2Mount {
public:
    explicit Ext2Mount(const fs::path& dir) : image_(dir / "fs.img"), point_(dir / "fs")
    {
        if (::geteuid() != 0) return;
        fs::create_directories(point_);
        const std::string cmd = "truncate -s 64M " + image_.string() + " && mkfs.ext2 -q -F -m 0 " + image_.string() +
                                " >/dev/null 2>&1 && mount -t ext2 -o loop " + image_.string() + " " + point_.string() +
                                " >/dev/null 2>&1";
        mounted_ = std::system(cmd.c_str()) == 0;
    }
    ~Ext2Mount()
    {
        if (mounted_) (void)std::system(("umount " + point_.string()).c_str());
    }
    Ext2Mount(const Ext2Mount&) = delete;
    Ext2Mount& operator=(const Ext2Mount&) = delete;
    fs::path path() const { return mounted_ ? point_ : fs::path(); }

private:
    fs::path image_;
    fs::path point_;
    bool mounted_ = false;
};

}  // namespace

BOOST_AUTO_TEST_CASE(writeback_on_a_file_system_without_fallocate)
{
    test::TempDir dir;
    Ext2Mount mount(dir.path());
    if (mount.path().empty()) {
        BOOST_TEST_MESSAGE("skipped: cannot loop-mount an ext2 image here (needs root and a loop device)");
        return;
    }
    const fs::path root = mount.path() / "store";
    const std::size_t size = 2 * detail::Writeback::kStep + 777;
    const auto bytes = random_bytes(size, 13);
    {
        FileStore store(root);
        auto r = store.reserve("SP.1", size);
        fill_by_windows(*r, bytes, 200000);
        r->commit();
        // The free space left cannot take a second copy plus this one.
        BS_CHECK_ERROR(store.reserve("SP.2", 64u << 20), Errc::out_of_space, "no room for blob \"SP.2\"");
    }
    FileStore store(root);
    const BlobRange v = store.read_all("SP.1");
    BOOST_REQUIRE(v.size() == size);
    BOOST_TEST(std::memcmp(v.data(), bytes.data(), size) == 0);
    BOOST_TEST(count_files(root / "tmp") == 0u);
}

// A Blob file written by a release before CRC32C (header format version 1:
// SHA-256 only, the name at byte 66) stays readable and verifiable. The
// header is written here by hand from that format's description.
BOOST_AUTO_TEST_CASE(files_of_the_sha256_only_format_stay_readable_and_verifiable)
{
    test::TempDir dir;
    const auto bytes = random_bytes(100000, 4);
    const std::string name = "CT.old";
    FileStore::Location loc;
    {
        FileStore store(dir.path());
        put(store, name, bytes);
        loc = store.locate(name);
    }
    const Digest sha = Sha256::of(bytes.data(), bytes.size());
    std::uint8_t h[FileStore::kHeaderSize] = {};
    std::memcpy(h, "BLOBSTR1", 8);
    le::put<std::uint32_t>(h + 8, 1);
    le::put<std::uint32_t>(h + 12, static_cast<std::uint32_t>(FileStore::kHeaderSize));
    le::put<std::uint64_t>(h + 16, bytes.size());
    le::put<std::uint64_t>(h + 24, 1700000000123456789ULL);
    std::memcpy(h + 32, sha.data(), 32);
    le::put<std::uint16_t>(h + 64, static_cast<std::uint16_t>(name.size()));
    std::memcpy(h + 66, name.data(), name.size());
    const Digest self = Sha256::of(h, FileStore::kHeaderSize - 32);
    std::memcpy(h + FileStore::kHeaderSize - 32, self.data(), 32);
    {
        std::fstream f(loc.path, std::ios::binary | std::ios::in | std::ios::out);
        f.write(reinterpret_cast<const char*>(h), sizeof h);
    }
    FileStore store(dir.path());
    const BlobInfo info = store.stat(name);
    BOOST_TEST(info.checksum.text() == Checksum::sha256(sha).text());
    BOOST_TEST(info.size == bytes.size());
    BOOST_TEST(store.verify(name).checksum.text() == Checksum::sha256(sha).text());
    const BlobRange v = store.read_all(name);
    BOOST_TEST(std::memcmp(v.data(), bytes.data(), bytes.size()) == 0);

    // A flipped byte is found with the SHA-256 the old file records.
    {
        std::fstream f(loc.path, std::ios::binary | std::ios::in | std::ios::out);
        f.seekp(static_cast<std::streamoff>(loc.data_offset + 777));
        const char flipped = static_cast<char>(bytes[777] ^ 0x10);
        f.write(&flipped, 1);
    }
    BS_CHECK_ERROR(store.verify(name), Errc::corrupt, "recorded at commit: " + Checksum::sha256(sha).text());
}

// A FileStore keeps only bytes it wrote to its own file: it adopts nothing.
BOOST_AUTO_TEST_CASE(a_file_store_adopts_no_image)
{
    test::TempDir dir;
    FileStore store(dir.path());
    BOOST_TEST(!store.adopts_images());
    const auto bytes = std::make_shared<std::vector<std::uint8_t>>(test::random_bytes(100));
    const std::shared_ptr<const std::uint8_t> image(bytes, bytes->data());
    auto r = store.reserve("CT.1", bytes->size());
    BOOST_TEST(!r->adopt(image));
    BOOST_TEST(r->written() == 0u);
}

namespace {

/// Whether this process maps `path` (/proc/self/maps).
bool mapped(const fs::path& path)
{
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);)
        if (line.size() >= path.string().size() &&
            line.compare(line.size() - path.string().size(), std::string::npos, path.string()) == 0)
            return true;
    return false;
}

/// Overwrites byte `at` of `path` with `value`.
void poke(const fs::path& path, std::uint64_t at, std::uint8_t value)
{
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(at));
    f.write(reinterpret_cast<const char*>(&value), 1);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_view_maps_its_file_only_when_its_bytes_are_read_from_memory)
{
    test::TempDir dir;
    // No kept files: a file settled by the time of the read (a slow run)
    // would stay open and mapped by the store itself (FileStoreOpenFilesTest).
    FileStore::Options options;
    options.open_files = 0;
    FileStore store(dir.path(), options);
    const auto bytes = random_bytes(300000);
    put(store, "CT.1", bytes);
    const fs::path path = store.locate("CT.1").path;
    {
        const BlobRange v = store.read_all("CT.1");
        BOOST_REQUIRE(v.fd() >= 0);
        BOOST_TEST(!mapped(path));  // what sendfile needs: the descriptor only
        BOOST_REQUIRE(v.data() != nullptr);
        BOOST_TEST(mapped(path));
        BOOST_TEST(std::memcmp(v.data(), bytes.data(), bytes.size()) == 0);
        const BlobRange copy = v;  // copies share the one mapping
        BOOST_TEST(copy.data() == v.data());
    }
    BOOST_TEST(!mapped(path));
}

BOOST_AUTO_TEST_CASE(a_blob_replaced_between_two_reads_is_never_served_stale)
{
    test::TempDir dir;
    FileStore store(dir.path());
    const auto first = random_bytes(200000, 1);
    const auto second = random_bytes(200000, 2);
    put(store, "CT.1", first);
    const BlobRange before = store.read_all("CT.1");  // not mapped yet
    auto r = store.reserve("CT.1", second.size(), ReserveMode::replace);
    BOOST_REQUIRE(!r->write(second.data(), second.size()));
    const BlobInfo replaced = r->commit();
    const BlobRange after = store.read_all("CT.1");
    BOOST_TEST(after.blob().checksum.text() == replaced.checksum.text());
    BOOST_TEST((after.blob().committed == replaced.committed));
    BOOST_TEST(std::memcmp(after.data(), second.data(), second.size()) == 0);
    // The earlier view, mapped only now, still shows the version it named.
    BOOST_TEST(before.blob().checksum.text() != replaced.checksum.text());
    BOOST_TEST(std::memcmp(before.data(), first.data(), first.size()) == 0);
    // A file put in its place behind the store's back: read as what its
    // header says, never as what the index remembered.
    const fs::path path = store.locate("CT.1").path;
    {
        FileStore other(dir.path() / "other");
        put(other, "CT.1", first);
        fs::copy_file(other.locate("CT.1").path, path.string() + ".new");
    }
    fs::rename(path.string() + ".new", path);
    const BlobRange swapped = store.read_all("CT.1");
    BOOST_TEST(swapped.blob().checksum.text() == before.blob().checksum.text());
    BOOST_TEST(std::memcmp(swapped.data(), first.data(), first.size()) == 0);
}

BOOST_AUTO_TEST_CASE(a_header_changed_behind_the_store_is_corrupt_at_the_next_read)
{
    test::TempDir dir;
    FileStore store(dir.path());
    put(store, "CT.1", random_bytes(5000, 1));
    put(store, "CT.2", random_bytes(5000, 2));
    BOOST_TEST(store.read_all("CT.1").size() == 5000u);
    BOOST_TEST(store.read_all("CT.2").size() == 5000u);
    const fs::path one = store.locate("CT.1").path;
    poke(one, 1000, 0x5a);  // the zero padding, under the header's SHA-256
    BS_CHECK_ERROR(store.read_all("CT.1"), Errc::corrupt,
                   "read \"CT.1\": " + one.string() + ": header checksum mismatch");
    const fs::path two = store.locate("CT.2").path;
    poke(two, FileStore::kHeaderSize - 1, 0x5a);  // the SHA-256 itself
    BS_CHECK_ERROR(store.read_all("CT.2"), Errc::corrupt,
                   "read \"CT.2\": " + two.string() + ": header checksum mismatch");
}

BOOST_AUTO_TEST_CASE(a_missing_blob_or_file_is_still_reported_with_its_error)
{
    test::TempDir parent;
    const fs::path dir = parent.path() / "store";
    FileStore store(dir);
    put(store, "CT.1", random_bytes(1000));
    put(store, "CT.2", random_bytes(1000));
    BOOST_TEST(!store.find("CT.9").has_value());
    BS_CHECK_ERROR(store.read_all("CT.9"), Errc::no_such_blob, "blob \"CT.9\" not found");
    const fs::path one = file_of(dir, "CT.1");
    fs::remove(one);
    BOOST_TEST(!store.find("CT.1").has_value());  // and dropped, as stat() drops it
    BOOST_TEST(store.list().size() == 1u);
    // The whole directory removed, then another put in its place: the
    // checks that run when a file cannot be found say so.
    fs::remove_all(dir);
    const std::string gone = "cannot access its directory " + dir.string() + ": No such file or directory";
    BS_CHECK_ERROR(store.find("CT.2"), Errc::io_error, "stat \"CT.2\": file store " + dir.string() + ": " + gone);
    BS_CHECK_ERROR(store.find("CT.9"), Errc::io_error, gone);
    BS_CHECK_ERROR(store.read_all("CT.2"), Errc::io_error, "read \"CT.2\": file store " + dir.string() + ": " + gone);
    fs::create_directories(dir / "blobs");
    fs::create_directories(dir / "tmp");
    BS_CHECK_ERROR(store.stat("CT.2"), Errc::io_error, "was replaced since the store opened it");
    BS_CHECK_ERROR(store.read_all("CT.2"), Errc::io_error, "was replaced since the store opened it");
    BOOST_TEST(store.usage().blob_count == 1u);
}

BOOST_AUTO_TEST_CASE(a_store_directory_renamed_under_the_store_serves_readers_and_refuses_writers)
{
    test::TempDir parent;
    const fs::path dir = parent.path() / "store";
    FileStore store(dir);
    const auto bytes = random_bytes(5000);
    put(store, "CT.1", bytes);
    fs::rename(dir, parent.path() / "moved");
    // Readers find the files relative to blobs/ as the store opened it:
    // this store's own committed Blobs, wherever the directory now is.
    BOOST_TEST(store.stat("CT.1").size == 5000u);
    const BlobRange v = store.read_all("CT.1");
    BOOST_TEST(std::memcmp(v.data(), bytes.data(), bytes.size()) == 0);
    const std::string gone = "cannot access its directory " + dir.string() + ": No such file or directory";
    BS_CHECK_ERROR(store.reserve("CT.2", 10), Errc::io_error, "reserve \"CT.2\": file store " + dir.string() + ": " + gone);
    BS_CHECK_ERROR(store.list(), Errc::io_error, gone);
    BS_CHECK_ERROR(store.stat("CT.9"), Errc::io_error, gone);
}

BOOST_AUTO_TEST_CASE(a_commit_makes_its_fanout_directory_only_when_it_is_missing)
{
    // The commit renames first and makes the fan-out directory only when
    // the rename finds none: a directory removed after its last Blob is
    // made again, one that exists is used as it is.
    test::TempDir dir;
    const auto bytes = random_bytes(70000);
    {
        FileStore store(dir.path());
        put(store, "CT.1", bytes);
        const fs::path fanout = store.locate("CT.1").path.parent_path();
        store.remove("CT.1");
        fs::remove(fanout);  // empty now
        BOOST_REQUIRE(!fs::exists(fanout));
        put(store, "CT.1", bytes);
        BOOST_TEST(fs::is_directory(fanout));
        put(store, "CT.1.again", bytes);
        BOOST_TEST(count_files(dir.path() / "tmp") == 0u);
    }
    FileStore store(dir.path());
    for (const char* name : {"CT.1", "CT.1.again"}) {
        const BlobRange v = store.read_all(name);
        BOOST_REQUIRE(v.size() == bytes.size());
        BOOST_TEST(std::memcmp(v.data(), bytes.data(), bytes.size()) == 0);
    }
}

BOOST_AUTO_TEST_CASE(a_commit_whose_reservation_file_vanished_leaves_no_blob)
{
    test::TempDir dir;
    FileStore store(dir.path());
    const auto bytes = random_bytes(40000);
    auto r = store.reserve("CT.3", bytes.size());
    BOOST_REQUIRE(!r->write(bytes.data(), bytes.size()));
    // Removed behind the store's back after its bytes arrived: the rename
    // fails (also after the fan-out directory is made), nothing is visible.
    for (const auto& e : fs::directory_iterator(dir.path() / "tmp")) fs::remove(e.path());
    BS_CHECK_ERROR(r->commit(), Errc::io_error, "commit \"CT.3\": rename ");
    r.reset();
    BS_CHECK_ERROR(store.stat("CT.3"), Errc::no_such_blob, "not found");
    BOOST_TEST(store.list().empty());
    BOOST_TEST(store.usage().reserved == 0u);
    put(store, "CT.3", bytes);  // the name is free again
    BOOST_TEST(store.stat("CT.3").size == bytes.size());
}

BOOST_AUTO_TEST_CASE(a_process_killed_right_after_a_durable_commit_leaves_the_blob_whole)
{
    test::TempDir dir;
    const auto bytes = random_bytes(600000);
    int ready[2];
    BOOST_REQUIRE(::pipe(ready) == 0);
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        ::close(ready[0]);
        FileStore store(dir.path());  // durable (sync) by default
        auto r = store.reserve("CT.7", bytes.size());
        if (r->write(bytes.data(), bytes.size())) ::_exit(3);
        r->commit();
        // The commit has returned: the parent kills this process at once.
        if (::write(ready[1], "c", 1) != 1) ::_exit(5);
        ::pause();
        ::_exit(4);
    }
    ::close(ready[1]);
    char c = 0;
    const bool committed = ::read(ready[0], &c, 1) == 1;
    ::kill(child, SIGKILL);
    int status = 0;
    BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
    ::close(ready[0]);
    BOOST_REQUIRE(committed);
    BOOST_REQUIRE(WIFSIGNALED(status));

    FileStore store(dir.path());
    BOOST_TEST(store.recovered_reservations() == 0u);
    BOOST_TEST(count_files(dir.path() / "tmp") == 0u);
    const BlobRange v = store.read_all("CT.7");
    BOOST_REQUIRE(v.size() == bytes.size());
    BOOST_TEST(std::memcmp(v.data(), bytes.data(), bytes.size()) == 0);
}

BOOST_AUTO_TEST_CASE(a_store_makes_its_fanout_directories_durable_once_at_open)
{
    // All 256 fan-out directories are made when the store opens, and their
    // entries in blobs/ made durable there: a commit syncs only its own
    // fan-out directory.
    test::TempDir dir;
    FileStore store(dir.path());
    std::size_t fanouts = 0;
    for (const auto& e : fs::directory_iterator(dir.path() / "blobs")) {
        BOOST_TEST(e.is_directory());
        BOOST_TEST(e.path().filename().string().size() == 2u);
        ++fanouts;
    }
    BOOST_TEST(fanouts == 256u);
    const std::uint64_t before = store.directory_syncs();
    put(store, "CT.21", random_bytes(1000));
    BOOST_TEST(store.directory_syncs() - before == 1u);
}

BOOST_AUTO_TEST_CASE(a_commit_that_makes_its_fanout_directory_syncs_blobs_too)
{
    // A fan-out directory removed after the store opened is made again by
    // the next commit into it, whose entry in blobs/ must then be durable
    // before the commit returns, else a crash may lose the directory with
    // its Blob: one more directory fsync (of blobs/) for that commit, none
    // for the next.
    test::TempDir dir;
    FileStore store(dir.path());
    const auto bytes = random_bytes(1000);
    fs::remove(dir.path() / "blobs" / detail::fanout("CT.20"));
    const std::uint64_t before = store.directory_syncs();
    put(store, "CT.20", bytes);
    BOOST_TEST(store.directory_syncs() - before == 2u);  // blobs/<xx>/ and blobs/
    // Another name in the same fan-out directory.
    std::string same;
    for (int i = 0; same.empty() && i < 100000; ++i) {
        const std::string name = "CT.20." + std::to_string(i);
        if (detail::fanout(name) == detail::fanout("CT.20")) same = name;
    }
    BOOST_REQUIRE(!same.empty());
    const std::uint64_t second = store.directory_syncs();
    put(store, same, bytes);
    BOOST_TEST(store.directory_syncs() - second == 1u);  // the fan-out directory only

    test::TempDir nosync;
    FileStore::Options options;
    options.sync = false;
    FileStore unsynced(nosync.path(), options);
    fs::remove(nosync.path() / "blobs" / detail::fanout("CT.20"));
    put(unsynced, "CT.20", bytes);
    BOOST_TEST(unsynced.directory_syncs() == 0u);
    BOOST_TEST(unsynced.read_all("CT.20").size() == bytes.size());
}
