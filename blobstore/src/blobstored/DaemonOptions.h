#pragma once
/// blobstored's command line and configuration file (docs/CLI.md).

#include "server/AccessList.h"

#include "server/StoreRegistry.h"
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/transporter/Tls.h>

#include <BlobStreaming.hh>

#include <spdlog/common.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::daemon {

using server::StoreKind;
using server::StoreRegistry;
using server::StoreSettings;

struct HostPort {
    std::string host;
    std::uint16_t port = 0;
};

struct DaemonOptions {
    std::string name;
    std::string store;             ///< the store's URI (StoreRegistry): file:DIR, memory:SIZE, ...
    StoreSettings store_settings;  ///< --capacity, --evict, --no-sync, --ceph-*
    BlobStreaming::StoreTier tier = BlobStreaming::TIER_WORKSTATION;
    std::string naming;
    HostPort control{"0.0.0.0", 0};
    HostPort data{"0.0.0.0", 0};
    /// --advertise: the host clients are told to use for both endpoints
    /// (NAT, a name in a certificate); empty: the control endpoint's own.
    std::string advertise;
    std::optional<HostPort> metrics_address;  ///< --metrics-address; none: no metrics endpoint
    std::string sdc_address;                  ///< HOST:PORT of the SDC status provider; empty: none
    std::chrono::milliseconds ticket_lifetime{30000};
    std::chrono::milliseconds timeout{30000};
    std::chrono::milliseconds handshake_timeout{5000};  ///< data connection: accepted to first valid Request
    std::chrono::milliseconds idle_timeout{60000};      ///< data connection: idle between transfers
    std::size_t max_unauthenticated = 1024;             ///< data connections without a valid ticket yet
    std::size_t max_unauthenticated_per_peer = 64;      ///< ... from one IP address
    /// Control (CORBA) connections open at once, lowered to an eighth of the
    /// descriptor limit; beyond it one of the address holding the most ends.
    std::size_t max_control_connections = 512;
    std::size_t max_control_connections_per_peer = 64;  ///< ... from one IP address; more are closed
    std::chrono::seconds control_idle_timeout{30};      ///< an idle control connection is closed after this
    std::chrono::milliseconds reservation_grace{60000};
    std::chrono::milliseconds naming_check{2000};        ///< period of the Naming Service upkeep
    std::size_t max_reservations = 1024;                 ///< open reservations in total
    std::size_t max_reservations_per_client = 64;        ///< ... of one client (certificate subject, else address)
    /// At max_reservations, one unused this long of a client holding at
    /// least two more than the newcomer is aborted to make room.
    std::chrono::milliseconds reservation_idle_at_limit{5000};
    std::chrono::milliseconds transporter_idle{300000};  ///< an unused transporter is reclaimed after this
    std::size_t max_transporters = 4096;                 ///< open transporters in all
    std::size_t max_client_transporters = 256;           ///< open transporters of one client (host, or TLS subject)
    std::size_t max_subscriptions = 1000;                ///< event subscriptions in total
    std::size_t max_client_subscriptions = 16;           ///< ... of one client (host, or TLS subject)
    int socket_buffer = 0;                               ///< 0: autotuning
    bool local_fast_path = true;
    bool compress = true;  ///< --compress zstd: compression on the data connection
    /// --default-store: the store the locator's placement tries first for a
    /// push that names none (BlobLocator::place); "" : this daemon's own.
    std::string default_store;
    bool read_through = false;                       ///< --read-through: fetch missing Blobs from farther tiers
    std::chrono::milliseconds fetch_timeout{30000};  ///< a fetch from another store moving no byte fails
    ChecksumAlgorithm checksum = kDefaultChecksum;   ///< of pushes that ask for the store's default
    spdlog::level::level_enum log_level = spdlog::level::info;
    std::string log_file;       ///< --log-file; empty: standard error
    std::string config;         ///< --config FILE (read again on SIGHUP); empty: none
    TlsFiles tls;               ///< enabled(): TLS on both planes
    server::AccessList access;  ///< enforced when TLS is on
};

/// What the command line asks for.
struct ParsedCommandLine {
    std::optional<DaemonOptions> run;  ///< empty: `text` was requested (--help, --version)
    std::string text;                  ///< to print on stdout before exiting 0
};

/// Parses argv (after ORB options were removed) and the --config file.
/// Throws Error(Errc::invalid_argument) with a message naming the option,
/// the value and what is allowed (the caller exits 1).
ParsedCommandLine parse_command_line(int argc, char** argv);

/// The same with the configuration given as text instead of a --config
/// file: `args` are command-line arguments without the program name,
/// `config_text` holds `option = value` lines. Same errors.
ParsedCommandLine parse_options(const std::vector<std::string>& args, const std::string& config_text);

/// The name of a tier as on the command line ("memory", ...).
const char* tier_name(BlobStreaming::StoreTier tier);

}  // namespace blobstreaming::daemon
