/// ConnectionGate (ConnectionGate.h): connection caps for a daemon's
/// CORBA endpoint, from the kernel's socket table.
#include <blobstreaming/transporter/corba/ConnectionGate.h>

#include "InstallInterceptor.h"

#include <blobstreaming/common/UniqueFd.h>

#include <omniORB4/CORBA.h>
#include <omniORB4/omniInterceptors.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/tcp.h>
#include <netinet/in.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace blobstreaming::corba::connection_gate {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRefreshEvery = std::chrono::milliseconds(100);
/// How long a refused or ended connection is not counted any more.
constexpr auto kClosing = std::chrono::seconds(2);
constexpr std::size_t kMaxClosing = 65536;
/// Addresses whose refusal is logged individually (then only counted).
constexpr std::size_t kLoggedPeers = 64;

/// A connection on the endpoint, as the kernel lists it.
struct Connection {
    std::string peer;  ///< remote address
    std::string key;   ///< remote address and port
    unsigned long inode = 0;
};

/// A connection open on the endpoint.
struct Open {
    std::string peer;
    unsigned long inode = 0;  ///< 0 until the kernel's table was read after it came
};

struct Gate {
    std::mutex mutex;
    std::uint16_t port = 0;
    GateLimits limits;
    /// sweep() reads the kernel's table while the process holds more
    /// descriptors than this, or while the last sweep ended any.
    unsigned quiet_below = 0;
    bool sweep_again = false;
    Clock::time_point read_at;
    /// By remote address and port: the kernel's table as last read, plus
    /// the connections let in since, less those refused or ended since.
    std::map<std::string, Open> open;
    std::map<std::string, unsigned> count;  ///< of `open`, by remote address
    /// Refused or ended lately: omniORB may not have closed them yet when
    /// the table is read again.
    std::map<std::string, Clock::time_point> closing;
    // for summary()
    unsigned refused_peer = 0, refused_total = 0, evicted = 0, swept = 0;
    std::set<std::string> logged;
    /// Opened at install() and kept: the gate must read the kernel's table
    /// and this process's descriptors when the process has none left to
    /// open (omniORB accepts faster than it asks the gate).
    UniqueFd tcp, tcp6;
    /// A NETLINK_SOCK_DIAG socket: asks the kernel for the endpoint's
    /// connections only (a filter on the local port), where /proc/net/tcp
    /// lists every socket of the host (most of the gate's CPU on a host with
    /// a thousand sockets). The /proc files are the fallback.
    UniqueFd diag;
    std::unique_ptr<DIR, int (*)(DIR*)> fds{nullptr, &::closedir};  ///< /proc/self/fd
    std::string text;  ///< buffer of read_connections()
};

Gate& gate()
{
    static Gate g;
    return g;
}

void forget(Gate& g, std::map<std::string, Open>::iterator it)
{
    if (g.closing.size() < kMaxClosing) g.closing[it->first] = Clock::now();
    if (--g.count[it->second.peer] == 0) g.count.erase(it->second.peer);
    g.open.erase(it);
}

