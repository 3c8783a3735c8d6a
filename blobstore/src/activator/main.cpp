/// blob-activatord: starts configured Blob stores on their first request
/// (docs/ACTIVATION.md). Parses, starts, reaps every 250 ms until
/// SIGTERM/SIGINT, then stops the daemons it started.

#include "Activator.h"

#include <blobstreaming/cli/CommandLine.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/LibraryVersions.h>

#include <boost/program_options.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <filesystem>
#include <iostream>

#include <pthread.h>
#include <unistd.h>

namespace po = boost::program_options;
using namespace blobstreaming;

namespace {

/// blobstored beside this program (as installed, and in the build tree
/// where blob-activatord is built next to it), else on PATH.
std::string default_blobstored(const char* argv0)
{
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    for (const auto& dir : {self.parent_path(), std::filesystem::path(argv0).parent_path()}) {
        const auto candidate = dir / "blobstored";
        if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
    return "blobstored";
}

}  // namespace

int main(int argc, char** argv)
{
    sigset_t handled;
    ::sigemptyset(&handled);
    ::sigaddset(&handled, SIGTERM);
    ::sigaddset(&handled, SIGINT);
    ::pthread_sigmask(SIG_BLOCK, &handled, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    po::options_description desc(
        "blob-activatord: starts each configured Blob store on the first request that needs it\n\n"
        "Usage: blob-activatord --config-dir DIR --naming URL [options]\n\nOptions");
    // clang-format off
    desc.add_options()
        ("help,h", "show this help and exit")
        ("version", "show the version and exit")
        ("config-dir", po::value<std::string>()->value_name("DIR"), "one blobstored configuration per store, NAME.conf (required)")
        ("naming", po::value<std::string>()->value_name("URL"), "the Naming Service (default: $BLOBSTREAMING_NAMING, else corbaname::127.0.0.1:2809)")
        ("blobstored", po::value<std::string>()->value_name("PROGRAM"), "the daemon to start (default: blobstored beside this program, else on PATH)")
        ("control-address", po::value<std::string>()->value_name("HOST:PORT")->default_value("0.0.0.0:0"), "this activator's CORBA endpoint (port 0: ephemeral)")
        ("start-timeout", po::value<unsigned>()->value_name("SECONDS")->default_value(30), "how long a daemon may take to start (1 to 600)")
        ("kill-grace", po::value<unsigned>()->value_name("SECONDS")->default_value(5), "a daemon that did not start gets SIGTERM, then SIGKILL after this (1 to 60)")
        ("idle-timeout", po::value<unsigned>()->value_name("SECONDS")->default_value(10), "a connection without a request in progress is closed after this; a request begun must arrive whole within it (1 to 3600)")
        ("max-connections", po::value<unsigned>()->value_name("N")->default_value(512), "connections open at once; when reached, one of the other address that holds the most is ended if it holds at least as many as the newcomer's would (16 to 65536; at most half the descriptor limit)")
        ("max-connections-per-peer", po::value<unsigned>()->value_name("N")->default_value(16), "connections from one address; more are refused (1 to 4096)")
        ("tls-cert", po::value<std::string>()->value_name("FILE"), "for TLS-only stores: this activator's certificate (PEM); its endpoint is then TLS only (giop:ssl), as a TLS client requires of every store reference; needs --tls-key and --tls-ca")
        ("tls-key", po::value<std::string>()->value_name("FILE"), "the private key of --tls-cert (PEM, unencrypted)")
        ("tls-ca", po::value<std::string>()->value_name("FILE"), "the CA certificates (PEM) that clients' and stores' certificates must chain to");
    // clang-format on
    cli::add_logging_options(desc, spdlog::level::info);
    po::variables_map vm;
    activator::ActivatorOptions o;
    try {
        po::store(cli::command_line_parser(argc, argv).options(desc).run(), vm);
        po::notify(vm);
        if (const auto text = cli::help_or_version(vm, desc, "blob-activatord", transporter_library_versions(),
                                                   "Exit codes: 0 after SIGTERM/SIGINT, 1 usage, 10 an unusable "
                                                   "--config-dir, 52 the Naming Service does not answer.\n")) {
            std::cout << *text << std::flush;
            return 0;
        }
        if (!vm.count("config-dir")) throw po::error("--config-dir is required");
        o.config_dir = vm["config-dir"].as<std::string>();
        const char* env = std::getenv("BLOBSTREAMING_NAMING");
        o.naming =
            vm.count("naming") ? vm["naming"].as<std::string>() : (env && *env ? env : "corbaname::127.0.0.1:2809");
        o.blobstored = vm.count("blobstored") ? vm["blobstored"].as<std::string>() : default_blobstored(argv[0]);
        const std::string control = vm["control-address"].as<std::string>();
        const auto colon = control.rfind(':');
        if (colon == std::string::npos) throw po::error("--control-address: \"" + control + "\" is not HOST:PORT");
        const std::string host = control.substr(0, colon) == "0.0.0.0" ? "" : control.substr(0, colon);
        const std::string port = control.substr(colon + 1) == "0" ? "" : control.substr(colon + 1);
        for (const auto& [key, file] : {std::pair{"tls-cert", &o.tls.cert}, std::pair{"tls-key", &o.tls.key},
                                        std::pair{"tls-ca", &o.tls.ca}})
            if (vm.count(key)) *file = vm[key].as<std::string>();
        o.tls.check("--tls-");
        o.endpoint = (o.tls.enabled() ? "giop:ssl:" : "giop:tcp:") + host + ":" + port;
        const auto ranged = [&](const char* name, unsigned low, unsigned high) {
            const unsigned v = vm[name].as<unsigned>();
            if (v < low || v > high)
                throw po::error(std::string("--") + name + ": " + std::to_string(v) + " is out of range (allowed: " +
                                std::to_string(low) + " to " + std::to_string(high) + ")");
            return v;
        };
        o.start_timeout = std::chrono::seconds(ranged("start-timeout", 1, 600));
        o.kill_grace = std::chrono::seconds(ranged("kill-grace", 1, 60));
        o.idle_timeout = std::chrono::seconds(ranged("idle-timeout", 1, 3600));
        o.connections.total = ranged("max-connections", 16, 65536);
        o.connections.per_peer = ranged("max-connections-per-peer", 1, 4096);
    } catch (const std::exception& e) {
        std::cerr << "blob-activatord: " << e.what() << " (see blob-activatord --help)\n";
        return 1;
    }
    auto logger =
        std::make_shared<spdlog::logger>("blob-activatord", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e blob-activatord %l: %v");
    logger->set_level(cli::log_level(vm, spdlog::level::info));
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);

    try {
        activator::Activator activator(o);
        std::cout << activator.start() << std::endl;
        int signal = -1;
        while (signal < 0) {
            const timespec tick{0, 250'000'000};
            signal = ::sigtimedwait(&handled, nullptr, &tick);
            if (signal < 0) activator.maintain();
        }
        spdlog::info("{}: stopping", signal == SIGTERM ? "SIGTERM" : "SIGINT");
        activator.stop();
    } catch (const Error& e) {
        std::cerr << "blob-activatord: " << e.what() << "\n";
        return static_cast<int>(e.code());
    } catch (const CORBA::Exception& e) {
        std::cerr << "blob-activatord: CORBA " << e._name() << " (the Naming Service at " << o.naming << "?)\n";
        return static_cast<int>(Errc::unreachable);
    }
    return 0;
}
