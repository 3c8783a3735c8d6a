#pragma once
// Processes the client tests run for real: omniNames and blobstored on
// 127.0.0.1 with ephemeral ports and temporary directories, stopped by PID;
// and what the tests read back from them (a daemon's request trace, the
// stores' reservations).

#include <blobstreaming/client/Session.h>
#include <blobstreaming/common/Error.h>

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace blobstreaming::client::test {

/// A TCP port that was free a moment ago (bound to port 0, then released).
inline int free_port()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

inline Session::Options options_for(const std::string& url)
{
    Session::Options o;
    o.naming_url = url;
    o.timeout = std::chrono::milliseconds(2000);
    return o;
}

/// omniNames on 127.0.0.1:ephemeral in a temporary directory.
class NameServer {
public:
    NameServer()
    {
        char dir[] = "/tmp/blobclient-ns.XXXXXX";
        BOOST_REQUIRE(::mkdtemp(dir) != nullptr);
        dir_ = dir;
        port_ = free_port();
        const char* env = std::getenv("OMNINAMES");
        const std::string program = env != nullptr && *env != '\0' ? env : "omniNames";
        const std::string port = std::to_string(port_);
        const std::string endpoint = "giop:tcp:127.0.0.1:" + port;
        const std::string errlog = dir_ + "/ns.err";
        pid_ = ::fork();
        BOOST_REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            ::execlp(program.c_str(), program.c_str(), "-start", port.c_str(), "-always", "-datadir", dir_.c_str(),
                     "-errlog", errlog.c_str(), "-ORBendPoint", endpoint.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        // Ready when a Session can contact it (bounded: 100 x 100 ms).
        for (int i = 0; i < 100; ++i) {
            try {
                Session probe(options_for(url()));
                return;
            } catch (const Error&) {
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        }
        BOOST_FAIL("omniNames did not start on port " + port);
    }
    ~NameServer()
    {
        ::kill(pid_, SIGTERM);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        const std::string cleanup = "rm -rf '" + dir_ + "'";
        [[maybe_unused]] const int rc = std::system(cleanup.c_str());
    }
    const std::string& dir() const { return dir_; }
    std::string url() const { return "corbaname::127.0.0.1:" + std::to_string(port_); }

private:
    std::string dir_;
    int port_ = 0;
    pid_t pid_ = -1;
};

/// blobstored serving `store_spec` under `name`, registered with `ns`;
/// ready once it printed its "blobstored ready" line (within 10 s). With a
/// `trace_file`, its ORB logs every request it dispatches there (omniORB's
/// traceInvocations: "Dispatching remote call 'OP' to: ...").
class StoreDaemon {
public:
    StoreDaemon(const NameServer& ns, const std::string& name, const std::string& store_spec,
                const std::string& trace_file = "")
    {
        const char* build = std::getenv("BS_BUILDDIR");
        const std::string program = std::string(build != nullptr ? build : ".") + "/blobstore/blobstored";
        int out[2];
        BOOST_REQUIRE(::pipe(out) == 0);
        const std::string url = ns.url();
        pid_ = ::fork();
        BOOST_REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            ::dup2(out[1], STDOUT_FILENO);
            ::close(out[0]);
            ::close(out[1]);
            if (!trace_file.empty()) {
                const int err = ::open(trace_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (err < 0) ::_exit(126);
                ::dup2(err, STDERR_FILENO);
                ::close(err);
                ::setenv("ORBtraceInvocations", "1", 1);
            }
            ::execl(program.c_str(), program.c_str(), "--name", name.c_str(), "--store", store_spec.c_str(), "--naming",
                    url.c_str(), "--control-address", "127.0.0.1:0", "--data-address", "127.0.0.1:0", "-q",
                    static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(out[1]);
        std::string line;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
            pollfd p{out[0], POLLIN, 0};
            if (::poll(&p, 1, 200) <= 0) continue;
            char buf[256];
            const ssize_t n = ::read(out[0], buf, sizeof buf);
            if (n <= 0) break;
            line.append(buf, static_cast<std::size_t>(n));
        }
        ::close(out[0]);
        BOOST_REQUIRE_MESSAGE(line.rfind("blobstored ready", 0) == 0, program + " did not become ready: " + line);
    }
    ~StoreDaemon()
    {
        ::kill(pid_, SIGTERM);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }

private:
    pid_t pid_ = -1;
};

/// omniNames, a FileStore "ws" and a MemoryStore "mem", started once per
/// test program (at the first call) and shared by its cases.
struct SharedStores {
    NameServer ns;
    StoreDaemon ws{ns, "ws", "file:" + ns.dir() + "/ws"};
    StoreDaemon mem{ns, "mem", "memory:64M"};
};

inline SharedStores& shared_stores()
{
    static SharedStores s;
    return s;
}

/// omniNames and a MemoryStore "traced" whose ORB logs every request it
/// dispatches to `trace` (read it with dispatched()).
struct TracedStore {
    NameServer ns;
    std::string trace = ns.dir() + "/daemon.trace";
    StoreDaemon daemon{ns, "traced", "memory:64M", trace};

    /// Session options for it, "traced" as the default store.
    Session::Options options() const
    {
        Session::Options o = options_for(ns.url());
        o.default_store = "traced";
        return o;
    }
};

/// The requests a StoreDaemon started with a `trace_file` dispatched, in
/// order (the operation names: "push", "send", ...).
inline std::vector<std::string> dispatched(const std::string& trace_file)
{
    std::ifstream in(trace_file);
    std::vector<std::string> ops;
    const std::string marker = "Dispatching remote call '";
    for (std::string line; std::getline(in, line);) {
        const auto at = line.find(marker);
        if (at == std::string::npos) continue;
        const auto begin = at + marker.size();
        ops.push_back(line.substr(begin, line.find('\'', begin) - begin));
    }
    return ops;
}

/// The bytes reserved in every store, once that is 0 or after 10 s: a
/// failed push's reservation is dropped by the daemon when its data
/// connection sees the end, which may come just after the completion.
inline std::uint64_t reserved_once_settled(Session& session)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::uint64_t reserved = 0;
    do {
        reserved = 0;
        for (const auto& store : session.stores()) reserved += store.reserved;
        if (reserved == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    return reserved;
}

}  // namespace blobstreaming::client::test
