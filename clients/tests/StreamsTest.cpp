// Byte sources and sinks on their own (no store, no event loop): what a
// file sink does to what exists at its path (regular files, symbolic
// links, devices, FIFOs, inherited descriptors) when a pull succeeds and
// when it fails, and how a file source treats FIFOs and files that change
// size while they are pushed.
#include "Streams.h"

#include "ErrorOf.h"

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE StreamsTest
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <future>
#include <optional>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::client;

namespace {

/// A temporary directory, removed with what it holds.
struct TempDir {
    TempDir()
    {
        char name[] = "/tmp/streams-test.XXXXXX";
        BOOST_REQUIRE(::mkdtemp(name) != nullptr);
        path = name;
    }
    ~TempDir()
    {
        const std::string cleanup = "rm -rf '" + path + "'";
        [[maybe_unused]] const int rc = std::system(cleanup.c_str());
    }
    std::string operator/(const std::string& name) const { return path + "/" + name; }
    std::vector<std::string> entries() const
    {
        std::vector<std::string> names;
        DIR* d = ::opendir(path.c_str());
        while (dirent* e = ::readdir(d))
            if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.push_back(e->d_name);
        ::closedir(d);
        std::sort(names.begin(), names.end());
        return names;
    }
    std::string path;
};

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string read_file(const std::string& path)
{
    std::string got;
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return got;
    char buf[65536];
    ssize_t n = 0;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return got;
}

/// Pulls `bytes` into `sink` as a transfer does, up to `finish` or not.
void deliver(Sink& sink, const std::string& bytes, bool finish)
{
    sink.open(bytes.size());
    std::size_t done = 0;
    while (done < bytes.size()) {
        auto [window, room] = sink.window();
        const std::size_t n = std::min(room, bytes.size() - done);
        std::memcpy(window, bytes.data() + done, n);
        sink.commit(n);
        done += n;
    }
    if (finish) sink.finish();
}

using test::error_of;

/// A character device whose writes fail with ENOSPC: /dev/full's numbers
/// in `dir` when this process may make device nodes, else /dev/full itself
/// (which it then cannot remove either).
std::string full_device(const TempDir& dir)
{
    struct stat real {};
    BOOST_REQUIRE(::stat("/dev/full", &real) == 0);
    const std::string path = dir / "full";
    if (::mknod(path.c_str(), S_IFCHR | 0666, real.st_rdev) == 0) {
        const int fd = ::open(path.c_str(), O_WRONLY);
        if (fd >= 0) {
            ::close(fd);
            return path;
        }
        ::unlink(path.c_str());
    }
    return "/dev/full";
}

const std::string kOld = "the previous version\n";
const std::string kNew(300000, 'n');

}  // namespace

BOOST_AUTO_TEST_CASE(a_new_file_appears_only_when_finished)
{
    TempDir dir;
    const std::string path = dir / "new.dcm";
    {
        auto sink = make_sink(PullSink::file(path), "pull");
        deliver(*sink, kNew, false);
        BOOST_TEST(::access(path.c_str(), F_OK) != 0);  // not visible while it is written
        sink->abandon();
    }
    BOOST_TEST(dir.entries().empty());
    {
        auto sink = make_sink(PullSink::file(path), "pull");
        deliver(*sink, kNew, false);
    }  // destroyed without finish() or abandon(): as abandon()
    BOOST_TEST(dir.entries().empty());
    auto sink = make_sink(PullSink::file(path), "pull");
    deliver(*sink, kNew, true);
    sink->abandon();  // after finish(): nothing to undo
    BOOST_TEST(read_file(path) == kNew);
    BOOST_TEST((dir.entries() == std::vector<std::string>{"new.dcm"}));
}

