// sdc-get: an SDC client. Finds a provider by address or WS-Discovery and
// prints states, the MD description or the whole MDIB, or watches its
// reports (an MDIB mirror kept in sync by subscriptions).

#include "blobstreaming/sdc/Consumer.h"
#include "blobstreaming/sdc/MdibMirror.h"
#include "blobstreaming/sdc/SdcError.h"

#include <blobstreaming/cli/CommandLine.h>

#include <boost/program_options.hpp>
#include <libxml/xmlversion.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <csignal>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

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
    std::uint64_t count = 0;                ///< watch: stop after this many reports (0: no limit)
    std::chrono::milliseconds duration{0};  ///< watch: stop after this time (0: until SIGINT/SIGTERM)
    TlsFiles tls;
};

/// Parses the command line into `call`; an exit status when the program is
/// done already (--help, --version: 0; a usage error, printed: 1).
std::optional<int> parse(int argc, char** argv, Invocation& call)
{
    po::options_description desc(
        "Usage: sdc-get (--url URL | --discover) [options] [state|description|mdib|watch|probe] [HANDLE...]\n\n"
        "  state        GetMdState (all states, or those of HANDLEs)\n"
        "  description  GetMdDescription (XML)\n"
        "  mdib         GetMdib (XML)\n"
        "  watch        subscribe to the episodic reports and description changes and print them as they\n"
        "               arrive (those with a state or descriptor of HANDLEs, or all), until --count,\n"
        "               --duration or SIGINT/SIGTERM\n"
        "  probe        list the providers that answer a WS-Discovery Probe\n\n"
        "Exit codes: 0, 1 usage, otherwise the failure's code (docs/CLI.md): 13 invalid MDIB, 14 unknown handle,\n"
        "51 timed out, 52 unreachable (watch: the provider ended the subscription), 54 protocol error,\n"
        "56 SOAP Fault, 57 no provider found\n\nOptions");
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
        ("json,j", "print JSON (states, MdibVersion, timestamps t0 t1 t5 t6; watch: one object per report)")
        ("count,n", po::value(&call.count)->value_name("N"), "watch: stop after N reports")
        ("duration", po::value<std::string>()->value_name("DURATION"),
         "watch: stop after this time; seconds unless a unit is given (500ms, 2m)")
        ("tls-cert", po::value(&call.tls.cert)->value_name("FILE"), "TLS (https URLs): this client's certificate (PEM); needs --tls-key and --tls-ca")
        ("tls-key", po::value(&call.tls.key)->value_name("FILE"), "the certificate's private key (PEM, unencrypted)")
        ("tls-ca", po::value(&call.tls.ca)->value_name("FILE"), "CA certificates (PEM) that the provider's certificate must chain to");
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
        if (command != "state" && command != "description" && command != "mdib" && command != "probe" &&
            command != "watch")
            throw po::error("unknown command \"" + command + "\"");
        if (command != "probe" && call.url.empty() == (vm.count("discover") == 0))
            throw po::error("give exactly one of --url and --discover");
        call.wait =
            cli::parse_duration("--wait", vm["wait"].as<std::string>(), 1ms, 3600s, cli::DefaultUnit::milliseconds);
        call.timeout = cli::parse_duration("--timeout", vm["timeout"].as<std::string>(), 1ms, 86400s);
        call.json = vm.count("json") != 0;
        if (vm.count("duration"))
            call.duration = cli::parse_duration("--duration", vm["duration"].as<std::string>(), 1ms, 86400s * 365);
        if ((vm.count("count") || vm.count("duration")) && command != "watch")
            throw po::error("--count and --duration apply to the watch command only");
        if (vm.count("count") && call.count == 0) throw po::error("--count 0: give at least 1");
        call.tls.check("--tls-");
    } catch (const po::error& e) {
        std::cerr << "sdc-get: " << e.what() << " (try --help)\n";
        return 1;
    } catch (const cli::UsageError& e) {
        std::cerr << "sdc-get: " << e.what() << " (try --help)\n";
        return 1;
    } catch (const Error& e) {
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

nlohmann::json state_json(const State& s)
{
    nlohmann::json attributes = nlohmann::json::object();
    for (const auto& [k, v] : s.attributes) attributes[k] = v;
    return {{"descriptor_handle", s.descriptor_handle}, {"handle", s.handle}, {"type", s.type},
            {"state_version", s.state_version},         {"value", s.value},   {"attributes", attributes}};
}

nlohmann::json descriptor_json(const Descriptor& d)
{
    nlohmann::json attributes = nlohmann::json::object();
    for (const auto& [k, v] : d.attributes) attributes[k] = v;
    return {{"handle", d.handle},       {"parent_handle", d.parent_handle},
            {"type", d.type},           {"descriptor_version", d.descriptor_version},
            {"unit_code", d.unit_code}, {"attributes", attributes}};
}

/// watch: prints reports (with a state of the handles asked for, or all)
/// until --count, --duration, a stop signal or the end of the subscription.
int watch(const Invocation& call, const std::string& device_url, const sigset_t& stop_signals)
{
    std::mutex mutex;
    std::condition_variable changed;
    std::uint64_t printed = 0;
    bool ended = false;
    std::string end_reason;
    const std::set<std::string> wanted(call.handles.begin(), call.handles.end());
    MirrorOptions options;
    options.consumer.timeout = call.timeout;
    options.consumer.tls = call.tls;
    auto on_report = [&](const Report& r) {
        std::lock_guard<std::mutex> lock(mutex);
        if (r.action == "SubscriptionEnd") {
            ended = true;
            end_reason = r.reason;
            changed.notify_all();
            return;
        }
        std::vector<const State*> shown;
        for (const auto& s : r.states)
            if (wanted.empty() || wanted.count(s.descriptor_handle) || wanted.count(s.handle)) shown.push_back(&s);
        // A description change: its descriptors (Crt, Upt, Del), those asked for or all.
        std::vector<std::pair<const char*, const Descriptor*>> changed_descriptors;
        for (const auto& [kind, list] : {std::pair<const char*, const std::vector<Descriptor>*>{"Crt", &r.created},
                                         {"Upt", &r.updated},
                                         {"Del", &r.deleted}})
            for (const auto& d : *list)
                if (wanted.empty() || wanted.count(d.handle)) changed_descriptors.emplace_back(kind, &d);
        if ((shown.empty() && changed_descriptors.empty()) || (call.count != 0 && printed >= call.count)) return;
        if (call.json) {
            nlohmann::json states = nlohmann::json::array();
            for (const State* s : shown) states.push_back(state_json(*s));
            nlohmann::json line{{"report", r.action},
                                {"mdib_version", r.mdib_version},
                                {"sequence_id", r.sequence_id},
                                {"states", states},
                                {"received_ns", r.received_ns}};
            if (r.action == "DescriptionModificationReport") {
                nlohmann::json created = nlohmann::json::array(), updated = nlohmann::json::array(),
                               deleted = nlohmann::json::array();
                for (const auto& [kind, d] : changed_descriptors)
                    (kind[0] == 'C' ? created : kind[0] == 'U' ? updated : deleted).push_back(descriptor_json(*d));
                line["created"] = created;
                line["updated"] = updated;
                line["deleted"] = deleted;
            }
            if (r.action == "Resync") line["description_resynced"] = r.description_resynced;
            std::cout << line.dump() << std::endl;
        } else {
            for (const auto& [kind, d] : changed_descriptors)
                std::cout << r.mdib_version << " " << r.action << " " << kind << " " << d->handle << " " << d->type
                          << " DescriptorVersion=" << (d->descriptor_version.empty() ? "0" : d->descriptor_version)
                          << (d->unit_code.empty() ? "" : " unit=" + d->unit_code) << std::endl;
            for (const State* s : shown)
                std::cout << r.mdib_version << " " << r.action << " " << s->descriptor_handle << " " << s->type
                          << (s->value.empty() ? "" : " " + s->value) << std::endl;
        }
        ++printed;
        changed.notify_all();
    };
    MdibMirror mirror(device_url, on_report, options);
    if (!wanted.empty()) mirror.states(call.handles);  // unknown handles: exit 14 before waiting
    if (call.json)
        std::cout << nlohmann::json{{"watching", mirror.epr()}, {"mdib_version", mirror.mdib_version()}}.dump()
                  << std::endl;
    // A thread turns the stop signals into a wake-up of the wait below.
    bool stop = false;
    std::thread signals([&] {
        int signal = 0;
        sigwait(&stop_signals, &signal);
        std::lock_guard<std::mutex> lock(mutex);
        stop = true;
        changed.notify_all();
    });
    std::unique_lock<std::mutex> lock(mutex);
    const auto done = [&] { return stop || ended || (call.count != 0 && printed >= call.count); };
    if (call.duration.count() > 0) changed.wait_for(lock, call.duration, done);
    else changed.wait(lock, done);
    lock.unlock();
    if (!stop) pthread_kill(signals.native_handle(), SIGTERM);
    signals.join();
    if (ended) {
        std::cerr << "sdc-get: the provider ended the subscription: " << end_reason << "\n";
        return static_cast<int>(Errc::unreachable);
    }
    return 0;
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
    for (const auto& s : states) list.push_back(state_json(s));
    print_json(consumer, "states", list);
}

}  // namespace

int main(int argc, char** argv)
{
    Invocation call;
    if (const auto status = parse(argc, argv, call)) return *status;
    std::signal(SIGPIPE, SIG_IGN);
    // watch: the stop signals are waited for by a thread (blocked before any thread starts).
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    if (call.command == "watch") pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    try {
        if (call.command == "probe") {
            print_probe(call);
            return 0;
        }
        ConsumerOptions options;
        options.timeout = call.timeout;
        options.tls = call.tls;
        if (call.command == "watch") {
            std::string url = call.url;
            if (url.empty()) {
                Consumer found = Consumer::discover(call.interface_ip, call.wait, call.epr, options);
                url = found.device_url();
            }
            return watch(call, url, stop_signals);
        }
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
