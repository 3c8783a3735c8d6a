// sdc-get: an SDC get-service client. Finds a provider by address or
// WS-Discovery and prints states, the MD description or the whole MDIB.

#include "blobstreaming/sdc/Consumer.h"
#include "blobstreaming/sdc/SdcError.h"

#include <blobstreaming/cli/CommandLine.h>

#include <boost/program_options.hpp>
#include <libxml/xmlversion.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>
#include <optional>

namespace po = boost::program_options;
using namespace blobstreaming;
using namespace blobstreaming::sdc;
using namespace std::chrono_literals;

namespace {

nlohmann::json times_json(const CallTimes& t)
{
    return {{"message_id", t.message_id}, {"t0", t.t0}, {"t1", t.t1}, {"t5", t.t5}, {"t6", t.t6}};
}

/// What the command line asks for.
struct Invocation {
    std::string url;
    std::string interface_ip = "127.0.0.1";
    std::string epr;
    std::string command = "state";
    std::vector<std::string> handles;
    std::chrono::milliseconds wait{2000};
    std::chrono::milliseconds timeout{10000};
    bool json = false;
};

/// Parses the command line into `call`; an exit status when the program is
/// done already (--help, --version: 0; a usage error, printed: 1).
std::optional<int> parse(int argc, char** argv, Invocation& call)
{
    po::options_description desc(
        "Usage: sdc-get (--url URL | --discover) [options] [state|description|mdib|probe] [HANDLE...]\n\n"
        "  state        GetMdState (all states, or those of HANDLEs)\n"
        "  description  GetMdDescription (XML)\n"
        "  mdib         GetMdib (XML)\n"
        "  probe        list the providers that answer a WS-Discovery Probe\n\n"
        "Exit codes: 0, 1 usage, otherwise the failure's code (docs/CLI.md): 13 invalid MDIB, 14 unknown handle,\n"
        "51 timed out, 52 unreachable, 54 protocol error, 56 SOAP Fault, 57 no provider found\n\nOptions");
    // clang-format off
    desc.add_options()
        ("help,h", "show this help and exit")
        ("version", "show the versions of sdc-get and its libraries and exit")
        ("url,u", po::value(&call.url), "the provider's device URL (XAddr), http://HOST:PORT/PATH")
        ("discover", "find the provider by WS-Discovery Probe")
        ("interface,i", po::value(&call.interface_ip)->default_value(call.interface_ip), "IPv4 address to probe from")
        ("epr,e", po::value(&call.epr), "with --discover: only this endpoint reference")
        ("wait,w", po::value<std::string>()->value_name("DURATION")->default_value("2000"),
         "time to collect ProbeMatches; milliseconds unless a unit is given (ms, s, m, h)")
        ("timeout,t", po::value<std::string>()->value_name("DURATION")->default_value("10"),
         "bound on connect, request, response: seconds unless a unit is given (500ms; 0.001 to 86400 s)")
        ("json,j", "print JSON (states, MdibVersion, timestamps t0 t1 t5 t6)");
    // clang-format on
    cli::add_logging_options(desc, spdlog::level::warn);
    po::options_description hidden;
    hidden.add_options()("args", po::value<std::vector<std::string>>(), "command and handles");
    po::options_description all;
    all.add(desc).add(hidden);
    po::positional_options_description positional;
    positional.add("args", -1);
    po::variables_map vm;
    try {
        po::store(cli::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
        po::notify(vm);
        if (const auto text = cli::help_or_version(vm, desc, "sdc-get", {{"libxml2", LIBXML_DOTTED_VERSION}})) {
            std::cout << *text;
            return 0;
        }
        spdlog::set_level(cli::log_level(vm, spdlog::level::warn));
        if (vm.count("args")) {
            call.handles = vm["args"].as<std::vector<std::string>>();
            call.command = call.handles.front();
            call.handles.erase(call.handles.begin());
        }
        const std::string& command = call.command;
        if (command != "state" && command != "description" && command != "mdib" && command != "probe")
            throw po::error("unknown command \"" + command + "\"");
        if (command != "probe" && call.url.empty() == (vm.count("discover") == 0))
            throw po::error("give exactly one of --url and --discover");
        call.wait =
            cli::parse_duration("--wait", vm["wait"].as<std::string>(), 1ms, 3600s, cli::DefaultUnit::milliseconds);
        call.timeout = cli::parse_duration("--timeout", vm["timeout"].as<std::string>(), 1ms, 86400s);
        call.json = vm.count("json") != 0;
    } catch (const po::error& e) {
        std::cerr << "sdc-get: " << e.what() << " (try --help)\n";
        return 1;
    } catch (const cli::UsageError& e) {
        std::cerr << "sdc-get: " << e.what() << " (try --help)\n";
        return 1;
    }
    return std::nullopt;
}

void print_probe(const Invocation& call)
{
    nlohmann::json out = nlohmann::json::array();
    for (const auto& p : Consumer::probe(call.interface_ip, call.wait)) {
        out.push_back({{"epr", p.epr}, {"xaddrs", p.xaddrs}});
        if (!call.json) std::cout << p.epr << " " << (p.xaddrs.empty() ? "-" : p.xaddrs.front()) << "\n";
    }
    if (call.json) std::cout << out.dump() << "\n";
}

/// One JSON object: the provider, its MdibVersion, `field` and the call's timestamps.
void print_json(Consumer& consumer, const char* field, const nlohmann::json& value)
{
    std::cout << nlohmann::json{{"epr", consumer.epr()},
                                {"mdib_version", consumer.mdib_version()},
                                {field, value},
                                {"times", times_json(consumer.last_call())}}
                     .dump()
              << "\n";
}

void print_states(const Invocation& call, Consumer& consumer)
{
    const auto states = consumer.get_md_state(call.handles);
    if (!call.json) {
        for (const auto& s : states)
            std::cout << s.descriptor_handle << " " << s.type << (s.value.empty() ? "" : " " + s.value) << "\n";
        return;
    }
    nlohmann::json list = nlohmann::json::array();
    for (const auto& s : states) {
        nlohmann::json attributes = nlohmann::json::object();
        for (const auto& [k, v] : s.attributes) attributes[k] = v;
        list.push_back({{"descriptor_handle", s.descriptor_handle},
                        {"handle", s.handle},
                        {"type", s.type},
                        {"state_version", s.state_version},
                        {"value", s.value},
                        {"attributes", attributes}});
    }
    print_json(consumer, "states", list);
}

}  // namespace

int main(int argc, char** argv)
{
    Invocation call;
    if (const auto status = parse(argc, argv, call)) return *status;
    std::signal(SIGPIPE, SIG_IGN);
    try {
        if (call.command == "probe") {
            print_probe(call);
            return 0;
        }
        ConsumerOptions options;
        options.timeout = call.timeout;
        Consumer consumer = call.url.empty() ? Consumer::discover(call.interface_ip, call.wait, call.epr, options)
                                             : Consumer::connect(call.url, options);
        if (call.command == "state") {
            print_states(call, consumer);
        } else {
            const std::string xml =
                call.command == "mdib" ? consumer.get_mdib() : consumer.get_md_description(call.handles);
            if (call.json) print_json(consumer, "xml", xml);
            else std::cout << xml << "\n";
        }
    } catch (const Error& e) {
        std::cerr << "sdc-get: " << e.what() << "\n";
        return static_cast<int>(e.code());
    } catch (const std::exception& e) {
        std::cerr << "sdc-get: " << e.what() << "\n";
        return 70;
    }
    return 0;
}
