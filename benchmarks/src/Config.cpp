#include "Config.h"

#include <blobstreaming/cli/CommandLine.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/LibraryVersions.h>
#include <blobstreaming/transporter/Log.h>

#include <boost/program_options.hpp>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <limits>

namespace po = boost::program_options;

namespace blobstreaming::bench {
namespace {

constexpr const char* kUsage =
    "usage: bsbench -s|--server [-p PORT] [-B ADDRESS] [--variant V] [--socket-buffer B|auto] [-1]\n"
    "       bsbench -c|--client HOST -p PORT [options]\n"
    "Exit status: 0, 1 usage, or the failure's code (docs/CLI.md; 24 when any run moved wrong bytes)\n"
    "\n"
    "Options";

po::options_description describe()
{
    po::options_description d(kUsage);
    // clang-format off
    // clang-format off
    d.add_options()
        ("server,s", "serve clients one after another (until SIGTERM, or one with -1)")
        ("client,c", po::value<std::string>()->value_name("HOST"), "run transactions against the server at HOST "
                                                                    "(blobstreaming: the Naming Service host)")
        ("port,p", po::value<std::string>()->value_name("PORT"), "server port; server default 0 = ephemeral, printed when ready")
        ("bind,B", po::value<std::string>()->value_name("ADDRESS"), "server address (default 127.0.0.1)")
        ("one-off,1", "server: handle one client, then exit")
        ("variant", po::value<std::string>()->value_name("V"), "raw-c | raw-c-durable | ace | corba | blobstreaming | memcpy (default raw-c; memcpy: no server, "
                                                  "one memcpy() per blob between two buffers of this process, the memory ceiling)")
        ("direction", po::value<std::string>()->value_name("D"), "push | pull (default push)")
        ("size", po::value<std::string>()->value_name("BYTES"), "bytes per blob, K M G T (x1024) allowed, 1 to 1T (default 1M)")
        ("count", po::value<std::string>()->value_name("N"), "blobs per timed run, e.g. 200 slices (default 1); blobstreaming moves them as one series")
        ("runs", po::value<std::string>()->value_name("N"), "timed runs (default 1)")
        ("socket-buffer", po::value<std::string>()->value_name("B"), "SO_SNDBUF/SO_RCVBUF, 1K to 1G, or auto (default auto)")
        ("chunk", po::value<std::string>()->value_name("BYTES"), "bytes per read/write call or CORBA call, 1K to 1G (default 1M)")
        ("no-warmup", "skip the untimed transaction before the runs")
        ("paced", "prints \"bsbench client ready\" after the warm-up; each timed run then waits for a line on "
                  "standard input (EOF: no more runs) and prints \"bsbench run timed\" when its timed interval ends; "
                  "for a driver that interleaves variants")
        ("store", po::value<std::string>()->value_name("NAME"), "blobstreaming: the store to push to / pull from")
        ("local-fast-path", "blobstreaming: allow same-host file pulls (default off)")
        ("no-verify", "blobstreaming pull: the library does not hash while receiving "
                      "(bsbench still checks every blob's digest after the timed runs)")
        ("dir", po::value<std::string>()->value_name("DIR"), "raw-c-durable server: directory for the received files, "
                                                            "each fdatasync()ed before its Ack (default $TMPDIR, else /tmp)")
        ("link", po::value<std::string>()->value_name("NAME"), "label recorded in the JSON (default loopback)")
        ("corrupt", "server: flip one byte of every blob moved (tests the digest check)")
        ("json,J", "one JSON object per run, one per line")
        ("help,h", "this text")
        ("version", "the versions of bsbench and its libraries");
    // clang-format on
    // clang-format on
    cli::add_logging_options(d, spdlog::level::warn);
    return d;
}

[[noreturn]] void bad(const std::string& option, const std::string& value, const std::string& allowed)
{
    throw Error(Errc::invalid_argument, "option " + option + " \"" + value + "\": " + allowed);
}

std::uint64_t parse_number(const std::string& option, const std::string& text, std::uint64_t low, std::uint64_t high)
{
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || *end != '\0' || errno != 0 || v < low || v > high)
        bad(option, text, "expected a number from " + std::to_string(low) + " to " + std::to_string(high));
    return v;
}

}  // namespace

const char* direction_name(Direction direction) noexcept { return direction == Direction::push ? "push" : "pull"; }

