#include <blobstreaming/common/DescriptorReserve.h>
#include <blobstreaming/common/UniqueFd.h>

#define BOOST_TEST_MODULE DescriptorReserve
#include "TestSupport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

using namespace blobstreaming;

namespace {

/// A blocking listener on 127.0.0.1 (as the DICOM port's is) and its port.
UniqueFd listener(std::uint16_t& port)
{
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    BOOST_REQUIRE(fd);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE_EQUAL(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    BOOST_REQUIRE_EQUAL(::listen(fd.get(), 16), 0);
    socklen_t len = sizeof a;
    BOOST_REQUIRE_EQUAL(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
    port = ntohs(a.sin_port);
    return fd;
}

UniqueFd connect_to(std::uint16_t port)
{
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    BOOST_REQUIRE_EQUAL(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
}

/// True when the peer of `fd` has closed its end (a read sees end of file).
bool closed_by_peer(int fd)
{
    timeval t{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
    char c;
    const ssize_t n = ::recv(fd, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_errors_of_running_out_are_told_from_those_of_one_connection)
{
    for (const int e : {EMFILE, ENFILE, ENOBUFS, ENOMEM}) BOOST_CHECK(out_of_descriptors(e));
    for (const int e : {ECONNABORTED, EINTR, EAGAIN, EBADF, EPROTO}) BOOST_CHECK(!out_of_descriptors(e));
}

BOOST_AUTO_TEST_CASE(nothing_pending_returns_at_once_on_a_blocking_listener)
{
    std::uint16_t port = 0;
    const UniqueFd l = listener(port);
    DescriptorReserve reserve;
    BOOST_CHECK_EQUAL(reserve.held(), 2u);
    BOOST_CHECK_EQUAL(reserve.shed_pending(l.get(), 8), 0);  // would hang if it called accept(2) blindly
    BOOST_CHECK_EQUAL(reserve.held(), 2u);
}

BOOST_AUTO_TEST_CASE(out_of_descriptors_the_pending_connections_are_closed_and_the_reserve_taken_again)
{
    std::uint16_t port = 0;
    const UniqueFd l = listener(port);
    std::vector<UniqueFd> peers;
    for (int i = 0; i < 3; ++i) peers.push_back(connect_to(port));

    rlimit saved{};
    BOOST_REQUIRE_EQUAL(::getrlimit(RLIMIT_NOFILE, &saved), 0);
    DescriptorReserve reserve;
    // Take every descriptor left under a lowered limit: accept(2) fails with EMFILE.
    rlimit low = saved;
    low.rlim_cur = 256;
    BOOST_REQUIRE_EQUAL(::setrlimit(RLIMIT_NOFILE, &low), 0);
    std::vector<UniqueFd> filler;
    for (;;) {
        UniqueFd fd(::dup(l.get()));
        if (!fd) break;
        filler.push_back(std::move(fd));
    }
    BOOST_CHECK_EQUAL(::accept(l.get(), nullptr, nullptr), -1);
    BOOST_CHECK_EQUAL(errno, EMFILE);

    BOOST_CHECK_EQUAL(reserve.shed_pending(l.get(), 2), 2);  // at most the limit
    BOOST_CHECK_EQUAL(reserve.held(), 2u);
    BOOST_CHECK_EQUAL(reserve.shed_pending(l.get(), 8), 1);
    filler.clear();
    BOOST_REQUIRE_EQUAL(::setrlimit(RLIMIT_NOFILE, &saved), 0);
    for (const auto& p : peers) BOOST_CHECK(closed_by_peer(p.get()));
}

BOOST_AUTO_TEST_CASE(the_idle_holders_are_asked_first_and_never_after_they_go)
{
    std::uint16_t port = 0;
    const UniqueFd l = listener(port);
    DescriptorReserve reserve;
    int asked = 0;
    {
        const auto registration = IdleDescriptors::add([&] {
            ++asked;
            return std::size_t{3};
        });
        BOOST_CHECK_EQUAL(reserve.shed_pending(l.get(), 8), 0);
        BOOST_CHECK_EQUAL(asked, 1);
        BOOST_CHECK_EQUAL(IdleDescriptors::release_all(), 3u);
        BOOST_CHECK_EQUAL(asked, 2);
    }
    BOOST_CHECK_EQUAL(IdleDescriptors::release_all(), 0u);
    BOOST_CHECK_EQUAL(asked, 2);
}
