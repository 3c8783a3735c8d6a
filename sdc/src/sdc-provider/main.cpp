// sdc-provider: serves an MDIB file as an SDC provider (GetService, event
// services) until SIGTERM/SIGINT (then ends the subscriptions, sends
// WS-Discovery Bye and exits 0). With --commands it applies metric and
// description changes read from a file or FIFO, so tests and benchmarks can
// drive reports.

#include "blobstreaming/sdc/Mdib.h"
#include "blobstreaming/sdc/Provider.h"
#include "blobstreaming/sdc/SdcError.h"

#include <blobstreaming/cli/CommandLine.h>

#include <boost/program_options.hpp>
#include <libxml/xmlversion.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <time.h>
#include <vector>

namespace po = boost::program_options;
using namespace blobstreaming;
using namespace blobstreaming::sdc;
using namespace std::chrono_literals;

namespace {

long long now_ns()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

/// One description change command (`add`, `update`, `remove`; see apply_commands).
void describe(Provider& provider, const std::string& verb, std::istringstream& words)
{
    std::vector<std::string> args;
    for (std::string w; words >> w;) args.push_back(w);
    if (verb == "remove") {
        if (args.size() != 1) throw std::invalid_argument("expected `remove HANDLE`");
        provider.remove_metric(args[0]);
        return;
    }
    if (verb == "add") {
        if (args.size() < 2 || args.size() > 4)
            throw std::invalid_argument("expected `add PARENT HANDLE [numeric|string] [UNIT_CODE]`");
        MetricDescriptorSpec spec;
        spec.handle = args[1];
        if (args.size() > 2) {
            if (args[2] != "numeric" && args[2] != "string")
                throw std::invalid_argument("kind \"" + args[2] + "\": expected numeric or string");
            spec.numeric = args[2] == "numeric";
        }
        if (args.size() > 3) spec.unit_code = args[3];
        provider.add_metric(args[0], spec);
        return;
    }
    if (args.size() < 2) throw std::invalid_argument("expected `update HANDLE unit=CODE|ATTRIBUTE=VALUE...`");
    MetricDescriptorChange change;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const auto eq = args[i].find('=');
        if (eq == std::string::npos || eq == 0)
            throw std::invalid_argument("\"" + args[i] + "\": expected unit=CODE or ATTRIBUTE=VALUE");
        const std::string name = args[i].substr(0, eq), value = args[i].substr(eq + 1);
        if (name == "unit") change.unit_code = value;
        else change.attributes.emplace_back(name, value);
    }
    provider.update_metric(args[0], change);
}

/// Applies command lines from `path` until its end:
///   set HANDLE VALUE      a number sets a NumericMetricState, anything else a string metric
///   add PARENT HANDLE [numeric|string] [UNIT_CODE]   a metric descriptor under channel PARENT
///   update HANDLE unit=CODE|ATTRIBUTE=VALUE...        a metric descriptor's unit or attributes
///   remove HANDLE         a metric descriptor and its state
/// Each is acknowledged on stdout: `set HANDLE VALUE mdib_version=N t=NS`
/// (t: CLOCK_MONOTONIC ns just before the change), `add|update|remove
/// HANDLE mdib_version=N t=NS`, or `error LINE: reason`. Runs on a
/// detached thread for the life of the process.
void apply_commands(Provider& provider, const std::string& path)
{
    struct stat st {};
    const bool fifo = ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
    // A FIFO is opened again after each writer closed it (several writers in turn); a file is read once.
    for (int opened = 0; opened == 0 || fifo; ++opened) {
        std::ifstream in(path);
        if (!in) {
            std::cerr << "sdc-provider: --commands " << path << ": cannot open it\n";
            return;
        }
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream words(line);
            std::string verb, handle, value;
            words >> verb >> handle >> value;
            if (verb.empty()) continue;
            try {
                if (verb == "add" || verb == "update" || verb == "remove") {
                    std::istringstream rest(line);
                    rest >> verb;
                    const long long t = now_ns();
                    describe(provider, verb, rest);
                    std::cout << verb << " " << (verb == "add" ? value : handle)
                              << " mdib_version=" << provider.mdib().mdib_version() << " t=" << t << std::endl;
                    continue;
                }
                if (verb != "set" || handle.empty() || value.empty())
                    throw std::invalid_argument("expected `set HANDLE VALUE`, `add PARENT HANDLE ...`, "
                                                "`update HANDLE ...` or `remove HANDLE`");
                char* end = nullptr;
                const double number = std::strtod(value.c_str(), &end);
                const long long t = now_ns();
                if (end != nullptr && *end == '\0') provider.set_metric(handle, number);
                else provider.set_metric(handle, value);
                std::cout << "set " << handle << " " << value << " mdib_version=" << provider.mdib().mdib_version()
                          << " t=" << t << std::endl;
            } catch (const std::exception& e) {
                std::cout << "error " << line << ": " << e.what() << std::endl;
            }
        }
    }
}

}  // namespace