/// "127.0.0.1" from "giop:tcp:127.0.0.1:4711", "::1" from "giop:tcp:[::1]:4711";
/// an IPv4-mapped IPv6 address as IPv4.
std::string host_of(const char* address)
{
    std::string a = address ? address : "";
    const auto colon = a.find(':', a.find(':') + 1);  // after "giop:tcp"
    if (colon != std::string::npos) a = a.substr(colon + 1);
    const auto last = a.rfind(':');
    if (last != std::string::npos) a = a.substr(0, last);
    if (a.size() >= 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
    if (a.rfind("::ffff:", 0) == 0 && a.find('.') != std::string::npos) a = a.substr(7);
    return a;
}

/// "127.0.0.1:4711" from "giop:tcp:127.0.0.1:4711" (the key of a connection).
std::string key_of(const char* address)
{
    const std::string a = address ? address : "";
    const auto port = a.rfind(':');
    return host_of(address) + ":" + (port == std::string::npos ? "" : a.substr(port + 1));
}

/// One address of /proc/net/tcp{,6}: hex words in the kernel's byte order.
std::string address_text(const std::string& hex)
{
    char text[INET6_ADDRSTRLEN] = "";
    if (hex.size() == 8) {
        in_addr a{};
        a.s_addr = static_cast<std::uint32_t>(std::strtoul(hex.c_str(), nullptr, 16));
        ::inet_ntop(AF_INET, &a, text, sizeof text);
        return text;
    }
    if (hex.size() != 32) return hex;
    in6_addr a{};
    for (int i = 0; i < 4; ++i) {
        const auto word = static_cast<std::uint32_t>(std::strtoul(hex.substr(i * 8, 8).c_str(), nullptr, 16));
        std::memcpy(a.s6_addr + i * 4, &word, 4);
    }
    ::inet_ntop(AF_INET6, &a, text, sizeof text);
    std::string s = text;
    if (s.rfind("::ffff:", 0) == 0 && s.find('.') != std::string::npos) s = s.substr(7);
    return s;
}

/// The whole of a /proc file open as `fd` into `out` (pread from offset 0:
/// the kernel writes the file anew).
bool read_whole(int fd, std::string& out)
{
    out.clear();
    char buf[65536];
    for (off_t offset = 0;;) {
        const ssize_t n = ::pread(fd, buf, sizeof buf, offset);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        if (n == 0) return true;
        out.append(buf, static_cast<std::size_t>(n));
        offset += n;
    }
}

/// The text of an address of a sock_diag answer (`words`: network order),
/// an IPv4-mapped IPv6 address as IPv4.
std::string diag_address(std::uint8_t family, const std::uint32_t (&words)[4])
{
    char text[INET6_ADDRSTRLEN] = "";
    ::inet_ntop(family == AF_INET ? AF_INET : AF_INET6, words, text, sizeof text);
    std::string a = text;
    if (a.rfind("::ffff:", 0) == 0 && a.find('.') != std::string::npos) a = a.substr(7);
    return a;
}

/// One sock_diag dump of `family`'s TCP sockets whose local port is the
/// gate's, accepted ones only (as read_connections()). False when the kernel
/// did not answer as expected (the caller reads /proc instead).
bool diag_connections(Gate& g, std::uint8_t family, std::vector<Connection>& out)
{
    struct Request {
        nlmsghdr header;
        inet_diag_req_v2 request;
        nlattr filter;
        inet_diag_bc_op ops[2];  // local port == g.port (ss(8)'s "sport = :PORT")
    } req{};
    req.header.nlmsg_len = sizeof req;
    req.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.request.sdiag_family = family;
    req.request.sdiag_protocol = IPPROTO_TCP;
    // Not LISTEN, TIME_WAIT nor SYN_RECV (no descriptor).
    req.request.idiag_states = 0xfff & ~((1u << TCP_LISTEN) | (1u << TCP_TIME_WAIT) | (1u << TCP_SYN_RECV));
    req.filter.nla_len = sizeof req.filter + sizeof req.ops;
    req.filter.nla_type = INET_DIAG_REQ_BYTECODE;
    req.ops[0] = inet_diag_bc_op{INET_DIAG_BC_S_EQ, static_cast<unsigned char>(sizeof req.ops),
                                 static_cast<unsigned short>(sizeof req.ops + 4)};  // no: past the end, rejected
    req.ops[1] = inet_diag_bc_op{0, 0, g.port};
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(g.diag.get(), &req, sizeof req, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) !=
        static_cast<ssize_t>(sizeof req))
        return false;
    alignas(nlmsghdr) char buf[32768];
    for (;;) {
        const ssize_t n = ::recv(g.diag.get(), buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        // The messages of this datagram (NLMSG_NEXT without its casts).
        constexpr std::size_t kHeader = (sizeof(nlmsghdr) + 3) & ~std::size_t{3};
        for (std::size_t at = 0; at + sizeof(nlmsghdr) <= static_cast<std::size_t>(n);) {
            nlmsghdr h;
            std::memcpy(&h, buf + at, sizeof h);
            if (h.nlmsg_len < sizeof h || at + h.nlmsg_len > static_cast<std::size_t>(n)) return false;
            if (h.nlmsg_type == NLMSG_DONE) return true;
            if (h.nlmsg_type == NLMSG_ERROR) return false;
            if (h.nlmsg_type == SOCK_DIAG_BY_FAMILY && h.nlmsg_len >= kHeader + sizeof(inet_diag_msg)) {
                inet_diag_msg m;
                std::memcpy(&m, buf + at + kHeader, sizeof m);
                if (m.idiag_inode != 0) {  // 0: not accepted yet, no descriptor
                    const std::string peer = diag_address(m.idiag_family, m.id.idiag_dst);
                    out.push_back({peer, peer + ":" + std::to_string(ntohs(m.id.idiag_dport)), m.idiag_inode});
                }
            }
            at += (h.nlmsg_len + 3) & ~std::uint32_t{3};
        }
    }
}

/// Into `out`: the connections whose local port is `port` and that hold a descriptor:
/// accepted (a connection in the accept queue has no inode yet), not
/// listening, not in TIME_WAIT.
bool read_connections(Gate& g, std::vector<Connection>& out)
{
    if (g.diag) {
        if (diag_connections(g, AF_INET, out) && diag_connections(g, AF_INET6, out)) return true;
        // An answer cut short or refused: drain what is left, then /proc.
        out.clear();
        char drain[4096];
        while (::recv(g.diag.get(), drain, sizeof drain, MSG_DONTWAIT) > 0) {
        }
    }
    for (const UniqueFd* file : {&g.tcp, &g.tcp6}) {
        if (!*file) continue;  // no IPv6
        if (!read_whole(file->get(), g.text)) return false;
        std::size_t at = g.text.find('\n');  // after the header
        while (at != std::string::npos && at + 1 < g.text.size()) {
            const std::size_t next = g.text.find('\n', at + 1);
            const std::string line = g.text.substr(at + 1, next == std::string::npos ? next : next - at - 1);
            at = next;
            char local[64], remote[64], state[8];
            unsigned long inode = 0;
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            if (std::sscanf(line.c_str(), " %*[^:]: %63s %63s %7s %*s %*s %*s %*s %*s %lu", local, remote, state,
                            &inode) != 4)
                continue;
            const std::string l = local, r = remote, st = state;
            const auto lc = l.rfind(':'), rc = r.rfind(':');
            if (lc == std::string::npos || rc == std::string::npos) continue;
            if (std::strtoul(l.substr(lc + 1).c_str(), nullptr, 16) != g.port) continue;
            if (st == "0A" || st == "06" || st == "03") continue;  // LISTEN, TIME_WAIT, SYN_RECV
            if (inode == 0) continue;  // not accepted yet: no descriptor
            const std::string peer = address_text(r.substr(0, rc));
            out.push_back({peer, peer + ":" + std::to_string(std::strtoul(r.c_str() + rc + 1, nullptr, 16)), inode});
        }
    }
    return true;
}

/// Calls `each(fd, socket inode)` for every socket descriptor of this
/// process (none with a null `each`: counting only), and returns how many
/// descriptors it holds (-1: unknown).
template <class Each>
long for_each_socket(Gate& g, Each each)
{
    if (!g.fds) return -1;
    ::rewinddir(g.fds.get());
    long count = 0;
    while (const dirent* entry = ::readdir(g.fds.get())) {
        if (entry->d_name[0] == '.') continue;
        ++count;
        if constexpr (!std::is_same_v<Each, std::nullptr_t>) {
            char link[64];
            const ssize_t n = ::readlinkat(::dirfd(g.fds.get()), entry->d_name, link, sizeof link - 1);
            if (n <= 8) continue;
            link[n] = '\0';
            if (std::strncmp(link, "socket:[", 8) == 0)
                each(std::atoi(entry->d_name), std::strtoul(link + 8, nullptr, 10));
        }
    }
    return count;
}

/// Reads the kernel's table again unless it was read within kRefreshEvery.
/// Every connection omniORB accepted is in it, whether or not the gate saw
/// it yet (omniORB asks the gate from the connection's first thread).
void refresh(Gate& g)
{
    const auto now = Clock::now();
    if (now - g.read_at < kRefreshEvery) return;
    std::vector<Connection> connections;
    if (!read_connections(g, connections)) return;
    g.read_at = now;
    g.open.clear();
    g.count.clear();
    for (auto it = g.closing.begin(); it != g.closing.end();)
        it = now - it->second > kClosing ? g.closing.erase(it) : std::next(it);
    for (auto& c : connections) {
        // The kernel writes the table in pieces: a socket that moved
        // meanwhile may be listed twice.
        if (g.closing.count(c.key) || !g.open.emplace(c.key, Open{c.peer, c.inode}).second) continue;
        ++g.count[c.peer];
    }
}

/// Ends the connection of socket `inode` held by this process (shutdown:
/// omniORB notices the end and closes its descriptor). False when none.
bool end_connection(Gate& g, unsigned long inode)
{
    if (inode == 0) return false;
    int found = -1;
    for_each_socket(g, [&](int fd, unsigned long socket) {
        if (socket == inode) found = fd;
    });
    struct stat st {};
    if (found < 0 || ::fstat(found, &st) != 0 || st.st_ino != inode) return false;
    return ::shutdown(found, SHUT_RDWR) == 0;
}

void log_refusal(Gate& g, const std::string& peer, const std::string& why)
{
    if (g.logged.size() >= kLoggedPeers || !g.logged.insert(peer).second) return;
    spdlog::warn("connection from {} refused: {} (further refusals of it are counted in a summary)", peer, why);
}

CORBA::Boolean on_accept(omni::omniInterceptors::serverAcceptConnection_T::info_T& info)
{
    const char* mine = info.myaddress();
    const std::string my = mine ? mine : "";
    const auto colon = my.rfind(':');
    if (colon == std::string::npos || std::strtoul(my.c_str() + colon + 1, nullptr, 10) != gate().port)
        return true;  // another endpoint
    const std::string peer = host_of(info.peeraddress());
    const std::string key = key_of(info.peeraddress());
    Gate& g = gate();
    std::lock_guard lock(g.mutex);
    refresh(g);
    if (g.closing.count(key)) {  // ended by sweep() before omniORB asked: already counted
        info.reject = 1;
        info.why = "ended: beyond the connection caps";
        return true;
    }
    auto self = g.open.find(key);
    if (self == g.open.end()) {  // came after the last read
        self = g.open.emplace(key, Open{peer, 0}).first;
        ++g.count[peer];
    }
    const auto refuse = [&](const char* why, const std::string& text) {
        forget(g, self);  // omniORB closes it
        log_refusal(g, peer, text);
        info.reject = 1;
        info.why = why;
        return true;
    };
    const unsigned from_peer = g.count[peer];
    spdlog::debug("connection from {}: {} from that address, {} in all", key, from_peer, g.open.size());
    if (from_peer > g.limits.per_peer) {
        ++g.refused_peer;
        return refuse("too many connections from this address",
                      std::to_string(g.limits.per_peer) + " connections from that address already (at most " +
                          std::to_string(g.limits.per_peer) + " per address)");
    }
    if (g.open.size() <= g.limits.total) return true;
    // Room is made at the expense of the address that holds the most; the
    // sockets of connections that came since the last read are learnt by
    // reading the table again.
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (attempt == 1) {
            g.read_at = {};
            refresh(g);
            self = g.open.find(key);
            if (self == g.open.end()) {
                self = g.open.emplace(key, Open{peer, 0}).first;
                ++g.count[peer];
            }
            if (g.open.size() <= g.limits.total) return true;
        }
        // The other address that holds the most, if it holds at least as
        // many as the newcomer's address would with the newcomer.
        const auto hog = std::max_element(g.count.begin(), g.count.end(), [&](const auto& a, const auto& b) {
            return (a.first == peer ? 0 : a.second) < (b.first == peer ? 0 : b.second);
        });
        if (hog == g.count.end() || hog->first == peer || hog->second < g.count[peer]) break;
        const std::string victim = hog->first;
        for (auto it = g.open.begin(); it != g.open.end(); ++it) {
            if (it->second.peer != victim || !end_connection(g, it->second.inode)) continue;
            forget(g, it);
            ++g.evicted;
            return true;
        }
    }
    ++g.refused_total;
    return refuse("too many connections", std::to_string(g.limits.total) + " connections open (at most " +
                                              std::to_string(g.limits.total) +
                                              "), none to end of an address holding more");
}

}  // namespace

