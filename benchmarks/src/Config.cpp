#include "Config.h"

#include <blobstreaming/common/Error.h>

#include <getopt.h>

#include <cerrno>

#include <cstdio>
#include <cstdlib>
#include <limits>

namespace blobstreaming::bench {
namespace {

constexpr const char* kUsage =
    "usage: bsbench -s|--server [-p PORT] [-B ADDRESS] [--variant V] [--socket-buffer B|auto] [-1]\n"
    "       bsbench -c|--client HOST -p PORT [options]\n"
    "\n"
    "  -s, --server            serve clients one after another (until SIGTERM, or one with -1)\n"
    "  -c, --client HOST       run transactions against the server at HOST\n"
    "                          (blobstreaming: the Naming Service host)\n"
    "  -p, --port PORT         server port; server default 0 = ephemeral, printed when ready\n"
    "  -B, --bind ADDRESS      server address (default 127.0.0.1)\n"
    "  -1, --one-off           server: handle one client, then exit\n"
    "      --variant V         raw-c | ace | corba | blobstreaming (default raw-c)\n"
    "      --direction D       push | pull (default push)\n"
    "      --size BYTES        bytes per blob, suffixes K M G (default 1M)\n"
    "      --count N           blobs per timed run, e.g. 200 slices (default 1)\n"
    "      --runs N            timed runs (default 1)\n"
    "      --socket-buffer B   SO_SNDBUF/SO_RCVBUF in bytes, or auto (default auto)\n"
    "      --chunk BYTES       bytes per read/write call or CORBA call (default 1M)\n"
    "      --no-warmup         skip the untimed transaction before the runs\n"
    "      --store NAME        blobstreaming: the store to push to / pull from\n"
    "      --local-fast-path   blobstreaming: allow same-host file pulls (default off)\n"
    "      --no-verify         blobstreaming pull: the library does not hash while receiving\n"
    "                          (bsbench still checks every blob's digest after the timed runs)\n"
    "      --link NAME         label recorded in the JSON (default loopback)\n"
    "      --corrupt           server: flip one byte of every blob moved (tests the digest check)\n"
    "  -J, --json              one JSON object per run, one per line\n"
    "  -h, --help              this text\n"
    "      --version           the version\n";

[[noreturn]] void bad(const std::string& option, const std::string& value, const std::string& allowed)
{
    throw Error(Errc::invalid_argument, "option " + option + " \"" + value + "\": " + allowed);
}

std::uint64_t parse_number(const std::string& option, const std::string& text, std::uint64_t low,
                           std::uint64_t high)
{
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || *end != '\0' || errno != 0 || v < low || v > high)
        bad(option, text, "expected a number from " + std::to_string(low) + " to " + std::to_string(high));
    return v;
}

}  // namespace

const char* direction_name(Direction direction) noexcept
{
    return direction == Direction::push ? "push" : "pull";
}

std::uint64_t parse_size(const std::string& option, const std::string& text)
{
    std::string digits = text;
    std::uint64_t unit = 1;
    if (!digits.empty()) {
        switch (digits.back()) {
        case 'K': case 'k': unit = 1ULL << 10; break;
        case 'M': case 'm': unit = 1ULL << 20; break;
        case 'G': case 'g': unit = 1ULL << 30; break;
        default: break;
        }
        if (unit != 1) digits.pop_back();
    }
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
        bad(option, text, "expected a number of bytes with an optional K, M or G suffix (x1024)");
    const std::uint64_t v = parse_number(option, digits, 0, (1ULL << 40) / unit);
    return v * unit;
}

