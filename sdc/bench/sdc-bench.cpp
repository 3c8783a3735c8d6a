// sdc-bench: N GetMdState round trips through the Consumer API, with the
// timestamps t0..t6 of each (t2..t4 fetched from the provider afterwards,
// by MessageID, when the provider is ours). Raw samples as JSON on stdout;
// statistics and plots are made by run_sdc_bench.py.

#include "blobstreaming/sdc/Consumer.h"
#include "blobstreaming/sdc/SdcError.h"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <iostream>
#include <thread>

namespace po = boost::program_options;
using namespace blobstreaming::sdc;

int main(int argc, char** argv)
{
    std::string url;
    std::string handle;
    long rounds = 300;
    double pause_ms = 0;
    po::options_description desc("Usage: sdc-bench --url URL [options]\n\nOptions");
    desc.add_options()
        ("help,h", "show this help and exit")
        ("url,u", po::value(&url), "the provider's device URL (required)")
        ("handle", po::value(&handle), "HandleRef of each GetMdState (default: all states)")
        ("rounds,n", po::value(&rounds)->default_value(rounds), "round trips (1..1000000)")
        ("pause-ms", po::value(&pause_ms)->default_value(pause_ms), "pause between round trips, ms")
        ("no-provider-times", "do not fetch t2..t4 from the provider");
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, desc), vm);
        po::notify(vm);
        if (vm.count("help")) {
            std::cout << desc << "\n";
            return 0;
        }
        if (url.empty() || rounds < 1 || rounds > 1000000 || pause_ms < 0 || pause_ms > 10000)
            throw po::error("--url is required; --rounds 1..1000000; --pause-ms 0..10000");
    } catch (const po::error& e) {
        std::cerr << "sdc-bench: " << e.what() << " (try --help)\n";
        return 1;
    }
    std::signal(SIGPIPE, SIG_IGN);
    try {
        Consumer consumer = Consumer::connect(url);
        const std::vector<std::string> handles = handle.empty() ? std::vector<std::string>{}
                                                                : std::vector<std::string>{handle};
        std::vector<CallTimes> calls;
        calls.reserve(static_cast<std::size_t>(rounds));
        for (long r = 0; r < rounds; ++r) {
            const auto states = consumer.get_md_state(handles);
            if (states.empty())
                throw SdcError(SdcErrc::protocol_error, "GetMdState returned no state");
            calls.push_back(consumer.last_call());
            if (pause_ms > 0)
                std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(pause_ms));
        }
        nlohmann::json samples;
        for (const char* k : {"t0", "t1", "t2", "t3", "t4", "t5", "t6"})
            samples[k] = nlohmann::json::array();
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
            for (const char* k : {"t2", "t3", "t4"})
                samples[k] = nullptr;
        std::cout << nlohmann::json{{"url", url}, {"rounds", rounds}, {"pause_ms", pause_ms}, {"handle", handle},
                                    {"samples", samples}}.dump()
                  << "\n";
    } catch (const SdcError& e) {
        std::cerr << "sdc-bench: " << e.what() << "\n";
        return static_cast<int>(e.code());
    }
    return 0;
}