void install(std::uint16_t port, GateLimits limits, unsigned threaded)
{
    Gate& g = gate();
    {
        std::lock_guard lock(g.mutex);
        g.port = port;
        g.limits = limits;
        g.quiet_below = threaded > 0 ? std::min(threaded, limits.total) : limits.total;
        if (!g.tcp) g.tcp.reset(::open("/proc/net/tcp", O_RDONLY | O_CLOEXEC));
        if (!g.tcp6) g.tcp6.reset(::open("/proc/net/tcp6", O_RDONLY | O_CLOEXEC));
        if (!g.fds) g.fds.reset(::opendir("/proc/self/fd"));
        if (!g.diag) g.diag.reset(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
        if (!g.tcp || !g.fds)
            spdlog::warn("connection gate: cannot read /proc/net/tcp or /proc/self/fd ({}): connections are not "
                         "capped",
                         std::strerror(errno));
    }
    install_interceptor(omniORB::getInterceptors()->serverAcceptConnection, &on_accept);
}

unsigned sweep()
{
    Gate& g = gate();
    std::lock_guard lock(g.mutex);
    if (g.port == 0) return 0;
    // Cheap first: fewer descriptors than omniORB serves on threads of their
    // own (it asked the gate about each) and nothing left from a burst,
    // nothing to sweep (the kernel's table lists every socket of the host).
    const long descriptors = for_each_socket(g, nullptr);
    const bool crowded = descriptors < 0 || static_cast<unsigned long>(descriptors) > g.quiet_below;
    if (!crowded && !g.sweep_again) return 0;
    g.sweep_again = crowded;
    g.read_at = {};
    refresh(g);
    // Newest first (inodes grow): by address beyond its cap, then from the
    // address that holds the most until the total fits.
    std::map<std::string, std::vector<std::map<std::string, Open>::iterator>> by_peer;
    for (auto it = g.open.begin(); it != g.open.end(); ++it) by_peer[it->second.peer].push_back(it);
    std::vector<std::map<std::string, Open>::iterator> victims;
    for (auto& [peer, list] : by_peer) {
        std::sort(list.begin(), list.end(), [](auto a, auto b) { return a->second.inode > b->second.inode; });
        while (list.size() > g.limits.per_peer) {
            victims.push_back(list.front());
            list.erase(list.begin());
        }
    }
    std::size_t open = g.open.size() - victims.size();
    while (open > g.limits.total) {
        auto hog = std::max_element(by_peer.begin(), by_peer.end(),
                                    [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
        if (hog == by_peer.end() || hog->second.empty()) break;
        victims.push_back(hog->second.front());
        hog->second.erase(hog->second.begin());
        --open;
    }
    if (victims.empty()) return 0;
    g.sweep_again = true;  // until a sweep finds nothing beyond the caps
    std::map<unsigned long, int> fds;  // socket inode -> descriptor
    for_each_socket(g, [&](int fd, unsigned long inode) { fds[inode] = fd; });
    unsigned ended = 0;
    for (const auto& v : victims) {
        const auto fd = fds.find(v->second.inode);
        struct stat st {};
        if (fd == fds.end() || ::fstat(fd->second, &st) != 0 || st.st_ino != v->second.inode) continue;
        if (::shutdown(fd->second, SHUT_RDWR) != 0) continue;
        ++g.swept;
        ++ended;
        spdlog::debug("connection from {} ended: beyond the caps", v->first);
        forget(g, v);
    }
    return ended;
}

std::string summary()
{
    Gate& g = gate();
    std::lock_guard lock(g.mutex);
    if (g.refused_peer + g.refused_total + g.evicted + g.swept == 0) return {};
    std::string s = "connections refused: " + std::to_string(g.refused_peer) + " (an address at its cap of " +
                    std::to_string(g.limits.per_peer) + "), " + std::to_string(g.refused_total) + " (" +
                    std::to_string(g.limits.total) + " open in all); ended to make room: " +
                    std::to_string(g.evicted) + ", beyond the caps before omniORB asked: " +
                    std::to_string(g.swept) + "; open now: " + std::to_string(g.open.size());
    g.refused_peer = g.refused_total = g.evicted = g.swept = 0;
    g.logged.clear();
    return s;
}

}  // namespace blobstreaming::corba::connection_gate

namespace blobstreaming::corba {

namespace {
constexpr auto kSweepEvery = std::chrono::milliseconds(250);
constexpr auto kSweepAgain = std::chrono::milliseconds(20);
constexpr auto kSummaryEvery = std::chrono::seconds(10);
}  // namespace

void GateSweeper::start()
{
    std::lock_guard lock(mutex_);
    if (thread_.joinable()) return;
    stopping_ = false;
    thread_ = std::thread([this] { run(); });
}

void GateSweeper::stop()
{
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void GateSweeper::run()
{
    auto summary_at = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    unsigned ended = 0;
    while (!wake_.wait_for(lock, ended > 0 ? kSweepAgain : kSweepEvery, [this] { return stopping_; })) {
        lock.unlock();
        ended = connection_gate::sweep();
        if (std::chrono::steady_clock::now() - summary_at >= kSummaryEvery) {
            summary_at = std::chrono::steady_clock::now();
            if (const std::string s = connection_gate::summary(); !s.empty()) spdlog::warn("{}", s);
        }
        lock.lock();
    }
}

}  // namespace blobstreaming::corba
