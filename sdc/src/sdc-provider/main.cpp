// sdc-provider: serves an MDIB file over the SDC get-service path until
// SIGTERM/SIGINT (then sends WS-Discovery Bye and exits 0).

#include "blobstreaming/sdc/Mdib.h"
#include "blobstreaming/sdc/Provider.h"
#include "blobstreaming/sdc/SdcError.h"

#include <blobstreaming/cli/CommandLine.h>

#include <boost/program_options.hpp>
#include <libxml/xmlversion.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>
#include <limits>

namespace po = boost::program_options;
using namespace blobstreaming;
using namespace blobstreaming::sdc;
using namespace std::chrono_literals;

int main(int argc, char** argv)
{
    ProviderOptions options;
    std::string mdib_path;
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
        ("max-body", po::value<std::string>()->value_name("SIZE")->default_value("4M"), "largest request body (bytes, or with K, M, G, T: x1024)")
        ("header-timeout", po::value<std::string>()->value_name("DURATION")->default_value("10000"),
         "time to receive a complete request header; milliseconds unless a unit is given (ms, s, m, h)")
        ("idle-timeout", po::value<std::string>()->value_name("DURATION")->default_value("300000"),
         "time before an idle connection is closed; milliseconds unless a unit is given");
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
        options.validate = vm.count("no-validate") == 0;
        options.discovery = vm.count("no-discovery") == 0;
    } catch (const po::error& e) {
        std::cerr << "sdc-provider: " << e.what() << " (try --help)\n";
        return 1;
    } catch (const cli::UsageError& e) {
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
