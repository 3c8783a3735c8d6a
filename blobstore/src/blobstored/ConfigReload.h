#pragma once
/// SIGHUP: which settings blobstored applies while it runs, and which need
/// a restart (docs/CLI.md, "Signals"). The configuration is read again as at
/// start (command line, then --config, the command line winning);
/// changed_settings() compares it with the one in force.

#include "DaemonOptions.h"

#include <string>
#include <vector>

namespace blobstreaming::daemon {

/// One setting that differs between the configuration in force and the one
/// read again.
struct SettingChange {
    std::string option;  ///< its long option name, e.g. "log-level"
    std::string before;  ///< in force
    std::string after;   ///< read again
    bool live = false;   ///< applied at once; otherwise it takes effect at the next start
};

/// Every setting of `next` that differs from `now`, in the order of --help.
/// Live: log-level, naming-check, max-reservations,
/// max-reservations-per-client, reservation-idle-at-limit, transporter-idle, max-transporters,
/// max-client-transporters and the access list (allow-read, allow-write,
/// allow-delete). Every other one needs a restart.
std::vector<SettingChange> changed_settings(const DaemonOptions& now, const DaemonOptions& next);

/// `now` with the live settings of `next`: what is in force after a reload.
DaemonOptions with_live_settings(DaemonOptions now, const DaemonOptions& next);

}  // namespace blobstreaming::daemon
