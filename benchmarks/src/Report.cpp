#include "Report.h"

#include <nlohmann/json.hpp>

#include <sys/utsname.h>

#include <cstdio>
#include <ctime>

namespace blobstreaming::bench {
namespace {

using nlohmann::json;

std::string system_info()
{
    utsname u{};
    if (uname(&u) != 0) return "unknown";
    return std::string(u.sysname) + " " + u.nodename + " " + u.release + " " + u.version + " " + u.machine;
}

json labels(const Config& config)
{
    json j;
    j["variant"] = config.variant;
    j["direction"] = direction_name(config.direction);
    j["blob_bytes"] = config.size;
    j["count"] = config.count;
    j["socket_buffer"] = config.socket_buffer > 0 ? json(config.socket_buffer) : json("auto");
    j["chunk"] = config.chunk;
    j["link"] = config.link;
    if (config.variant == "blobstreaming") j["verify"] = config.verify;
    return j;
}

json interval(double seconds, std::uint64_t bytes, bool sender)
{
    return {{"start", 0.0},
            {"end", seconds},
            {"seconds", seconds},
            {"bytes", bytes},
            {"bits_per_second", seconds > 0 ? 8.0 * static_cast<double>(bytes) / seconds : 0.0},
            {"omitted", false},
            {"sender", sender}};
}

}  // namespace

std::string run_json(const Config& config, const TransportInfo& info, const RunRecord& record)
{
    const auto t = std::chrono::system_clock::to_time_t(record.started);
    char when[64] = "";
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(when, sizeof when, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    const bool client_sends = config.direction == Direction::push;

    json j = labels(config);
    j["target"] = info.target;
    j["run"] = record.run;
    j["start"] = {{"version", "bsbench " PACKAGE_VERSION},
                  {"system_info", system_info()},
                  {"timestamp", {{"time", when}, {"timesecs", static_cast<long long>(t)}}},
                  {"connecting_to", {{"host", config.host}, {"port", config.port}}},
                  {"test_start",
                   {{"protocol", "TCP"},
                    {"num_streams", 1},
                    {"blksize", config.chunk},
                    {"omit", 0},
                    {"duration", 0},
                    {"bytes", config.size * config.count},
                    {"blocks", config.count},
                    {"reverse", client_sends ? 0 : 1}}},
                  {"sock_bufsize", config.socket_buffer},
                  {"sndbuf_actual", info.send_buffer},
                  {"rcvbuf_actual", info.receive_buffer}};
    json sum = interval(record.seconds, record.bytes, client_sends);
    j["intervals"] = json::array({{{"streams", json::array({sum})}, {"sum", sum}}});
    const double wall = record.seconds > 0 ? record.seconds : 1.0;
    j["end"] = {{"sum_sent", interval(record.seconds, record.bytes, true)},
                {"sum_received", interval(record.seconds, record.bytes, false)},
                {"cpu_utilization_percent",
                 {{"host_total", 100.0 * (record.cpu_user + record.cpu_system) / wall},
                  {"host_user", 100.0 * record.cpu_user / wall},
                  {"host_system", 100.0 * record.cpu_system / wall}}},
                {"sha256_verified", record.verified}};
    if (!record.error.empty()) j["error"] = record.error;
    return j.dump();
}

std::string run_text(const Config& config, const RunRecord& record)
{
    const double gbit = record.seconds > 0 ? 8.0 * static_cast<double>(record.bytes) / record.seconds / 1e9 : 0.0;
    char line[512];
    std::snprintf(line, sizeof line, "bsbench %s %s %llu B x%u run %u/%u: %.6f s  %.3f Gbit/s  %.1f MB/s  sha256 %s",
                  config.variant.c_str(), direction_name(config.direction),
                  static_cast<unsigned long long>(config.size), config.count, record.run, config.runs, record.seconds,
                  gbit, gbit * 1e3 / 8.0, record.verified ? "ok" : "FAILED");
    std::string out = line;
    if (!record.error.empty()) out += ": " + record.error;
    return out;
}

std::string error_json(const Config& config, const std::string& message)
{
    json j = labels(config);
    j["error"] = message;
    return j.dump();
}

}  // namespace blobstreaming::bench
