// blob watch: the stores' events as lines on standard output (docs/CLI.md).
#include "Commands.h"
#include "Output.h"

#include <blobstreaming/cli/Values.h>
#include <blobstreaming/client/Watch.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <pthread.h>
#include <unistd.h>

namespace blobstreaming::cli {
namespace {

nlohmann::json study_json(const client::StoreEvent& e)
{
    const client::StableStudy& s = e.study;
    return {{"gateway", s.gateway},
            {"event", client::to_string(e.kind)},
            {"sequence", e.sequence},
            {"epoch_ns", e.epoch_ns},
            {"time", rfc3339(e.time)},
            {"time_ns", std::chrono::duration_cast<std::chrono::nanoseconds>(e.time.time_since_epoch()).count()},
            {"study", utf8_escaped(s.study_instance_uid)},
            {"patient_id", utf8_escaped(s.patient_id)},
            {"accession_number", utf8_escaped(s.accession_number)},
            {"series", s.series},
            {"instances", s.instances},
            {"stores", s.stores},
            {"last_instance", rfc3339(s.last_instance)},
            {"last_instance_ns",
             std::chrono::duration_cast<std::chrono::nanoseconds>(s.last_instance.time_since_epoch()).count()}};
}

nlohmann::json event_json(const client::StoreEvent& e)
{
    if (e.kind == client::StoreEventKind::study_stable) return study_json(e);
    nlohmann::json j = {
        {"store", e.store},
        {"event", client::to_string(e.kind)},
        {"reason", e.reason},
        {"sequence", e.sequence},
        {"epoch_ns", e.epoch_ns},
        {"time", rfc3339(e.time)},
        {"time_ns", std::chrono::duration_cast<std::chrono::nanoseconds>(e.time.time_since_epoch()).count()},
        {"name", e.blob.name}};
    if (e.blob.committed.time_since_epoch().count() > 0) {  // known (a removal may not know it)
        j["size"] = e.blob.size;
        j["checksum"] = e.blob.checksum.text();
        j["committed"] = rfc3339(e.blob.committed);
    }
    return j;
}

std::string joined(const std::vector<std::string>& items);

std::string event_line(const client::StoreEvent& e)
{
    if (e.kind == client::StoreEventKind::study_stable) {
        const client::StableStudy& s = e.study;
        return rfc3339(e.time) + " " + printable(s.gateway) + " #" + std::to_string(e.sequence) + " study-stable " +
               printable(s.study_instance_uid) + " patient \"" + printable(s.patient_id) + "\" accession \"" +
               printable(s.accession_number) +
               "\": " + std::to_string(s.series) + " series, " + std::to_string(s.instances) + " instances in " +
               (s.stores.empty() ? std::string("no store") : joined(s.stores)) + " (last instance " +
               rfc3339(s.last_instance) + ")";
    }
    std::string line = rfc3339(e.time) + " " + e.store + " #" + std::to_string(e.sequence) + " " +
                       client::to_string(e.kind) + " " + quote_name(e.blob.name) + " (" + e.reason + ")";
    if (e.blob.committed.time_since_epoch().count() > 0)
        line += " " + std::to_string(e.blob.size) + " bytes " + e.blob.checksum.text();
    return line;
}

std::string joined(const std::vector<std::string>& items)
{
    std::string out;
    for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
    return out;
}

}  // namespace

std::vector<std::string> watch_events(const std::string& command, const std::string& text)
{
    if (command != "watch") throw UsageError("--events applies to watch only, not " + command);
    std::vector<std::string> kinds;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = text.find(',', start);
        const std::string kind = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!client::event_kind_of(kind))
            throw UsageError("--events: unknown event kind \"" + kind + "\" in \"" + text +
                             "\" (known: committed, removed, study-stable; comma-separated)");
        kinds.push_back(kind);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return kinds;
}

int watch(const Invocation& call)
{
    // SIGINT and SIGTERM wait for sigwait() below, in every thread: those of
    // the ORB, started from here on, inherit the mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    client::WatchOptions options;
    options.stores = call.stores;
    for (const std::string& kind : call.events) options.kinds.push_back(*client::event_kind_of(kind));
    options.gateways = call.gateways;
    std::atomic<bool> output_failed{false};
    std::atomic<int> output_errno{0};
    client::Watch watch(session_options(call), options, [&](const client::StoreEvent& e) {
        const std::string line = call.json ? json_line(event_json(e)) : event_line(e) + "\n";
        // One event, one line, at once: a reader sees it as it happens.
        errno = 0;
        if (std::fwrite(line.data(), 1, line.size(), stdout) != line.size() || std::fflush(stdout) != 0) {
            output_errno = errno;
            if (!output_failed.exchange(true)) ::kill(::getpid(), SIGTERM);  // ends the wait below
        }
    });
    if (!call.quiet) {
        const std::string kinds = call.events.empty() ? "committed, removed" : joined(call.events);
        const bool store_events = call.events.empty() || std::any_of(call.events.begin(), call.events.end(),
                                                                     [](const auto& k) { return k != "study-stable"; });
        std::string what;
        if (!watch.stores().empty()) what = "store " + joined(watch.stores());
        else if (store_events) what = "no store (none is registered)";
        if (!watch.gateways().empty())
            what += (what.empty() ? "" : " and ") + std::string("gateway ") + joined(watch.gateways());
        std::fprintf(stderr, "blob watch: watching %s (%s); SIGINT or SIGTERM ends\n", what.c_str(), kinds.c_str());
        std::fflush(stderr);
    }
    int signal = 0;
    sigwait(&stop_signals, &signal);
    watch.close();
    // The reader went away (`blob watch | head -3`): the end it asked for.
    if (output_failed && output_errno == EPIPE) end_on_closed_output();
    if (output_failed) throw Error(Errc::io_error, "watch: cannot write standard output: the events stop here");
    return 0;
}

}  // namespace blobstreaming::cli