int main(int argc, char** argv)
{
    ProviderOptions options;
    std::string mdib_path;
    std::string commands;
    po::options_description desc("Usage: sdc-provider --mdib FILE [options]\n\n"
                                 "Exit codes: 0 after SIGTERM/SIGINT, 1 usage, otherwise the failure's code "
                                 "(docs/CLI.md)\n\nOptions");
    // clang-format off
    desc.add_options()
        ("help,h", "show this help and exit")
        ("version", "show the versions of sdc-provider and its libraries and exit")
        ("mdib,m", po::value(&mdib_path), "BICEPS 2017 MDIB XML file to serve (required)")
        ("address,a", po::value(&options.address)->default_value(options.address), "listen on HOST:PORT (port 0: ephemeral)")
        ("epr", po::value(&options.epr), "endpoint reference urn:uuid:... (default: random)")
        ("no-validate", "only check well-formedness and the SOAP envelope, not addressing headers and body elements")
        ("schema-dir", po::value(&options.schema_dir), "also validate GetService request bodies against the BICEPS "
                                                       "schemas in DIR (BICEPS_MessageModel.xsd, "
                                                       "BICEPS_ParticipantModel.xsd, ExtensionPoint.xsd)")
        ("no-discovery", "do not join WS-Discovery (no Hello, Bye, ProbeMatches)")
        ("no-events", "host only the GetService (no StateEventService, DescriptionEventService, subscriptions)")
        ("tls-cert", po::value(&options.tls.cert)->value_name("FILE"), "TLS (https) with client certificates: this provider's certificate (PEM); needs --tls-key and --tls-ca")
        ("tls-key", po::value(&options.tls.key)->value_name("FILE"), "the certificate's private key (PEM, unencrypted)")
        ("tls-ca", po::value(&options.tls.ca)->value_name("FILE"), "CA certificates (PEM) that consumers' and subscribers' certificates must chain to")
        ("notify-timeout", po::value<std::string>()->value_name("DURATION")->default_value("5000"),
         "bound on delivering one notification (connect, send, answer); a subscriber that exceeds it is ended; "
         "milliseconds unless a unit is given")
        ("notify-queue", po::value(&options.notify_queue_limit)->value_name("N")->default_value(options.notify_queue_limit),
         "notifications queued per subscriber before it is ended as too slow (1 to 1000000)")
        ("max-subscription", po::value<std::string>()->value_name("DURATION")->default_value("3600"),
         "longest subscription granted; seconds unless a unit is given (1 s to 1 day)")
        ("commands", po::value(&commands)->value_name("FILE"), "apply command lines read from FILE (a FIFO: as they "
                                                             "arrive), each acknowledged on stdout: `set HANDLE VALUE`, "
                                                             "`add PARENT HANDLE [numeric|string] [UNIT_CODE]`, "
                                                             "`update HANDLE unit=CODE|ATTRIBUTE=VALUE...`, `remove HANDLE`")
        ("max-body", po::value<std::string>()->value_name("SIZE")->default_value("4M"), "largest request body (bytes, or with K, M, G, T: x1024)")
        ("handshake-timeout", po::value<std::string>()->value_name("DURATION")->default_value("5000"),
         "time from connecting to the first complete request (TLS handshake included); milliseconds unless a "
         "unit is given (ms, s, m, h)")
        ("header-timeout", po::value<std::string>()->value_name("DURATION")->default_value("10000"),
         "time to receive a complete request header; milliseconds unless a unit is given (ms, s, m, h)")
        ("idle-timeout", po::value<std::string>()->value_name("DURATION")->default_value("60000"),
         "time before an idle connection is closed; milliseconds unless a unit is given")
        ("max-connections", po::value<std::string>()->value_name("N")->default_value("1024"),
         "open connections in all; a newcomer beyond it closes the one idle longest (1 to 1000000)")
        ("max-connections-per-peer", po::value<std::string>()->value_name("N")->default_value("64"),
         "open connections from one IP address; a newcomer beyond it is closed (1 to 1000000)");
    // clang-format on
    cli::add_logging_options(desc, spdlog::level::warn);
    try {
        po::variables_map vm;
        po::store(cli::command_line_parser(argc, argv).options(desc).run(), vm);
        po::notify(vm);
        if (const auto text = cli::help_or_version(vm, desc, "sdc-provider", {{"libxml2", LIBXML_DOTTED_VERSION}})) {
            std::cout << *text;
            return 0;
        }
        spdlog::set_level(cli::log_level(vm, spdlog::level::warn));
        if (mdib_path.empty()) throw po::error("--mdib FILE is required");
        options.max_body_bytes = cli::parse_size("--max-body", vm["max-body"].as<std::string>(), 1,
                                                 std::numeric_limits<std::uint64_t>::max());
        options.header_timeout = cli::parse_duration("--header-timeout", vm["header-timeout"].as<std::string>(), 1ms,
                                                     86400s, cli::DefaultUnit::milliseconds);
        options.idle_timeout = cli::parse_duration("--idle-timeout", vm["idle-timeout"].as<std::string>(), 1ms, 86400s,
                                                   cli::DefaultUnit::milliseconds);
        options.handshake_timeout =
            cli::parse_duration("--handshake-timeout", vm["handshake-timeout"].as<std::string>(), 1ms, 3600s,
                                cli::DefaultUnit::milliseconds);
        options.max_connections =
            cli::parse_count("--max-connections", vm["max-connections"].as<std::string>(), 1, 1000000);
        options.max_connections_per_peer =
            cli::parse_count("--max-connections-per-peer", vm["max-connections-per-peer"].as<std::string>(), 1,
                             1000000);
        options.notify_timeout = cli::parse_duration("--notify-timeout", vm["notify-timeout"].as<std::string>(), 1ms,
                                                     86400s, cli::DefaultUnit::milliseconds);
        options.max_subscription = std::chrono::duration_cast<std::chrono::seconds>(
            cli::parse_duration("--max-subscription", vm["max-subscription"].as<std::string>(), 1s, 86400s));
        if (options.notify_queue_limit < 1 || options.notify_queue_limit > 1000000)
            throw po::error("--notify-queue " + std::to_string(options.notify_queue_limit) + ": must be 1 to 1000000");
        options.tls.check("--tls-");
        options.events = vm.count("no-events") == 0;
        options.validate = vm.count("no-validate") == 0;
        options.discovery = vm.count("no-discovery") == 0;
    } catch (const po::error& e) {
        std::cerr << "sdc-provider: " << e.what() << " (try --help)\n";
        return 1;
    } catch (const cli::UsageError& e) {
        std::cerr << "sdc-provider: " << e.what() << " (try --help)\n";
        return 1;
    } catch (const Error& e) {
        std::cerr << "sdc-provider: " << e.what() << " (try --help)\n";
        return 1;
    }

    // Block the stop signals before any thread starts, then wait for one here.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    try {
        Mdib mdib = Mdib::load_file(mdib_path);
        const std::size_t descriptors = mdib.descriptor_count();
        const std::size_t states = mdib.state_count();
        Provider provider(std::move(mdib), options);
        std::cout << "sdc-provider ready address=" << provider.address() << " epr=" << provider.epr()
                  << " url=" << provider.device_url() << " descriptors=" << descriptors << " states=" << states
                  << std::endl;
        if (!commands.empty()) std::thread([&provider, commands] { apply_commands(provider, commands); }).detach();
        int signal = 0;
        sigwait(&stop_signals, &signal);
        provider.stop();
        std::cerr << "sdc-provider: stopped by signal " << signal << ", Bye sent\n";
    } catch (const Error& e) {
        std::cerr << "sdc-provider: " << e.what() << "\n";
        return static_cast<int>(e.code());
    } catch (const std::exception& e) {
        std::cerr << "sdc-provider: " << e.what() << "\n";
        return 70;
    }
    return 0;
}
