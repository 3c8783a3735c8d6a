/// ConnectionGate (ConnectionGate.h): connection caps for a daemon's
/// CORBA endpoint, from the kernel's socket table.
#include <blobstreaming/transporter/corba/ConnectionGate.h>

#include "InstallInterceptor.h"

#include <omniORB4/CORBA.h>
#include <omniORB4/omniInterceptors.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

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

/// Into `out`: the connections whose local port is `port` and that hold a descriptor:
/// accepted (a connection in the accept queue has no inode yet), not
/// listening, not in TIME_WAIT.
bool read_connections(std::uint16_t port, std::vector<Connection>& out)
{
    for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(file);
        if (!in) {
            if (std::strcmp(file, "/proc/net/tcp6") == 0 && errno == ENOENT) continue;  // no IPv6
            return false;  // out of descriptors: the counts stay as they are
        }
        std::string line;
        std::getline(in, line);  // the header
        while (std::getline(in, line)) {
            char local[64], remote[64], state[8];
            unsigned long inode = 0;
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            if (std::sscanf(line.c_str(), " %*[^:]: %63s %63s %7s %*s %*s %*s %*s %*s %lu", local, remote, state,
                            &inode) != 4)
                continue;
            const std::string l = local, r = remote, st = state;
            const auto lc = l.rfind(':'), rc = r.rfind(':');
            if (lc == std::string::npos || rc == std::string::npos) continue;
            if (std::strtoul(l.substr(lc + 1).c_str(), nullptr, 16) != port) continue;
            if (st == "0A" || st == "06" || st == "03") continue;  // LISTEN, TIME_WAIT, SYN_RECV
            if (inode == 0) continue;  // not accepted yet: no descriptor
            const std::string peer = address_text(r.substr(0, rc));
            out.push_back({peer, peer + ":" + std::to_string(std::strtoul(r.c_str() + rc + 1, nullptr, 16)), inode});
        }
    }
    return true;
}

/// Reads the kernel's table again unless it was read within kRefreshEvery.
/// Every connection omniORB accepted is in it, whether or not the gate saw
/// it yet (omniORB asks the gate from the connection's first thread).
void refresh(Gate& g)
{
    const auto now = Clock::now();
    if (now - g.read_at < kRefreshEvery) return;
    std::vector<Connection> connections;
    if (!read_connections(g.port, connections)) return;
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
bool end_connection(unsigned long inode)
{
    if (inode == 0) return false;
    const std::string target = "socket:[" + std::to_string(inode) + "]";
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        std::error_code link_ec;
        if (std::filesystem::read_symlink(entry.path(), link_ec).string() != target) continue;
        const int fd = std::atoi(entry.path().filename().c_str());
        struct stat st {};
        if (::fstat(fd, &st) != 0 || st.st_ino != inode) return false;
        return ::shutdown(fd, SHUT_RDWR) == 0;
    }
    return false;
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
        const auto hog = std::max_element(g.count.begin(), g.count.end(),
                                          [](const auto& a, const auto& b) { return a.second < b.second; });
        if (hog == g.count.end() || hog->first == peer || hog->second <= g.count[peer]) break;
        const std::string victim = hog->first;
        for (auto it = g.open.begin(); it != g.open.end(); ++it) {
            if (it->second.peer != victim || !end_connection(it->second.inode)) continue;
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

void install(std::uint16_t port, GateLimits limits)
{
    Gate& g = gate();
    {
        std::lock_guard lock(g.mutex);
        g.port = port;
        g.limits = limits;
    }
    install_interceptor(omniORB::getInterceptors()->serverAcceptConnection, &on_accept);
}

void sweep()
{
    Gate& g = gate();
    std::lock_guard lock(g.mutex);
    if (g.port == 0) return;
    // Cheap first: fewer descriptors than the caps allow connections, nothing
    // to sweep (the kernel's table lists every socket of the host).
    std::size_t descriptors = 0;
    std::error_code count_ec;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", count_ec);
         !count_ec && it != std::filesystem::directory_iterator(); it.increment(count_ec))
        ++descriptors;
    if (!count_ec && descriptors <= g.limits.total) return;
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
    if (victims.empty()) return;
    // One pass over this process's descriptors for all of them.
    std::map<unsigned long, int> fds;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        std::error_code link_ec;
        const std::string link = std::filesystem::read_symlink(entry.path(), link_ec).string();
        if (link.rfind("socket:[", 0) == 0)
            fds[std::strtoul(link.c_str() + 8, nullptr, 10)] = std::atoi(entry.path().filename().c_str());
    }
    for (const auto& v : victims) {
        const auto fd = fds.find(v->second.inode);
        struct stat st {};
        if (fd == fds.end() || ::fstat(fd->second, &st) != 0 || st.st_ino != v->second.inode) continue;
        if (::shutdown(fd->second, SHUT_RDWR) != 0) continue;
        ++g.swept;
        spdlog::debug("connection from {} ended: beyond the caps", v->first);
        forget(g, v);
    }
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
    while (!wake_.wait_for(lock, kSweepEvery, [this] { return stopping_; })) {
        lock.unlock();
        connection_gate::sweep();
        if (std::chrono::steady_clock::now() - summary_at >= kSummaryEvery) {
            summary_at = std::chrono::steady_clock::now();
            if (const std::string s = connection_gate::summary(); !s.empty()) spdlog::warn("{}", s);
        }
        lock.lock();
    }
}

}  // namespace blobstreaming::corba
