// sdc-bench: N GetMdState round trips through the Consumer API, with the
// timestamps t0..t6 of each (t2..t4 fetched from the provider afterwards,
// by MessageID, when the provider is ours). Raw samples as JSON on stdout;
// statistics and plots are made by run_sdc_bench.py.
//
// --raw REQ:RESP measures t_net instead: the same number of exchanges of
// REQ request bytes and RESP response bytes over a plain TCP connection to
// an in-process echo peer on 127.0.0.1 (TCP_NODELAY, one write each way),
// i.e. the network and kernel part of a round trip without any middleware.
//
// --reports N --fifo PATH measures report delivery instead: K MDIB mirrors
// (--subscribers) subscribe to the provider, and for each of N rounds a
// `set HANDLE VALUE` line goes to the provider's --commands FIFO; the round
// ends when every mirror has applied the value. Per round: the write time,
// the first notification's header arrival, the first and the last callback
// (CLOCK_MONOTONIC ns; the provider acknowledges each change on its stdout
// with the time just before it, which run_sdc_bench.py pairs with these).

#include "blobstreaming/sdc/Consumer.h"
#include "blobstreaming/sdc/MdibMirror.h"
#include "blobstreaming/sdc/SdcError.h"

#include <blobstreaming/cli/CommandLine.h>

#include <boost/program_options.hpp>
#include <libxml/xmlversion.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace po = boost::program_options;
using namespace blobstreaming;
using namespace blobstreaming::sdc;

