/// Fuzz target: blobstored's configuration file parser. Whatever the file
/// holds, parsing either yields options or throws Error(invalid_argument)
/// with a message; no other exception, crash or unbounded allocation.

#include "blobstored/DaemonOptions.h"

#include <blobstreaming/common/Error.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace blobstreaming;
    const std::string text(reinterpret_cast<const char*>(data), size);
    // Half of the inputs alone (the file must name the store), half after a
    // command line that does, so that the option values are reached.
    static const std::vector<std::string> kNone;
    static const std::vector<std::string> kMinimal = {"--name", "fuzz", "--store", "memory:1M"};
    for (const auto* args : {&kNone, &kMinimal}) {
        try {
            const daemon::ParsedCommandLine parsed = daemon::parse_options(*args, text);
            if (parsed.run) {
                if (parsed.run->name.empty() || parsed.run->store.empty()) std::abort();
            } else if (parsed.text.empty()) {
                std::abort();
            }
        } catch (const Error& e) {
            if (e.code() != Errc::invalid_argument || *e.what() == '\0') std::abort();
        }
    }
    return 0;
}