Config parse_command_line(int argc, char** argv)
{
    const po::options_description desc = describe();
    po::variables_map vm;
    try {
        po::store(cli::command_line_parser(argc, argv).options(desc).run(), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        throw cli::UsageError(std::string(e.what()) + " (see bsbench --help)");
    }
    if (const auto text = cli::help_or_version(vm, desc, "bsbench", transporter_library_versions())) {
        std::cout << *text << std::flush;
        std::exit(0);
    }
    spdlog::set_level(cli::log_level(vm, spdlog::level::warn));
    set_library_logger(spdlog::default_logger());  // -v shows the library's transfer lines too
    const auto text = [&](const char* option) { return vm[option].as<std::string>(); };

    Config config;
    const bool server = vm.count("server") != 0;
    const bool client = vm.count("client") != 0;
    if (client) config.host = text("client");
    if (vm.count("bind")) config.host = text("bind");
    const bool port_given = vm.count("port") != 0;
    if (port_given) config.port = static_cast<std::uint16_t>(parse_number("--port", text("port"), 0, 65535));
    config.one_off = vm.count("one-off") != 0;
    config.json = vm.count("json") != 0;
    if (vm.count("variant")) {
        config.variant = text("variant");
        if (config.variant != "raw-c" && config.variant != "raw-c-durable" && config.variant != "ace" &&
            config.variant != "corba" && config.variant != "blobstreaming" && config.variant != "memcpy")
            bad("--variant", config.variant, "expected raw-c, raw-c-durable, ace, corba, blobstreaming or memcpy");
    }
    if (vm.count("direction")) {
        const std::string value = text("direction");
        if (value == "push") config.direction = Direction::push;
        else if (value == "pull") config.direction = Direction::pull;
        else bad("--direction", value, "expected push or pull");
    }
    if (vm.count("size")) config.size = cli::parse_size("--size", text("size"), 1, 1ULL << 40);
    if (vm.count("count")) config.count = static_cast<std::uint32_t>(parse_number("--count", text("count"), 1, 100000));
    if (vm.count("runs")) config.runs = static_cast<std::uint32_t>(parse_number("--runs", text("runs"), 1, 100000));
    if (vm.count("socket-buffer") && text("socket-buffer") != "auto")
        config.socket_buffer =
            static_cast<int>(cli::parse_size("--socket-buffer", text("socket-buffer"), 1024, 1ULL << 30));
    if (vm.count("chunk"))
        config.chunk = static_cast<std::uint32_t>(cli::parse_size("--chunk", text("chunk"), 1024, 1ULL << 30));
    config.warmup = vm.count("no-warmup") == 0;
    config.paced = vm.count("paced") != 0;
    if (vm.count("store")) config.store = text("store");
    config.local_fast_path = vm.count("local-fast-path") != 0;
    config.verify = vm.count("no-verify") == 0;
    if (vm.count("link")) config.link = text("link");
    const char* tmpdir = std::getenv("TMPDIR");
    config.durable_dir = vm.count("dir") ? text("dir") : tmpdir && *tmpdir ? tmpdir : "/tmp";
    config.corrupt = vm.count("corrupt") != 0;
    if (server == client) throw Error(Errc::invalid_argument, "must either be a client (-c) or server (-s)");
    config.role = server ? Role::server : Role::client;
    if (client && !port_given && config.variant != "memcpy")
        throw Error(Errc::invalid_argument, "client: --port is required");
    if (config.size * config.count > (8ULL << 30))
        throw Error(Errc::invalid_argument, "--size x --count: at most 8G per run (held in memory on both sides)");
    if (config.variant == "blobstreaming" && client && config.store.empty())
        throw Error(Errc::invalid_argument, "--variant blobstreaming: --store NAME is required");
    if (!config.verify && config.variant != "blobstreaming")
        throw Error(Errc::invalid_argument, "--no-verify: only with --variant blobstreaming (it switches off the "
                                            "client library's pull check), not with --variant " +
                                                config.variant);
    if (config.variant == "raw-c-durable" && config.direction == Direction::pull)
        bad("--direction", "pull",
            "--variant raw-c-durable is push-only (it measures writing what it receives "
            "to disk); pull from raw-c");
    if (vm.count("dir") && (config.variant != "raw-c-durable" || !server))
        throw Error(Errc::invalid_argument, "--dir: only for a --variant raw-c-durable server, not for a " +
                                                config.variant + (server ? " server" : " client"));
    return config;
}

}  // namespace blobstreaming::bench