namespace {

long long now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void check(bool ok, const char* what)
{
    if (!ok) throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

void write_all(int fd, const char* data, std::size_t size)
{
    while (size > 0) {
        const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
        check(n > 0, "send");
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

bool read_all(int fd, char* data, std::size_t size)
{
    while (size > 0) {
        const ssize_t n = ::recv(fd, data, size, 0);
        if (n == 0) return false;
        check(n > 0, "recv");
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

/// `rounds` exchanges of `request` then `response` bytes with an echo peer
/// thread over loopback TCP; returns each round trip in ns.
std::vector<long long> raw_round_trips(long rounds, double pause_ms, std::size_t request, std::size_t response)
{
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    check(listener >= 0, "socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    check(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "bind");
    check(::listen(listener, 1) == 0, "listen");
    check(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0, "getsockname");
    const int one = 1;
    std::thread peer([&] {
        const int fd = ::accept(listener, nullptr, nullptr);
        if (fd < 0) return;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        std::vector<char> in(request), out(response, 'r');
        try {
            while (read_all(fd, in.data(), in.size())) write_all(fd, out.data(), out.size());
        } catch (const std::exception&) {}
        ::close(fd);
    });
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    check(fd >= 0, "socket");
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    check(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "connect");
    std::vector<char> out(request, 'q'), in(response);
    std::vector<long long> rtt;
    rtt.reserve(static_cast<std::size_t>(rounds));
    for (long r = 0; r < rounds; ++r) {
        const long long t0 = now_ns();
        write_all(fd, out.data(), out.size());
        check(read_all(fd, in.data(), in.size()), "the echo peer closed");
        rtt.push_back(now_ns() - t0);
        if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(pause_ms));
    }
    ::close(fd);
    peer.join();
    ::close(listener);
    return rtt;
}

/// Report delivery to `subscribers` mirrors for `rounds` changes of `handle`
/// made through the provider's command FIFO; JSON on stdout.
int run_reports(const std::string& url, const std::string& handle, long rounds, double pause_ms,
                const std::string& fifo_path, int subscribers, const TlsFiles& tls)
{
    std::mutex mutex;
    std::condition_variable applied;
    std::string expected;
    int seen = 0;
    long long first_received = 0, first_callback = 0, last_callback = 0;
    MirrorOptions options;
    options.consumer.tls = tls;
    std::vector<std::unique_ptr<MdibMirror>> mirrors;
    for (int i = 0; i < subscribers; ++i)
        mirrors.push_back(std::make_unique<MdibMirror>(
            url,
            [&](const Report& r) {
                const long long now = now_ns();
                std::lock_guard<std::mutex> lock(mutex);
                for (const auto& s : r.states) {
                    if (s.descriptor_handle != handle || s.value != expected) continue;
                    if (seen == 0) {
                        first_received = r.received_ns;
                        first_callback = now;
                    }
                    last_callback = now;
                    ++seen;
                    applied.notify_all();
                }
            },
            options));
    std::ofstream fifo(fifo_path);
    if (!fifo) throw std::runtime_error("cannot open the command FIFO " + fifo_path);
    nlohmann::json out{{"reports", rounds}, {"subscribers", subscribers}, {"pause_ms", pause_ms}, {"handle", handle}};
    for (const char* k : {"value", "t_write", "first_received", "first_callback", "last_callback"})
        out[k] = nlohmann::json::array();
    for (long r = 0; r < rounds; ++r) {
        const std::string value = std::to_string(1000000 + r);
        std::unique_lock<std::mutex> lock(mutex);
        expected = value;
        seen = 0;
        const long long t_write = now_ns();
        fifo << "set " << handle << " " << value << "\n" << std::flush;
        if (!applied.wait_for(lock, std::chrono::seconds(10), [&] { return seen >= subscribers; }))
            throw std::runtime_error("round " + std::to_string(r) + ": only " + std::to_string(seen) + " of " +
                                     std::to_string(subscribers) + " mirrors applied " + handle + "=" + value +
                                     " within 10 s");
        out["value"].push_back(value);
        out["t_write"].push_back(t_write);
        out["first_received"].push_back(first_received);
        out["first_callback"].push_back(first_callback);
        out["last_callback"].push_back(last_callback);
        lock.unlock();
        if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(pause_ms));
    }
    std::cout << out.dump() << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    std::string url;
    std::string handle;
    long rounds = 300;
    double pause_ms = 0;
    long reports = 0;
    int subscribers = 1;
    std::string fifo;
    TlsFiles tls;
    po::options_description desc("Usage: sdc-bench --url URL [options]\n\nOptions");
    // clang-format off
    desc.add_options()
        ("help,h", "show this help and exit")
        ("version", "show the versions of sdc-bench and its libraries and exit")
        ("url,u", po::value(&url), "the provider's device URL (required)")
        ("handle", po::value(&handle), "HandleRef of each GetMdState (default: all states)")
        ("rounds,n", po::value(&rounds)->default_value(rounds), "round trips (1..1000000)")
        ("pause-ms", po::value(&pause_ms)->default_value(pause_ms), "pause between round trips, ms")
        ("no-provider-times", "do not fetch t2..t4 from the provider")
        ("reports", po::value(&reports), "N: report delivery instead of GetMdState, N changes through --fifo")
        ("fifo", po::value(&fifo), "with --reports: the provider's --commands FIFO")
        ("subscribers", po::value(&subscribers)->default_value(subscribers), "with --reports: mirrors subscribed (1..1000)")
        ("tls-cert", po::value(&tls.cert), "TLS: this client's certificate (PEM)")
        ("tls-key", po::value(&tls.key), "TLS: its key (PEM)")
        ("tls-ca", po::value(&tls.ca), "TLS: CA certificates (PEM)")
        ("raw", po::value<std::string>(), "REQ:RESP: t_net, plain TCP exchanges of REQ and RESP bytes, sizes with K, M (x1024) allowed (no --url)");
    // clang-format on
    cli::add_logging_options(desc, spdlog::level::warn);
    po::variables_map vm;
    try {
        po::store(cli::command_line_parser(argc, argv).options(desc).run(), vm);
        po::notify(vm);
        if (const auto text = cli::help_or_version(vm, desc, "sdc-bench", {{"libxml2", LIBXML_DOTTED_VERSION}})) {
            std::cout << *text;
            return 0;
        }
        spdlog::set_level(cli::log_level(vm, spdlog::level::warn));
        if (vm.count("raw")) {
            const std::string spec = vm["raw"].as<std::string>();
            const auto colon = spec.find(':');
            if (colon == std::string::npos)
                throw po::error("--raw \"" + spec + "\": expected REQUEST_BYTES:RESPONSE_BYTES, e.g. 900:1400");
            const std::size_t request = cli::parse_size("--raw (request)", spec.substr(0, colon), 1, 64u << 20);
            const std::size_t response = cli::parse_size("--raw (response)", spec.substr(colon + 1), 1, 64u << 20);
            if (rounds < 1 || rounds > 1000000 || pause_ms < 0 || pause_ms > 10000)
                throw po::error("--rounds 1..1000000; --pause-ms 0..10000");
            std::signal(SIGPIPE, SIG_IGN);
            try {
                const auto rtt = raw_round_trips(rounds, pause_ms, request, response);
                std::cout << nlohmann::json{{"raw", {{"request_bytes", request}, {"response_bytes", response}}},
                                            {"rounds", rounds},
                                            {"pause_ms", pause_ms},
                                            {"rtt_ns", rtt}}
                                 .dump()
                          << "\n";
            } catch (const std::exception& e) {
                std::cerr << "sdc-bench: raw exchange: " << e.what() << "\n";
                return 1;
            }
            return 0;
        }
        if (url.empty() || rounds < 1 || rounds > 1000000 || pause_ms < 0 || pause_ms > 10000)
            throw po::error("--url is required; --rounds 1..1000000; --pause-ms 0..10000");
        if (vm.count("reports") && (reports < 1 || reports > 1000000 || fifo.empty() || handle.empty() ||
                                    subscribers < 1 || subscribers > 1000))
            throw po::error("--reports 1..1000000 needs --fifo and --handle; --subscribers 1..1000");
        tls.check("--tls-");
    } catch (const po::error& e) {
        std::cerr << "sdc-bench: " << e.what() << " (try --help)\n";
        return 1;
    } catch (const cli::UsageError& e) {
        std::cerr << "sdc-bench: " << e.what() << " (try --help)\n";
        return 1;
    } catch (const Error& e) {
        std::cerr << "sdc-bench: " << e.what() << " (try --help)\n";
        return 1;
    }
    std::signal(SIGPIPE, SIG_IGN);
    try {
        if (reports > 0) return run_reports(url, handle, reports, pause_ms, fifo, subscribers, tls);
        ConsumerOptions consumer_options;
        consumer_options.tls = tls;
        Consumer consumer = Consumer::connect(url, consumer_options);
        const std::vector<std::string> handles =
            handle.empty() ? std::vector<std::string>{} : std::vector<std::string>{handle};
        std::vector<CallTimes> calls;
        calls.reserve(static_cast<std::size_t>(rounds));
        for (long r = 0; r < rounds; ++r) {
            const auto states = consumer.get_md_state(handles);
            if (states.empty()) throw SdcError(Errc::protocol_error, "GetMdState returned no state");
            calls.push_back(consumer.last_call());
            if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(pause_ms));
        }
        nlohmann::json samples;
        for (const char* k : {"t0", "t1", "t2", "t3", "t4", "t5", "t6"}) samples[k] = nlohmann::json::array();
        bool provider_times = vm.count("no-provider-times") == 0;
        for (const auto& c : calls) {
            samples["t0"].push_back(c.t0);
            samples["t1"].push_back(c.t1);
            samples["t5"].push_back(c.t5);
            samples["t6"].push_back(c.t6);
            if (provider_times) {
                try {
                    const ProviderTimes p = consumer.provider_times(c.message_id);
                    samples["t2"].push_back(p.t2);
                    samples["t3"].push_back(p.t3);
                    samples["t4"].push_back(p.t4);
                } catch (const SdcError& e) {
                    std::cerr << "sdc-bench: no provider timestamps: " << e.what() << "\n";
                    provider_times = false;
                }
            }
        }
        if (!provider_times)
            for (const char* k : {"t2", "t3", "t4"}) samples[k] = nullptr;
        std::cout << nlohmann::json{{"url", url},
                                    {"rounds", rounds},
                                    {"pause_ms", pause_ms},
                                    {"handle", handle},
                                    {"samples", samples}}
                         .dump()
                  << "\n";
    } catch (const Error& e) {
        std::cerr << "sdc-bench: " << e.what() << "\n";
        return static_cast<int>(e.code());
    } catch (const std::exception& e) {
        std::cerr << "sdc-bench: " << e.what() << "\n";
        return 70;
    }
    return 0;
}
