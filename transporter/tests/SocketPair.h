#pragma once
/// A connected pair of non-blocking stream sockets for the unit tests of
/// transporter/ (Channel, the data-plane I/O layer).

#include <blobstreaming/common/UniqueFd.h>

#include <boost/test/unit_test.hpp>

#include <sys/socket.h>

namespace blobstreaming::test {

struct SocketPair {
    UniqueFd a, b;
    /// `buffer` > 0 shrinks both sockets' buffers, so that writes stop part way.
    explicit SocketPair(int buffer = 0)
    {
        int fds[2];
        BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
        a.reset(fds[0]);
        b.reset(fds[1]);
        if (buffer > 0)
            for (int fd : fds) {
                ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
                ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
            }
    }
};

}  // namespace blobstreaming::test