BOOST_AUTO_TEST_CASE(an_existing_file_keeps_its_bytes_until_the_pull_succeeds)
{
    TempDir dir;
    const std::string path = dir / "old.dcm";
    write_file(path, kOld);
    BOOST_REQUIRE(::chmod(path.c_str(), 0640) == 0);
    struct stat before {};
    BOOST_REQUIRE(::stat(path.c_str(), &before) == 0);
    {
        auto sink = make_sink(PullSink::file(path), "pull");
        deliver(*sink, kNew, false);
        BOOST_TEST(read_file(path) == kOld);
        sink->abandon();
    }
    struct stat after {};
    BOOST_REQUIRE(::stat(path.c_str(), &after) == 0);
    BOOST_TEST(read_file(path) == kOld);
    BOOST_TEST(after.st_ino == before.st_ino);
    BOOST_TEST((dir.entries() == std::vector<std::string>{"old.dcm"}));

    auto sink = make_sink(PullSink::file(path), "pull");
    deliver(*sink, kNew, true);
    BOOST_REQUIRE(::stat(path.c_str(), &after) == 0);
    BOOST_TEST(read_file(path) == kNew);
    BOOST_TEST((after.st_mode & 07777) == 0640u);
    BOOST_TEST((dir.entries() == std::vector<std::string>{"old.dcm"}));
}

