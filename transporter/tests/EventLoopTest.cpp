// EventLoop::descriptor() and next_timeout(): what an application's own
// event loop (Session::descriptor()) relies on.

#include <blobstreaming/transporter/client/EventLoop.h>

#define BOOST_TEST_MODULE EventLoopTest
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using blobstreaming::dataplane::EventLoop;
using namespace std::chrono_literals;

namespace {

bool readable(int fd)
{
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

struct SocketPair {
    int fds[2] = {-1, -1};
    SocketPair() { BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0); }
    ~SocketPair()
    {
        ::close(fds[0]);
        ::close(fds[1]);
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(readable_while_a_watched_descriptor_is_ready_and_quiet_once_it_is_handled)
{
    EventLoop loop([] {}, 1000ms);
    SocketPair pair;
    int handled = 0;
    loop.watch(pair.fds[0], POLLIN, [&](short) {
        char buffer[16];
        while (::read(pair.fds[0], buffer, sizeof buffer) > 0) {}
        ++handled;
    });
    loop.run_once(0ms);
    BOOST_TEST(!readable(loop.descriptor()));
    BOOST_REQUIRE(::write(pair.fds[1], "x", 1) == 1);
    BOOST_TEST(readable(loop.descriptor()));
    while (loop.run_once(0ms) > 0) {}
    BOOST_TEST(handled == 1);
    BOOST_TEST(!readable(loop.descriptor()));
    // Unwatched: its readiness no longer counts.
    loop.unwatch(pair.fds[0]);
    BOOST_REQUIRE(::write(pair.fds[1], "y", 1) == 1);
    BOOST_TEST(!readable(loop.descriptor()));
}

BOOST_AUTO_TEST_CASE(readable_for_a_posted_task_until_it_ran_and_next_timeout_is_zero_meanwhile)
{
    EventLoop loop([] {}, 200ms);
    loop.run_once(0ms);
    BOOST_TEST(!readable(loop.descriptor()));
    BOOST_TEST(loop.next_timeout().count() <= 200);
    bool ran = false;
    loop.post([&] { ran = true; });
    BOOST_TEST(readable(loop.descriptor()));
    BOOST_TEST(loop.next_timeout().count() == 0);
    while (loop.run_once(0ms) > 0) {}
    BOOST_TEST(ran);
    BOOST_TEST(!readable(loop.descriptor()));
}

BOOST_AUTO_TEST_CASE(watched_for_writing_only_when_asked)
{
    EventLoop loop([] {}, 1000ms);
    SocketPair pair;
    loop.watch(pair.fds[0], POLLIN, [](short) {});
    BOOST_TEST(!readable(loop.descriptor()));  // writable, but not watched for it
    loop.modify(pair.fds[0], POLLOUT);
    BOOST_TEST(readable(loop.descriptor()));
    loop.modify(pair.fds[0], 0);
    BOOST_TEST(!readable(loop.descriptor()));
    loop.unwatch(pair.fds[0]);
}
