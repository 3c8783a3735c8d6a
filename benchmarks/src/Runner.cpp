#include "Runner.h"

#include "Report.h"
#include "Variant.h"
#include "Workload.h"

#include <blobstreaming/common/Error.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>

namespace blobstreaming::bench {
namespace {

double cpu_seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; }

void emit(const Config& config, const TransportInfo& info, const RunRecord& record)
{
    const std::string line = config.json ? run_json(config, info, record) : run_text(config, record);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

/// --paced: waits for the driver's line that starts the next run; false
/// on EOF (the driver wants no more).
bool next_run_wanted()
{
    int c = 0;
    while ((c = std::getchar()) != EOF)
        if (c == '\n') return true;
    return false;
}

}  // namespace

int run_client(const Config& config)
{
    const Variant* variant = find_variant(config.variant);
    if (variant == nullptr) throw Error(Errc::invalid_argument, "unknown variant " + config.variant);
    const bool push = config.direction == Direction::push;

    // The sender's blobs (push) or the receiver's buffers (pull), and the
    // digests every run must reproduce.
    BlobSet blobs(config.count, config.size, push);
    std::vector<Digest> expected;
    if (push) {
        expected = blobs.digests();
    } else {
        for (std::uint32_t i = 0; i < config.count; ++i) expected.push_back(expected_digest(i, config.size));
    }

    auto client = variant->make_client();
    client->open(config);
    const TransportInfo info = client->info();

    auto transaction = [&](std::uint32_t i) {
        if (push) client->push(i, blobs.data(i), config.size);
        else client->pull(i, 0, config.size, blobs.data(i));
    };
    if (config.warmup) {
        transaction(0);
        if (push) client->stored_digests();  // and lets the server reset
        else blobs.clear();
        client->end_run();
    }
    if (config.paced) {
        std::printf("bsbench client ready\n");  // opened and warmed up: the driver may start the runs
        std::fflush(stdout);
    }

    int status = 0;
    for (std::uint32_t run = 1; run <= config.runs; ++run) {
        if (config.paced && !next_run_wanted()) break;
        RunRecord record;
        record.run = run;
        record.started = std::chrono::system_clock::now();
        rusage before{}, after{};
        getrusage(RUSAGE_SELF, &before);
        const auto t0 = std::chrono::steady_clock::now();
        std::uint32_t done = 0;
        try {
            if (push) client->push_series(blobs, done);
            else client->pull_series(blobs, done);
        } catch (const Error& e) {
            record.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            record.bytes = done * config.size;
            record.error = e.what();
            emit(config, info, record);
            throw;
        }
        record.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        getrusage(RUSAGE_SELF, &after);
        record.bytes = config.size * config.count;
        record.cpu_user = cpu_seconds(after.ru_utime) - cpu_seconds(before.ru_utime);
        record.cpu_system = cpu_seconds(after.ru_stime) - cpu_seconds(before.ru_stime);
        if (config.paced) {
            // The timed interval is over: the driver reads its server's CPU
            // time now, before the untimed digests.
            std::printf("bsbench run timed\n");
            std::fflush(stdout);
        }

        // Untimed: digests of what arrived, then reset for the next run.
        if (push) {
            record.error = check_digests(expected, client->stored_digests());
        } else {
            record.error = check_digests(expected, blobs.digests());
            blobs.clear();
        }
        record.verified = record.error.empty();
        if (!record.verified) {
            record.error = "wrong bytes: " + record.error;
            status = static_cast<int>(Errc::digest_mismatch);
        }
        emit(config, info, record);
        client->end_run();
    }
    return status;
}

}  // namespace blobstreaming::bench
