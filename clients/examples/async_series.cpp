// Pushes a study of random slices and pulls it back as two series
// (Session::push_series, pull_series), asynchronously from one thread
// (ReactorMode::Caller); the library pipelines each series, obtaining the
// tickets of the next slices while the current ones stream. Compares every
// byte pulled with what was pushed and reports how many data connections
// the session needed.
//
//   async_series --naming URL --store NAME --count N --size BYTES
//                --concurrency K [--prefix P] [--no-local] [--json]
//
// --concurrency K: data connections to the store at most
// (Options::max_connections_per_endpoint); each series keeps up to 2K
// slices in flight (16 at most).
//
// Exit status 0 only when every Blob came back identical.
#include <blobstreaming/client/Logging.h>
#include <blobstreaming/client/Session.h>
#include <blobstreaming/common/Error.h>

#include <spdlog/logger.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::client;

namespace {

struct Arguments {
    std::string naming;
    std::string store;
    std::string prefix = "series." + std::to_string(::getpid());
    std::size_t count = 0;
    std::size_t size = 0;
    std::size_t concurrency = 1;
    bool json = false;
    bool local = true;
};

[[noreturn]] void usage(const std::string& why)
{
    std::fprintf(stderr,
                 "async_series: %s\nusage: async_series --naming URL --store NAME --count N --size BYTES "
                 "--concurrency K [--prefix P] [--no-local] [--json]\n",
                 why.c_str());
    std::exit(1);
}

std::size_t number(const char* option, const char* text, std::size_t low, std::size_t high)
{
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (end == text || *end != '\0' || v < low || v > high)
        usage(std::string(option) + " " + text + ": expected " + std::to_string(low) + " to " + std::to_string(high));
    return static_cast<std::size_t>(v);
}

Arguments parse(int argc, char** argv)
{
    Arguments a;
    for (int i = 1; i < argc; ++i) {
        const std::string opt = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) usage(opt + " needs a value");
            return argv[++i];
        };
        if (opt == "--naming") a.naming = value();
        else if (opt == "--store") a.store = value();
        else if (opt == "--prefix") a.prefix = value();
        else if (opt == "--count") a.count = number("--count", value(), 1, 100000);
        else if (opt == "--size") a.size = number("--size", value(), 0, std::size_t(1) << 32);
        else if (opt == "--concurrency") a.concurrency = number("--concurrency", value(), 1, 256);
        else if (opt == "--json") a.json = true;
        else if (opt == "--no-local") a.local = false;
        else usage("unknown option " + opt);
    }
    if (a.naming.empty() || a.store.empty() || a.count == 0) usage("--naming, --store and --count are required");
    return a;
}

/// Waits for a series started in Mode::Async: runs the Session's loop on
/// this thread until `done`. Bounded: every slice ends by its inactivity
/// timeout at the latest.
void drive(Session& session, const bool& done)
{
    while (!done) session.run_once(std::chrono::milliseconds(1000));
}

}  // namespace

int main(int argc, char** argv)
{
    const Arguments args = parse(argc, argv);
    // The library logs warnings to stderr by default; its transfer lines
    // (info) only when asked for.
    if (std::getenv("BLOBSTREAMING_LOG")) client::logger()->set_level(spdlog::level::info);
    Session::Options options;
    options.naming_url = args.naming;
    options.default_store = args.store;
    options.reactor = ReactorMode::Caller;
    options.local_fast_path = args.local;
    options.max_connections_per_endpoint = static_cast<unsigned>(args.concurrency);

    std::vector<std::vector<std::uint8_t>> blobs(args.count);
    std::mt19937_64 random(std::random_device{}());
    for (auto& blob : blobs) {
        blob.resize(args.size);
        for (auto& b : blob) b = static_cast<std::uint8_t>(random());
    }
    auto name = [&](std::size_t i) { return args.prefix + "." + std::to_string(i); };

    std::size_t pushed = 0, pulled = 0, mismatches = 0, errors = 0;
    auto note_errors = [&](const SeriesResult& r) {
        errors += r.failed;
        for (const Result& slice : r.slices)
            if (!slice.ok()) std::fprintf(stderr, "async_series: %s\n", slice.message.c_str());
    };
    try {
        Session session(options);
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<PushSlice> study;
        for (std::size_t i = 0; i < args.count; ++i)
            study.push_back(PushSlice{PushSource::memory(blobs[i].data(), blobs[i].size()), name(i)});
        PushOptions push_options;
        push_options.replace = true;
        bool pushes_done = false;
        session.push_series(std::move(study), push_options, Mode::Async, [&](const SeriesResult& r) {
            pushed = r.succeeded;
            note_errors(r);
            pushes_done = true;
        });
        drive(session, pushes_done);
        const auto t1 = std::chrono::steady_clock::now();

        std::vector<std::vector<std::uint8_t>> back(args.count);
        std::vector<PullSlice> slices;
        for (std::size_t i = 0; i < args.count; ++i) slices.push_back(PullSlice{name(i), PullSink::memory(&back[i])});
        bool pulls_done = false;
        session.pull_series(std::move(slices), PullOptions{}, Mode::Async, [&](const SeriesResult& r) {
            note_errors(r);
            for (std::size_t i = 0; i < r.slices.size(); ++i) {
                if (!r.slices[i].ok()) continue;
                if (back[i] == blobs[i]) ++pulled;
                else ++mismatches;
            }
            pulls_done = true;
        });
        drive(session, pulls_done);
        const auto t2 = std::chrono::steady_clock::now();

        const double push_s = std::chrono::duration<double>(t1 - t0).count();
        const double pull_s = std::chrono::duration<double>(t2 - t1).count();
        const double total = static_cast<double>(args.count) * static_cast<double>(args.size);
        std::printf("{\"pushed\":%zu,\"pulled\":%zu,\"mismatches\":%zu,\"errors\":%zu,\"connections_opened\":%llu,"
                    "\"count\":%zu,\"size\":%zu,\"concurrency\":%zu,\"push_seconds\":%.6f,\"pull_seconds\":%.6f,"
                    "\"push_mbps\":%.2f,\"pull_mbps\":%.2f}\n",
                    pushed, pulled, mismatches, errors, static_cast<unsigned long long>(session.connections_opened()),
                    args.count, args.size, args.concurrency, push_s, pull_s, push_s > 0 ? total / push_s / 1e6 : 0.0,
                    pull_s > 0 ? total / pull_s / 1e6 : 0.0);
        if (!args.json)
            std::fprintf(stderr, "async_series: %zu pushed, %zu pulled, %zu mismatches, %zu errors\n", pushed, pulled,
                         mismatches, errors);
    } catch (const Error& e) {
        std::fprintf(stderr, "async_series: %s\n", e.what());
        return static_cast<int>(e.code());
    }
    return pushed == args.count && pulled == args.count && mismatches == 0 ? 0 : 1;
}