Config parse_command_line(int argc, char** argv)
{
    enum { kVariant = 1000, kDirection, kSize, kCount, kRuns, kSocketBuffer, kChunk, kNoWarmup, kStore,
           kLocal, kNoVerify, kLink, kCorrupt, kVersion };
    static const option options[] = {
        {"server", no_argument, nullptr, 's'},       {"client", required_argument, nullptr, 'c'},
        {"port", required_argument, nullptr, 'p'},   {"bind", required_argument, nullptr, 'B'},
        {"one-off", no_argument, nullptr, '1'},      {"json", no_argument, nullptr, 'J'},
        {"help", no_argument, nullptr, 'h'},         {"variant", required_argument, nullptr, kVariant},
        {"direction", required_argument, nullptr, kDirection},
        {"size", required_argument, nullptr, kSize}, {"count", required_argument, nullptr, kCount},
        {"runs", required_argument, nullptr, kRuns},
        {"socket-buffer", required_argument, nullptr, kSocketBuffer},
        {"chunk", required_argument, nullptr, kChunk}, {"no-warmup", no_argument, nullptr, kNoWarmup},
        {"store", required_argument, nullptr, kStore}, {"local-fast-path", no_argument, nullptr, kLocal},
        {"no-verify", no_argument, nullptr, kNoVerify},
        {"link", required_argument, nullptr, kLink}, {"corrupt", no_argument, nullptr, kCorrupt},
        {"version", no_argument, nullptr, kVersion},
        {nullptr, 0, nullptr, 0}};

    Config config;
    bool server = false;
    bool client = false;
    bool port_given = false;
    optind = 1;
    for (;;) {
        const int c = getopt_long(argc, argv, "sc:p:B:1Jh", options, nullptr);
        if (c == -1) break;
        const std::string value = optarg != nullptr ? optarg : "";
        switch (c) {
        case 's': server = true; break;
        case 'c': client = true; config.host = value; break;
        case 'B': config.host = value; break;
        case 'p':
            config.port = static_cast<std::uint16_t>(parse_number("--port", value, 0, 65535));
            port_given = true;
            break;
        case '1': config.one_off = true; break;
        case 'J': config.json = true; break;
        case 'h': std::fputs(kUsage, stdout); std::exit(0);
        case kVersion: std::puts("bsbench " PACKAGE_VERSION); std::exit(0);
        case kVariant:
            if (value != "raw-c" && value != "ace" && value != "corba" && value != "blobstreaming")
                bad("--variant", value, "expected raw-c, ace, corba or blobstreaming");
            config.variant = value;
            break;
        case kDirection:
            if (value == "push") config.direction = Direction::push;
            else if (value == "pull") config.direction = Direction::pull;
            else bad("--direction", value, "expected push or pull");
            break;
        case kSize: config.size = parse_size("--size", value); break;
        case kCount:
            config.count = static_cast<std::uint32_t>(parse_number("--count", value, 1, 100000));
            break;
        case kRuns: config.runs = static_cast<std::uint32_t>(parse_number("--runs", value, 1, 100000)); break;
        case kSocketBuffer:
            if (value == "auto") {
                config.socket_buffer = 0;
            } else {
                const std::uint64_t b = parse_size("--socket-buffer", value);
                if (b < 1024 || b > static_cast<std::uint64_t>(std::numeric_limits<int>::max() / 2))
                    bad("--socket-buffer", value, "expected auto or 1K to 1G");
                config.socket_buffer = static_cast<int>(b);
            }
            break;
        case kChunk: {
            const std::uint64_t b = parse_size("--chunk", value);
            if (b < 1024 || b > (1ULL << 30)) bad("--chunk", value, "expected 1K to 1G");
            config.chunk = static_cast<std::uint32_t>(b);
            break;
        }
        case kNoWarmup: config.warmup = false; break;
        case kStore: config.store = value; break;
        case kLocal: config.local_fast_path = true; break;
        case kNoVerify: config.verify = false; break;
        case kLink: config.link = value; break;
        case kCorrupt: config.corrupt = true; break;
        default:
            throw Error(Errc::invalid_argument, std::string("unknown or incomplete option (see bsbench --help)"));
        }
    }
    if (optind < argc) bad("argument", argv[optind], "bsbench takes no positional arguments");
    if (server == client) throw Error(Errc::invalid_argument, "must either be a client (-c) or server (-s)");
    config.role = server ? Role::server : Role::client;
    if (client && !port_given) throw Error(Errc::invalid_argument, "client: --port is required");
    if (config.size == 0) bad("--size", "0", "a blob has at least one byte");
    if (config.size * config.count > (8ULL << 30))
        throw Error(Errc::invalid_argument, "--size x --count: at most 8G per run (held in memory on both sides)");
    if (config.variant == "blobstreaming" && client && config.store.empty())
        throw Error(Errc::invalid_argument, "--variant blobstreaming: --store NAME is required");
    if (!config.verify && config.variant != "blobstreaming")
        throw Error(Errc::invalid_argument, "--no-verify: only with --variant blobstreaming (it switches off the "
                                            "client library's pull check), not with --variant " + config.variant);
    return config;
}

}  // namespace blobstreaming::bench
