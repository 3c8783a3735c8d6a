#include "ConfigReload.h"

#include <blobstreaming/common/Checksum.h>

#include <cstdio>
#include <functional>

namespace blobstreaming::daemon {
namespace {

using Text = std::function<std::string(const DaemonOptions&)>;
using Take = std::function<void(DaemonOptions&, const DaemonOptions&)>;

struct Setting {
    const char* option;
    Text text;
    Take take;  ///< empty: needs a restart
};

std::string seconds(std::chrono::milliseconds d)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g s", static_cast<double>(d.count()) / 1000.0);
    return text;
}

std::string on_off(bool on) { return on ? "on" : "off"; }

std::string host_port(const HostPort& hp) { return hp.host + ":" + std::to_string(hp.port); }

template <typename T>
Take copy(T DaemonOptions::*member)
{
    return [member](DaemonOptions& now, const DaemonOptions& next) { now.*member = next.*member; };
}

const std::vector<Setting>& settings()
{
    static const std::vector<Setting> table = {
        {"name", [](const DaemonOptions& o) { return o.name; }, {}},
        {"store", [](const DaemonOptions& o) { return o.store; }, {}},
        {"naming", [](const DaemonOptions& o) { return o.naming; }, {}},
        {"capacity", [](const DaemonOptions& o) { return std::to_string(o.store_settings.capacity); }, {}},
        {"evict", [](const DaemonOptions& o) { return on_off(o.store_settings.evict); }, {}},
        {"ceph-conf", [](const DaemonOptions& o) { return o.store_settings.ceph_conf; }, {}},
        {"ceph-user", [](const DaemonOptions& o) { return o.store_settings.ceph_user; }, {}},
        {"ceph-grace", [](const DaemonOptions& o) { return seconds(o.store_settings.ceph_grace); }, {}},
        {"tier", [](const DaemonOptions& o) { return std::string(tier_name(o.tier)); }, {}},
        {"control-address", [](const DaemonOptions& o) { return host_port(o.control); }, {}},
        {"data-address", [](const DaemonOptions& o) { return host_port(o.data); }, {}},
        {"advertise", [](const DaemonOptions& o) { return o.advertise; }, {}},
        {"metrics-address",
         [](const DaemonOptions& o) { return o.metrics_address ? host_port(*o.metrics_address) : std::string(); },
         {}},
        {"sdc-address", [](const DaemonOptions& o) { return o.sdc_address; }, {}},
        {"ticket-lifetime", [](const DaemonOptions& o) { return seconds(o.ticket_lifetime); }, {}},
        {"timeout", [](const DaemonOptions& o) { return seconds(o.timeout); }, {}},
        {"handshake-timeout", [](const DaemonOptions& o) { return seconds(o.handshake_timeout); }, {}},
        {"idle-timeout", [](const DaemonOptions& o) { return seconds(o.idle_timeout); }, {}},
        {"max-unauthenticated", [](const DaemonOptions& o) { return std::to_string(o.max_unauthenticated); }, {}},
        {"max-control-connections",
         [](const DaemonOptions& o) { return std::to_string(o.max_control_connections); }, {}},
        {"max-control-connections-per-peer",
         [](const DaemonOptions& o) { return std::to_string(o.max_control_connections_per_peer); }, {}},
        {"control-idle-timeout",
         [](const DaemonOptions& o) { return std::to_string(o.control_idle_timeout.count()) + " s"; }, {}},
        {"max-unauthenticated-per-peer",
         [](const DaemonOptions& o) { return std::to_string(o.max_unauthenticated_per_peer); },
         {}},
        {"reservation-grace", [](const DaemonOptions& o) { return seconds(o.reservation_grace); }, {}},
        {"naming-check", [](const DaemonOptions& o) { return seconds(o.naming_check); },
         copy(&DaemonOptions::naming_check)},
        {"max-reservations", [](const DaemonOptions& o) { return std::to_string(o.max_reservations); },
         copy(&DaemonOptions::max_reservations)},
        {"max-reservations-per-client",
         [](const DaemonOptions& o) { return std::to_string(o.max_reservations_per_client); },
         copy(&DaemonOptions::max_reservations_per_client)},
        {"reservation-idle-at-limit", [](const DaemonOptions& o) { return seconds(o.reservation_idle_at_limit); },
         copy(&DaemonOptions::reservation_idle_at_limit)},
        {"transporter-idle", [](const DaemonOptions& o) { return seconds(o.transporter_idle); },
         copy(&DaemonOptions::transporter_idle)},
        {"max-transporters", [](const DaemonOptions& o) { return std::to_string(o.max_transporters); },
         copy(&DaemonOptions::max_transporters)},
        {"max-client-transporters", [](const DaemonOptions& o) { return std::to_string(o.max_client_transporters); },
         copy(&DaemonOptions::max_client_transporters)},
        {"socket-buffer", [](const DaemonOptions& o) { return std::to_string(o.socket_buffer); }, {}},
        {"checksum", [](const DaemonOptions& o) { return std::string(to_string(o.checksum)); }, {}},
        {"no-local", [](const DaemonOptions& o) { return on_off(!o.local_fast_path); }, {}},
        {"compress", [](const DaemonOptions& o) { return std::string(o.compress ? "zstd" : "none"); }, {}},
        {"default-store", [](const DaemonOptions& o) { return o.default_store; }, {}},
        {"read-through", [](const DaemonOptions& o) { return on_off(o.read_through); }, {}},
        {"fetch-timeout", [](const DaemonOptions& o) { return seconds(o.fetch_timeout); }, {}},
        {"no-sync", [](const DaemonOptions& o) { return on_off(!o.store_settings.sync); }, {}},
        {"tls-cert", [](const DaemonOptions& o) { return o.tls.cert; }, {}},
        {"tls-key", [](const DaemonOptions& o) { return o.tls.key; }, {}},
        {"tls-ca", [](const DaemonOptions& o) { return o.tls.ca; }, {}},
        {"allow-read/allow-write/allow-delete", [](const DaemonOptions& o) { return o.access.describe(); },
         [](DaemonOptions& now, const DaemonOptions& next) {
             now.access = next.access;
             now.access.enforce(now.tls.enabled());  // TLS itself changes at a restart only
         }},
        {"log-file", [](const DaemonOptions& o) { return o.log_file.empty() ? "(stderr)" : o.log_file; }, {}},
        {"log-level",
         [](const DaemonOptions& o) {
             const auto name = spdlog::level::to_string_view(o.log_level);
             return std::string(name.data(), name.size());
         },
         copy(&DaemonOptions::log_level)},
    };
    return table;
}

}  // namespace

std::vector<SettingChange> changed_settings(const DaemonOptions& now, const DaemonOptions& next)
{
    std::vector<SettingChange> out;
    for (const auto& s : settings()) {
        std::string before = s.text(now), after = s.text(next);
        if (before != after) out.push_back({s.option, std::move(before), std::move(after), static_cast<bool>(s.take)});
    }
    return out;
}

DaemonOptions with_live_settings(DaemonOptions now, const DaemonOptions& next)
{
    for (const auto& s : settings())
        if (s.take) s.take(now, next);
    return now;
}

}  // namespace blobstreaming::daemon
