/// library_logging: what libblobclient writes where, for the system test
/// test_library_logging.py.
///
///   library_logging --naming URL --store NAME [--own-logger]
///
/// Runs a succeeding operation (a push of 64 KiB from memory, pulled back)
/// and failing ones (a stat of a missing Blob; an async push whose
/// completion throws, which the library logs and drops), then prints one
/// JSON line on stdout, its only output there:
/// {"pushed":bool,"pulled":bool,"missing":ERRC,"thrown":bool,"captured":[...]}.
/// Without --own-logger the library keeps its default (standard error,
/// warning level). With it, the program hands the library its own spdlog
/// logger at debug level (client::set_logger, docs/CLIENT_API.md) writing
/// to memory, and `captured` lists the lines it got. Exit 0 when the
/// operations ended as expected, 3 otherwise, 1 on usage errors.

#include <blobstreaming/client/Logging.h>
#include <blobstreaming/client/Session.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::client;

int main(int argc, char** argv)
{
    std::string naming, store;
    bool own_logger = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--naming" && i + 1 < argc) naming = argv[++i];
        else if (arg == "--store" && i + 1 < argc) store = argv[++i];
        else if (arg == "--own-logger") own_logger = true;
        else {
            std::fprintf(stderr, "usage: library_logging --naming URL --store NAME [--own-logger]\n");
            return 1;
        }
    }
    if (naming.empty() || store.empty()) {
        std::fprintf(stderr, "library_logging: --naming and --store are required\n");
        return 1;
    }

    std::ostringstream lines;
    if (own_logger) {
        auto logger = std::make_shared<spdlog::logger>("app", std::make_shared<spdlog::sinks::ostream_sink_mt>(lines));
        logger->set_pattern("%l: %v");
        logger->set_level(spdlog::level::debug);
        set_logger(logger);
    }

    nlohmann::json out;
    bool pushed = false, pulled = false, thrown_logged = false;
    int missing = 0;
    std::string error;
    try {
        Session::Options options;
        options.naming_url = naming;
        options.default_store = store;
        Session session(options);

        const std::vector<std::uint8_t> bytes(64 * 1024, 0x42);
        PushOptions replace;
        replace.replace = true;
        session.push_memory(bytes.data(), bytes.size(), "LOG.ok", replace);
        pushed = true;
        pulled = session.pull_memory("LOG.ok") == bytes;

        try {
            session.stat("LOG.missing");
        } catch (const Error& e) {
            missing = static_cast<int>(e.code());
        }

        std::promise<void> thrown;
        session.push(PushSource::memory(bytes.data(), bytes.size()), "LOG.thrown", replace, Mode::Async,
                     [&thrown](const Result&) {
                         thrown.set_value();
                         throw std::runtime_error("an application bug in a completion");
                     });
        thrown_logged = thrown.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready;
    } catch (const Error& e) {
        error = e.what();
    }
    out["pushed"] = pushed;
    out["pulled"] = pulled;
    out["missing"] = missing;
    out["thrown"] = thrown_logged;
    if (!error.empty()) out["error"] = error;
    if (own_logger) {
        set_logger(nullptr);  // back to the default before `lines` goes
        std::vector<std::string> captured;
        std::istringstream in(lines.str());
        for (std::string line; std::getline(in, line);) captured.push_back(line);
        out["captured"] = captured;
    }
    std::cout << out.dump() << std::endl;
    const bool as_expected =
        error.empty() && pushed && pulled && missing == static_cast<int>(Errc::no_such_blob) && thrown_logged;
    return as_expected ? 0 : 3;
}
