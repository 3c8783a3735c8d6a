// sdc-provider: serves an MDIB file over the SDC get-service path until
// SIGTERM/SIGINT (then sends WS-Discovery Bye and exits 0).

#include "blobstreaming/sdc/Mdib.h"
#include "blobstreaming/sdc/Provider.h"
#include "blobstreaming/sdc/SdcError.h"

#include <boost/program_options.hpp>

#include <csignal>
#include <iostream>

namespace po = boost::program_options;
using namespace blobstreaming::sdc;

int main(int argc, char** argv)
{
    ProviderOptions options;
    std::string mdib_path;
    long long header_ms = 0;
    long long idle_ms = 0;
    po::options_description desc("Usage: sdc-provider --mdib FILE [options]\n\nOptions");
    desc.add_options()
        ("help,h", "show this help and exit")
        ("version", "show the version and exit")
        ("mdib,m", po::value(&mdib_path), "BICEPS 2017 MDIB XML file to serve (required)")
        ("address,a", po::value(&options.address)->default_value(options.address), "listen on HOST:PORT (port 0: ephemeral)")
        ("epr", po::value(&options.epr), "endpoint reference urn:uuid:... (default: random)")
        ("no-validate", "only check well-formedness and the SOAP envelope, not addressing headers and body elements")
        ("schema-dir", po::value(&options.schema_dir), "also validate GetService request bodies against the BICEPS "
                                                       "schemas in DIR (BICEPS_MessageModel.xsd, "
                                                       "BICEPS_ParticipantModel.xsd, ExtensionPoint.xsd)")
        ("no-discovery", "do not join WS-Discovery (no Hello, Bye, ProbeMatches)")
        ("max-body", po::value(&options.max_body_bytes)->default_value(options.max_body_bytes), "largest request body in bytes")
        ("header-timeout", po::value(&header_ms)->default_value(options.header_timeout.count()), "ms to receive a complete request header")
        ("idle-timeout", po::value(&idle_ms)->default_value(options.idle_timeout.count()), "ms before an idle connection is closed");
    try {
        po::variables_map vm;
        po::store(po::parse_command_line(argc, argv, desc), vm);
        po::notify(vm);
        if (vm.count("help")) {
            std::cout << desc << "\n";
            return 0;
        }
        if (vm.count("version")) {
            std::cout << "sdc-provider " << PACKAGE_VERSION << "\n";
            return 0;
        }
        if (mdib_path.empty())
            throw po::error("--mdib FILE is required");
        if (header_ms <= 0 || idle_ms <= 0)
            throw po::error("timeouts must be positive");
        options.validate = vm.count("no-validate") == 0;
        options.discovery = vm.count("no-discovery") == 0;
        options.header_timeout = std::chrono::milliseconds(header_ms);
        options.idle_timeout = std::chrono::milliseconds(idle_ms);
    } catch (const po::error& e) {
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
    } catch (const SdcError& e) {
        std::cerr << "sdc-provider: " << e.what() << "\n";
        return static_cast<int>(e.code());
    } catch (const std::exception& e) {
        std::cerr << "sdc-provider: " << e.what() << "\n";
        return 70;
    }
    return 0;
}