BOOST_AUTO_TEST_CASE(a_symbolic_link_stays_and_its_target_is_replaced)
{
    TempDir dir;
    const std::string target = dir / "target.dcm";
    const std::string link = dir / "link.dcm";
    write_file(target, kOld);
    BOOST_REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
    auto sink = make_sink(PullSink::file(link), "pull");
    deliver(*sink, kNew, true);
    struct stat st {};
    BOOST_REQUIRE(::lstat(link.c_str(), &st) == 0);
    BOOST_TEST(S_ISLNK(st.st_mode));
    BOOST_TEST(read_file(target) == kNew);
    BOOST_TEST((dir.entries() == std::vector<std::string>{"link.dcm", "target.dcm"}));

    const std::string dangling = dir / "dangling.dcm";
    BOOST_REQUIRE(::symlink((dir / "missing/x").c_str(), dangling.c_str()) == 0);
    auto to_dangling = make_sink(PullSink::file(dangling), "pull \"A\"");
    const auto e = error_of([&] { to_dangling->open(1); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->what() == "pull \"A\": cannot write " + dangling + ": it is a symbolic link to a missing file");
}

BOOST_AUTO_TEST_CASE(a_device_that_fails_is_reported_and_left_alone)
{
    TempDir dir;
    const std::string device = full_device(dir);
    struct stat before {};
    BOOST_REQUIRE(::stat(device.c_str(), &before) == 0);
    auto sink = make_sink(PullSink::file(device), "pull \"A\"");
    const auto e = error_of([&] { deliver(*sink, kNew, true); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::io_error));
    BOOST_TEST(e->what() == "pull \"A\": cannot write " + device + ": No space left on device");
    sink->abandon();
    sink.reset();
    struct stat after {};
    BOOST_REQUIRE(::lstat(device.c_str(), &after) == 0);
    BOOST_TEST(S_ISCHR(after.st_mode));
    BOOST_TEST(after.st_rdev == before.st_rdev);
    BOOST_TEST(after.st_ino == before.st_ino);
}

BOOST_AUTO_TEST_CASE(a_fifo_is_written_in_place_and_never_waited_for, *boost::unit_test::timeout(60))
{
    TempDir dir;
    const std::string fifo = dir / "out.fifo";
    BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // Nobody reads: refused at once (a blocking open would stall the reactor).
    auto lonely = make_sink(PullSink::file(fifo), "pull \"A\"");
    const auto e = error_of([&] { lonely->open(1); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->what() == "pull \"A\": cannot write the FIFO " + fifo + ": no process has it open for reading");

    // A reader that has opened it (O_NONBLOCK: no writer yet) gets every byte.
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    BOOST_REQUIRE(reader >= 0);
    auto drained = std::async(std::launch::async, [reader] {
        std::string got;
        char buf[65536];
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (std::chrono::steady_clock::now() < deadline) {
            // Before a writer came, poll() waits (no POLLHUP yet); after it
            // left, it reports POLLHUP and read() returns 0.
            pollfd p{reader, POLLIN, 0};
            if (::poll(&p, 1, 1000) <= 0) continue;
            const ssize_t n = ::read(reader, buf, sizeof buf);
            if (n > 0) got.append(buf, static_cast<std::size_t>(n));
            if (n == 0) break;
        }
        ::close(reader);
        return got;
    });
    auto sink = make_sink(PullSink::file(fifo), "pull");
    deliver(*sink, kNew, true);
    sink.reset();
    BOOST_REQUIRE(drained.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
    BOOST_TEST(drained.get() == kNew);
    struct stat st {};
    BOOST_REQUIRE(::lstat(fifo.c_str(), &st) == 0);
    BOOST_TEST(S_ISFIFO(st.st_mode));
}

BOOST_AUTO_TEST_CASE(inherited_descriptors_are_written_where_they_stand)
{
    TempDir dir;
    const std::string path = dir / "appended";
    write_file(path, kOld);
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
    BOOST_REQUIRE(fd >= 0);
    for (const std::string& name : {"/dev/fd/" + std::to_string(fd), "/proc/self/fd/" + std::to_string(fd)}) {
        auto sink = make_sink(PullSink::file(name), "pull");
        deliver(*sink, kNew, true);
    }
    auto sink = make_sink(PullSink::descriptor(fd, "out"), "pull");
    deliver(*sink, kNew, true);
    sink.reset();
    BOOST_TEST(::fcntl(fd, F_GETFD) != -1);  // still open: not the sink's to close
    ::close(fd);
    BOOST_TEST(read_file(path) == kOld + kNew + kNew + kNew);
}

/// Copies [offset, offset + n) of `from` into `sink` as the same-host path
/// does: kernel copy where the sink takes it, else its window. Returns how
/// many bytes went by kernel copy.
std::size_t deliver_from_file(Sink& sink, int from, std::uint64_t offset, std::size_t n)
{
    sink.open(n);
    std::size_t done = 0;
    std::size_t kernel = 0;
    while (done < n) {
        std::size_t moved = sink.copy_from_file(from, offset + done, n - done);
        kernel += moved;
        if (moved == 0) {
            auto [window, room] = sink.window();
            moved = std::min(room, n - done);
            BOOST_REQUIRE(::pread(from, window, moved, static_cast<off_t>(offset + done)) ==
                          static_cast<ssize_t>(moved));
            sink.commit(moved);
        }
        done += moved;
    }
    sink.finish();
    return kernel;
}

BOOST_AUTO_TEST_CASE(kernel_copies_go_to_regular_files_and_other_destinations_fall_back)
{
    TempDir dir;
    const std::string source = dir / "store-file";
    write_file(source, kOld + kNew);
    const int from = ::open(source.c_str(), O_RDONLY);
    BOOST_REQUIRE(from >= 0);

    // A new regular file (through its temporary file): copied in the kernel.
    const std::string path = dir / "new.dcm";
    auto file = make_sink(PullSink::file(path), "pull");
    BOOST_TEST(deliver_from_file(*file, from, kOld.size(), kNew.size()) == kNew.size());
    BOOST_TEST(read_file(path) == kNew);

    // A pipe takes no kernel copy: every byte through the bounce buffer.
    int pipe_fds[2];
    BOOST_REQUIRE(::pipe(pipe_fds) == 0);
    auto drained = std::async(std::launch::async, [fd = pipe_fds[0]] {
        std::string got;
        char buf[65536];
        ssize_t n = 0;
        while ((n = ::read(fd, buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
        ::close(fd);
        return got;
    });
    auto piped = make_sink(PullSink::descriptor(pipe_fds[1], "pipe"), "pull");
    BOOST_TEST(deliver_from_file(*piped, from, kOld.size(), kNew.size()) == 0u);
    piped.reset();
    ::close(pipe_fds[1]);
    BOOST_TEST(drained.get() == kNew);

    // copy_file_range refuses an O_APPEND descriptor (EBADF): the bytes are
    // appended through the bounce buffer instead.
    const std::string appended = dir / "appended";
    write_file(appended, kOld);
    const int fd = ::open(appended.c_str(), O_WRONLY | O_APPEND);
    BOOST_REQUIRE(fd >= 0);
    auto append = make_sink(PullSink::descriptor(fd, "out"), "pull");
    BOOST_TEST(deliver_from_file(*append, from, kOld.size(), kNew.size()) == 0u);
    ::close(fd);
    BOOST_TEST(read_file(appended) == kOld + kNew);

    // Memory takes no kernel copy either.
    std::vector<std::uint8_t> memory;
    auto vector = make_sink(PullSink::memory(&memory), "pull");
    BOOST_TEST(deliver_from_file(*vector, from, 0, kOld.size()) == 0u);
    BOOST_TEST(std::string(memory.begin(), memory.end()) == kOld);
    ::close(from);
}

BOOST_AUTO_TEST_CASE(resuming_needs_a_regular_file, *boost::unit_test::timeout(60))
{
    TempDir dir;
    const std::string fifo = dir / "in.fifo";
    BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    for (const std::string& path : {fifo, full_device(dir)}) {
        const auto e = error_of([&] { hash_existing_file(path, kDefaultChecksum, "pull \"A\""); });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::invalid_argument));
        BOOST_TEST(std::string(e->what()).find("pull \"A\": resume needs a regular file to continue: " + path +
                                               " is a ") == 0);
    }
    // A resumed file keeps what it holds when the pull fails.
    const std::string part = dir / "part";
    write_file(part, kOld);
    auto sink = make_sink(PullSink::file(part), "pull", kOld.size());
    deliver(*sink, kNew, false);
    sink->abandon();
    BOOST_TEST(read_file(part) == kOld + kNew);
}

BOOST_AUTO_TEST_CASE(a_file_source_refuses_a_fifo_without_waiting_for_a_writer, *boost::unit_test::timeout(60))
{
    TempDir dir;
    const std::string fifo = dir / "in.fifo";
    BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    auto opened = std::async(std::launch::async,
                             [&] { return error_of([&] { open_source(PushSource::file(fifo), "push \"A\""); }); });
    if (opened.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
        const int writer = ::open(fifo.c_str(), O_WRONLY);  // releases the blocked open
        opened.wait();
        ::close(writer);
        BOOST_FAIL("opening a FIFO as a push source waited for a writer");
    }
    const auto e = opened.get();
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::io_error));
    BOOST_TEST(std::string(e->what()).find("push \"A\": " + fifo + " is a FIFO, not a regular file") == 0);
}

BOOST_AUTO_TEST_CASE(a_file_source_that_shrinks_fails_and_one_that_grows_sends_its_first_size)
{
    TempDir dir;
    const std::string path = dir / "in.bin";
    write_file(path, std::string(1 << 20, 's'));
    int pair[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pair) == 0);
    {
        Channel channel(pair[0]);
        HashPipeline hash;
        auto source = open_source(PushSource::file(path), "push \"A\"");
        BOOST_REQUIRE(::truncate(path.c_str(), 1000) == 0);
        BOOST_TEST(source->send(channel, 1 << 20, hash) == 1000);
        const auto e = error_of([&] { source->send(channel, 1 << 20, hash); });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(static_cast<int>(e->code()) == static_cast<int>(Errc::io_error));
        BOOST_TEST(e->what() == "push \"A\": " + path +
                                    " shrank while it was being pushed: it has 1000 bytes, "
                                    "1048576 when the push started (1000 were sent)");
    }
    char sink[4096];
    while (::read(pair[1], sink, sizeof sink) > 0) {}
    {
        Channel channel(pair[0]);
        HashPipeline hash;
        auto source = open_source(PushSource::file(path), "push \"A\"");
        BOOST_TEST(source->size() == 1000u);
        std::ofstream(path, std::ios::binary | std::ios::app) << std::string(500, 'g');
        long sent = 0;
        for (int i = 0; i < 100 && sent < 1000; ++i) sent += source->send(channel, 1 << 20, hash);
        BOOST_TEST(sent == 1000);
        BOOST_TEST(hash.finish().text() ==
                   ChecksumState::of(kDefaultChecksum, std::string(1000, 's').data(), 1000).text());
        std::string got;
        ssize_t n = 0;
        while ((n = ::read(pair[1], sink, sizeof sink)) > 0) got.append(sink, static_cast<std::size_t>(n));
        BOOST_TEST(got == std::string(1000, 's'));
    }
    ::close(pair[0]);
    ::close(pair[1]);
}
