// bsbench: the push/pull benchmark harness. One CLI for every variant, in
// the manner of iperf3: `bsbench -s --variant V` serves, `bsbench -c HOST -p
// PORT --variant V ...` runs timed transactions and prints one line (or one
// JSON object with -J) per run. Exit status: 0, 1 usage, or the Errc value
// of the failure (24 when any run moved wrong bytes).
#include "Config.h"
#include "Report.h"
#include "Runner.h"
#include "Variant.h"

#include <blobstreaming/common/Error.h>

#include <csignal>
#include <cstdio>
#include <exception>

using namespace blobstreaming;
using namespace blobstreaming::bench;

int main(int argc, char** argv)
{
    Config config;
    try {
        config = parse_command_line(argc, argv);
    } catch (const Error& e) {
        std::fprintf(stderr, "bsbench: %s\n", e.what());
        return 1;
    }
    // A peer that goes away must give an error, not kill us (ACE's send_n
    // does not use MSG_NOSIGNAL).
    std::signal(SIGPIPE, SIG_IGN);
    try {
        if (config.role == Role::client) return run_client(config);
        const Variant* variant = find_variant(config.variant);
        if (variant == nullptr || variant->serve == nullptr) {
            std::fprintf(stderr, "bsbench: --variant %s has no bsbench server (blobstreaming: run blobstored; memcpy: none)\n",
                         config.variant.c_str());
            return 1;
        }
        variant->serve(config);
        return 0;
    } catch (const Error& e) {
        std::fprintf(stderr, "bsbench: %s %s: %s\n", config.variant.c_str(),
                     config.role == Role::client ? "client" : "server", e.what());
        if (config.json && config.role == Role::client) std::printf("%s\n", error_json(config, e.what()).c_str());
        return static_cast<int>(e.code());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bsbench: %s: %s\n", config.variant.c_str(), e.what());
        return static_cast<int>(Errc::transfer_failed);
    }
}
