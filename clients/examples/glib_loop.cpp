// A GUI's own event loop drives the Session: a GLib main loop (GTK's, or a
// Qt application's through QSocketNotifier alike) watches the Session's one
// descriptor (Session::descriptor(), g_unix_fd_add) and its next deadline
// (Session::next_timeout(), g_timeout_add), and calls run_once(0) when
// either fires. The Session runs in ReactorMode::Caller: it has no thread of
// its own for the data plane; every byte and every callback is handled on
// this, the GUI's, thread.
//
// Pulls a series of Blobs into memory and prints, per Blob, its name, size
// and the CRC32C of the bytes received; then how the loop was woken and the
// process's threads (by name: the library's control workers are
// "blob-control"; ReactorMode::Thread would add a "blob-loop").
//
//   glib_loop NAMING_URL STORE [--receive-buffer BYTES] NAME...
//
// (--receive-buffer: SO_RCVBUF of the data connections; a small one makes a
// transfer wait on its socket often, each wait ended through the descriptor.)
#include <blobstreaming/client/Session.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>

#include <glib-unix.h>
#include <glib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <map>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::client;

namespace {

/// What the GLib sources need: the Session, the loop, the pending timer.
struct Driver {
    Session* session = nullptr;
    GMainLoop* loop = nullptr;
    guint timer = 0;
    bool finished = false;
    unsigned long fd_wakeups = 0;
    unsigned long timer_wakeups = 0;
    unsigned long rounds = 0;  ///< run_once() calls
    unsigned long events = 0;  ///< what they handled
    unsigned long off_thread_calls = 0;  ///< library callbacks not on the main thread (must stay 0)
};

bool on_main_thread() { return ::syscall(SYS_gettid) == ::getpid(); }

gboolean on_timer(gpointer data);

/// Runs what the Session has ready, then waits for its descriptor or its
/// next deadline, whichever comes first. At most 16 rounds per wake-up, so
/// that the GUI's other sources get their turn during a long transfer: the
/// descriptor stays readable while work is left, and GLib comes back.
void drive(Driver& d)
{
    for (int i = 0; i < 16; ++i) {
        const std::size_t handled = d.session->run_once(std::chrono::milliseconds(0));
        ++d.rounds;
        d.events += handled;
        if (handled == 0) break;
    }
    if (d.timer != 0) g_source_remove(d.timer);
    d.timer = 0;
    if (d.finished) {
        g_main_loop_quit(d.loop);
        return;
    }
    const auto wait = d.session->next_timeout();
    d.timer = g_timeout_add(static_cast<guint>(wait.count()), on_timer, &d);
}

gboolean on_ready(gint, GIOCondition, gpointer data)
{
    auto& d = *static_cast<Driver*>(data);
    ++d.fd_wakeups;
    drive(d);
    return G_SOURCE_CONTINUE;
}

gboolean on_timer(gpointer data)
{
    auto& d = *static_cast<Driver*>(data);
    d.timer = 0;  // this source ends with the return below
    ++d.timer_wakeups;
    drive(d);
    return G_SOURCE_REMOVE;
}

/// The names of this process's threads (/proc/self/task/*/comm).
std::map<std::string, int> threads()
{
    std::map<std::string, int> out;
    DIR* dir = ::opendir("/proc/self/task");
    if (dir == nullptr) return out;
    while (const dirent* e = ::readdir(dir)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
        std::string name;
        std::getline(comm, name);
        ++out[name];
    }
    ::closedir(dir);
    return out;
}

}  // namespace

int main(int argc, char** argv)
{
    Session::Options options;
    int first = 3;  // the first NAME
    if (argc > 4 && std::string(argv[3]) == "--receive-buffer") {
        options.receive_buffer = std::atoi(argv[4]);
        first = 5;
    }
    if (argc <= first || options.receive_buffer < 0) {
        std::fprintf(stderr, "usage: glib_loop NAMING_URL STORE [--receive-buffer BYTES] NAME...\n");
        return 1;
    }
    options.naming_url = argv[1];
    options.default_store = argv[2];
    options.reactor = ReactorMode::Caller;
    options.local_fast_path = false;  // every byte over a data connection, through the loop

    try {
        Session session(options);
        Driver d;
        d.session = &session;
        d.loop = g_main_loop_new(nullptr, FALSE);
        const guint watch = g_unix_fd_add(session.descriptor(), G_IO_IN, on_ready, &d);

        std::vector<std::vector<std::uint8_t>> blobs(static_cast<std::size_t>(argc - first));
        std::vector<PullSlice> slices;
        for (int i = first; i < argc; ++i)
            slices.push_back({argv[i], PullSink::memory(&blobs[static_cast<std::size_t>(i - first)])});
        int failures = 0;
        session.pull_series(
            std::move(slices), PullOptions{}, Mode::Async,
            [&](const SeriesResult& r) {
                if (!on_main_thread()) ++d.off_thread_calls;
                failures += static_cast<int>(r.failed);
                for (const Result& slice : r.slices)
                    if (!slice.ok()) std::printf("failed: %s\n", slice.message.c_str());
                d.finished = true;
            },
            [&](std::size_t, const Result&) {
                if (!on_main_thread()) ++d.off_thread_calls;
            });
        drive(d);  // the first run and the first deadline; GLib takes it from here
        g_main_loop_run(d.loop);

        for (std::size_t i = 0; i < blobs.size(); ++i)
            std::printf("pulled %s %zu crc32c:%s\n", argv[static_cast<std::size_t>(first) + i], blobs[i].size(),
                        ChecksumState::of(ChecksumAlgorithm::crc32c, blobs[i].data(), blobs[i].size()).hex().c_str());
        std::printf("wakeups descriptor=%lu timer=%lu off-thread-callbacks=%lu rounds=%lu events=%lu\n", d.fd_wakeups,
                    d.timer_wakeups, d.off_thread_calls, d.rounds, d.events);
        std::string names;
        int total = 0;
        for (const auto& [name, count] : threads()) {
            names += (names.empty() ? "" : ",") + name + "x" + std::to_string(count);
            total += count;
        }
        std::printf("threads %d %s\n", total, names.c_str());

        g_source_remove(watch);
        if (d.timer != 0) g_source_remove(d.timer);
        g_main_loop_unref(d.loop);
        return failures == 0 && d.off_thread_calls == 0 ? 0 : 2;
    } catch (const Error& e) {
        std::fprintf(stderr, "glib_loop: %s\n", e.what());
        return static_cast<int>(e.code());
    }
}
