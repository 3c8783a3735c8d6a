#include "DaemonOptions.h"

#include <blobstreaming/cli/CommandLine.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/LibraryVersions.h>

#include <boost/program_options.hpp>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <arpa/inet.h>

namespace po = boost::program_options;
using namespace std::chrono_literals;

namespace blobstreaming::daemon {
namespace {

[[noreturn]] void usage(const std::string& message) { throw Error(Errc::invalid_argument, message); }

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

std::size_t parse_count(const std::string& option, const std::string& text, std::size_t min, std::size_t max)
{
    return cli::parse_count("--" + option, text, min, max);
}

HostPort parse_host_port(const std::string& option, const std::string& text)
{
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
        usage("--" + option + ": " + in_quotes(text) + " is not HOST:PORT (e.g. 127.0.0.1:0; port 0 = ephemeral)");
    HostPort hp;
    hp.host = text.substr(0, colon);
    if (hp.host.size() > 2 && hp.host.front() == '[' && hp.host.back() == ']')
        hp.host = hp.host.substr(1, hp.host.size() - 2);
    const std::string port = text.substr(colon + 1);
    char* end = nullptr;
    errno = 0;
    const unsigned long v = std::strtoul(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || errno != 0 || v > 65535 || port.find('-') != std::string::npos)
        usage("--" + option + ": port " + in_quotes(port) + " of " + in_quotes(text) +
              " is not a number from 0 to 65535");
    hp.port = static_cast<std::uint16_t>(v);
    return hp;
}

BlobStreaming::StoreTier parse_tier(const std::string& text)
{
    if (text == "memory") return BlobStreaming::TIER_MEMORY;
    if (text == "workstation") return BlobStreaming::TIER_WORKSTATION;
    if (text == "cluster") return BlobStreaming::TIER_CLUSTER;
    if (text == "central") return BlobStreaming::TIER_CENTRAL;
    usage("--tier: " + in_quotes(text) + " is not one of memory, workstation, cluster, central");
}

/// --store's help: every kind's syntax and description.
std::string store_help()
{
    std::vector<std::string> kinds;
    for (const StoreKind& k : StoreRegistry::builtin().kinds()) kinds.push_back(k.syntax + " (" + k.description + ")");
    return server::listing(kinds) + " (required)";
}

po::options_description describe()
{
    static const std::string caption =
        "blobstored: serves one Blob store on the control plane (CORBA) and the data plane (TCP)\n\nUsage: "
        "blobstored --name NAME --store " +
        StoreRegistry::builtin().syntaxes("|") + " --naming URL [options]\n\nOptions";
    static const std::string store = store_help();
    po::options_description d(caption);
    // clang-format off
    // clang-format off
    d.add_options()
        ("help,h", "show this help and exit")
        ("version", "show the version and exit")
        ("name,n", po::value<std::string>()->value_name("NAME"), "store name, registered as BlobStreaming/Stores/NAME (required)")
        ("store,s", po::value<std::string>()->value_name("URI"), store.c_str())
        ("naming", po::value<std::string>()->value_name("URL"), "Naming Service, corbaname::HOST:PORT (default: $BLOBSTREAMING_NAMING, else corbaname::127.0.0.1:2809)")
        ("capacity", po::value<std::string>()->value_name("BYTES"), "limit of a file or rados store, e.g. 64G or 2T (K, M, G, T: x1024; default: 0 = the file system's, or the pool's quota, else what `ceph df` says the pool can take)")
        ("evict", po::bool_switch(), "a cache: drop least recently used Blobs to make room (any kind; file: and rados: need --capacity)")
        ("ceph-conf", po::value<std::string>()->value_name("FILE"), "rados store: the Ceph configuration (monitors, keyring; default: $CEPH_CONF, else /etc/ceph/ceph.conf)")
        ("ceph-user", po::value<std::string>()->value_name("ID")->default_value("admin"), "rados store: the Ceph client id (client.ID), its key from the keyring the configuration names")
        ("ceph-grace", po::value<std::string>()->value_name("DURATION")->default_value("600"), "rados store: a reservation nobody vouched for this long (its daemon died) and a replaced or removed version (readers may still read it) are deleted after it")
        ("read-through", po::bool_switch(), "a cache that fills itself: a pull of a Blob this store lacks fetches it first from the nearest store of a farther tier that holds it (verified, committed here; docs/STORES.md, \"Tiers\")")
        ("fetch-timeout", po::value<std::string>()->value_name("DURATION")->default_value("30"), "a fetch from another store (read-through, blob copy) that moves no byte this long fails")
        ("default-store", po::value<std::string>()->value_name("NAME"), "where a push that names no store goes first when this daemon's locator is the one bound (BlobStreaming/Locator) and NAME answers with room, else a store of the push's --tier with room, nearest first; give every daemon of a site the same (default: this daemon's own store)")
        ("tier", po::value<std::string>()->value_name("TIER"), "memory|workstation|cluster|central (default: memory for a memory store, central for a rados store, else workstation)")
        ("control-address", po::value<std::string>()->value_name("HOST:PORT")->default_value("0.0.0.0:0"), "CORBA endpoint; port 0: ephemeral")
        ("data-address", po::value<std::string>()->value_name("HOST:PORT")->default_value("0.0.0.0:0"), "data port; port 0: ephemeral")
        ("advertise", po::value<std::string>()->value_name("HOST"), "the host name or address clients are told to connect to, for both endpoints (NAT, a DNS name; default: the control endpoint's host, for a wildcard the first non-loopback address)")
        ("metrics-address", po::value<std::string>()->value_name("HOST:PORT"), "serve Prometheus metrics at http://HOST:PORT/metrics (with --tls-*: https, client certificate required; docs/DEPLOYMENT.md); port 0: ephemeral")
        ("sdc-address", po::value<std::string>()->value_name("HOST:PORT"), "serve the store's status as an IEEE 11073 SDC provider (docs/SDC.md); port 0: ephemeral")
        ("ticket-lifetime", po::value<std::string>()->value_name("DURATION")->default_value("30"), "unused transfer tickets expire after this (durations: seconds unless a unit is given: 500ms, 2m, 1h)")
        ("timeout", po::value<std::string>()->value_name("DURATION")->default_value("30"), "inactivity timeout of a transfer")
        ("handshake-timeout", po::value<std::string>()->value_name("DURATION")->default_value("5"), "a data connection that has not presented a valid transfer Request (after its TLS handshake) this long after connecting is closed")
        ("idle-timeout", po::value<std::string>()->value_name("DURATION")->default_value("60"), "a data connection idle between transfers (a client's pooled connection) is closed after this")
        ("max-unauthenticated", po::value<std::string>()->value_name("N")->default_value("1024"), "data connections that have not presented a valid ticket yet; above it the oldest is closed for the newcomer (lowered to fit the descriptor limit)")
        ("max-unauthenticated-per-peer", po::value<std::string>()->value_name("N")->default_value("64"), "the same from one IP address; above it a new connection is closed at once")
        ("max-control-connections", po::value<std::string>()->value_name("N")->default_value("512"), "control (CORBA) connections open at once (16 to 65536; lowered to an eighth of the descriptor limit); when reached, one of the address that holds the most is closed for the newcomer")
        ("max-control-connections-per-peer", po::value<std::string>()->value_name("N")->default_value("64"), "the same from one IP address (with TLS too: counted before the handshake); more are closed at once (1 to 4096)")
        ("control-idle-timeout", po::value<std::string>()->value_name("DURATION")->default_value("30"), "a control connection without a call in progress is closed after this, and a call begun must arrive whole within it (1 to 3600 seconds; clients reconnect transparently)")
        ("reservation-grace", po::value<std::string>()->value_name("DURATION")->default_value("60"), "an unused reservation is aborted after this")
        ("naming-check", po::value<std::string>()->value_name("DURATION")->default_value("2"), "how often the store checks its Naming Service entry and registers again when it is missing (a restarted Naming Service)")
        ("max-reservations", po::value<std::string>()->value_name("N")->default_value("1024"), "open reservations (reserved, not yet committed or aborted) the store holds at most; more are refused with LimitReached (1 to 1000000)")
        ("max-reservations-per-client", po::value<std::string>()->value_name("N")->default_value("64"), "open reservations one client holds at most: its certificate subject with TLS, else its IP address (1 to 1000000)")
        ("reservation-idle-at-limit", po::value<std::string>()->value_name("DURATION")->default_value("5"), "at --max-reservations, a reservation nobody has filled for this long, of a client holding at least two more than the newcomer, is aborted to make room (0.001 to 604800 s)")
        ("transporter-idle", po::value<std::string>()->value_name("DURATION")->default_value("300"), "a transporter neither called nor transferring for this long is reclaimed (its client died or never closed it); checked every --naming-check")
        ("max-transporters", po::value<std::string>()->value_name("N")->default_value("4096"), "open transporters in all; more are refused with limit_reached")
        ("max-client-transporters", po::value<std::string>()->value_name("N")->default_value("256"), "open transporters of one client (its host, or its certificate subject with TLS)")
        ("max-subscriptions", po::value<std::string>()->value_name("N")->default_value("1000"), "event subscriptions (BlobStore::subscribe, blob watch) the store keeps in all; more are refused with LimitReached (1 to 1000000)")
        ("max-client-subscriptions", po::value<std::string>()->value_name("N")->default_value("16"), "event subscriptions of one client: its certificate subject with TLS, else its IP address (1 to 1000000)")
        ("socket-buffer", po::value<std::string>()->value_name("BYTES"), "SO_SNDBUF and SO_RCVBUF of data connections (default: unset = Linux autotuning)")
        ("checksum", po::value<std::string>()->value_name("ALGORITHM")->default_value("crc32c"), "checksum of pushes that do not choose one: crc32c (fast, the default) or sha256 (cryptographic, ~1.5 GB/s per core); a Blob keeps the algorithm it was pushed with")
        ("compress", po::value<std::string>()->value_name("MODE")->default_value("zstd"), "compression on the data connection: zstd (take compressed pushes, compress the pulls that ask for it) or none (refuse compressed pushes, answer every pull with raw bytes)")
        ("no-local", po::bool_switch(), "never offer the same-host fast path (findLocalFile), nor read another store's files for a copy or read-through")
        ("no-sync", po::bool_switch(), "do not fsync at commit (tests and benchmarks only)")
        ("tls-cert", po::value<std::string>()->value_name("FILE"), "TLS on both planes: this store's certificate (PEM); needs --tls-key and --tls-ca")
        ("tls-key", po::value<std::string>()->value_name("FILE"), "the certificate's private key (PEM, unencrypted)")
        ("tls-ca", po::value<std::string>()->value_name("FILE"), "CA certificates (PEM) that clients' certificates must chain to")
        ("allow-read", po::value<std::vector<std::string>>()->composing()->value_name("SUBJECT"), "TLS: a client certificate subject (RFC 2253, e.g. CN=ws1) or * that may stat, list and pull; repeatable")
        ("allow-write", po::value<std::vector<std::string>>()->composing()->value_name("SUBJECT"), "TLS: ... that may push; repeatable")
        ("allow-delete", po::value<std::vector<std::string>>()->composing()->value_name("SUBJECT"), "TLS: ... that may remove; repeatable. With TLS on, whatever is not allowed is denied")
        ("config", po::value<std::string>()->value_name("FILE"), "read `option = value` lines (long option names) from FILE; the command line wins; read again on SIGHUP")
        ("log-file", po::value<std::string>()->value_name("FILE"), "append the log to FILE instead of standard error; opened again on SIGHUP (log rotation)")
        ;
    // clang-format on
    // clang-format on
    cli::add_logging_options(d, spdlog::level::info);
    return d;
}

/// Boost.Program_options substitutes "%option%", "%value%" ... into its error
/// messages until none is left, so an option name or value that contains
/// such a token makes it loop forever. We refuse '%' before it gets there.
void refuse_percent(const std::string& where, const std::string& text)
{
    if (text.find('%') != std::string::npos) usage(where + ": '%' is not allowed in option names and values");
}

/// --advertise: a DNS name, an IPv4 address or an IPv6 address (without
/// brackets); no port (the ports are those the endpoints listen on).
std::string parse_advertised_host(const std::string& text)
{
    bool ok = !text.empty() && text.size() <= 253 && text.front() != '-' && text.front() != '.';
    if (text.find(':') != std::string::npos) {
        in6_addr address{};
        ok = ::inet_pton(AF_INET6, text.c_str(), &address) == 1;
    } else {
        for (const char c : text) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-');
    }
    if (!ok)
        usage("--advertise: " + in_quotes(text) +
              " is not a host name or address (a DNS name, an IPv4 address, or an IPv6 address without brackets; "
              "no port)");
    return text;
}

void check_config_text(const std::string& source, const std::string& text)
{
    std::istringstream in(text);
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n) {
        refuse_percent(source + ": line " + std::to_string(n), line.substr(0, line.find('#')));
    }
}

std::string value_of(const po::variables_map& vm, const char* key)
{
    return vm.count(key) ? vm[key].as<std::string>() : std::string();
}

}  // namespace

const char* tier_name(BlobStreaming::StoreTier tier)
{
    switch (tier) {
    case BlobStreaming::TIER_MEMORY: return "memory";
    case BlobStreaming::TIER_WORKSTATION: return "workstation";
    case BlobStreaming::TIER_CLUSTER: return "cluster";
    case BlobStreaming::TIER_CENTRAL: return "central";
    default: return "unknown";
    }
}

namespace {

ParsedCommandLine interpret(const po::options_description& desc, const po::variables_map& vm);

}  // namespace

ParsedCommandLine parse_command_line(int argc, char** argv)
{
    const po::options_description desc = describe();
    po::variables_map vm;
    for (int i = 1; i < argc; ++i) refuse_percent("argument " + in_quotes(argv[i]), argv[i]);
    try {
        po::store(cli::command_line_parser(argc, argv).options(desc).run(), vm);
        if (vm.count("config")) {
            const std::string file = vm["config"].as<std::string>();
            std::ifstream in(file, std::ios::binary);
            std::string text;
            char buf[4096];
            while (in.read(buf, sizeof buf) || in.gcount() > 0) text.append(buf, static_cast<std::size_t>(in.gcount()));
            if (!in.is_open() || in.bad()) usage("--config: cannot read " + in_quotes(file));
            check_config_text("--config " + in_quotes(file), text);
            std::istringstream lines(text);
            po::store(po::parse_config_file(lines, desc), vm);
        }
        po::notify(vm);
    } catch (const po::error& e) {
        usage(e.what());
    }
    return interpret(desc, vm);
}

ParsedCommandLine parse_options(const std::vector<std::string>& args, const std::string& config_text)
{
    const po::options_description desc = describe();
    po::variables_map vm;
    for (const auto& arg : args) refuse_percent("argument " + in_quotes(arg), arg);
    check_config_text("configuration", config_text);
    try {
        po::store(cli::command_line_parser(args).options(desc).run(), vm);
        std::istringstream in(config_text);
        po::store(po::parse_config_file(in, desc), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        usage(e.what());
    }
    return interpret(desc, vm);
}

namespace {

ParsedCommandLine interpret(const po::options_description& desc, const po::variables_map& vm)
{
    ParsedCommandLine out;
    if (auto text = cli::help_or_version(
            vm, desc, "blobstored", transporter_library_versions(),
            "Exit codes: 0 clean shutdown, 1 usage, 31 a daemon of this --name "
            "answers (store in use), 52 the naming service is unreachable, otherwise the blobstreaming::Errc of the failure "
            "(docs/CLI.md).\n")) {
        out.text = std::move(*text);
        return out;
    }

    DaemonOptions o;
    o.log_level = cli::log_level(vm, spdlog::level::info);
    o.log_file = value_of(vm, "log-file");
    o.config = value_of(vm, "config");
    o.name = value_of(vm, "name");
    if (o.name.empty()) usage("--name is required (the store's name in the naming service)");
    if (o.name.find('/') != std::string::npos || o.name.find('.') == 0)
        usage("--name: " + in_quotes(o.name) + " may not contain '/' nor start with '.'");

    const StoreRegistry& stores = StoreRegistry::builtin();
    o.store = value_of(vm, "store");
    if (o.store.empty()) usage("--store is required (" + stores.syntaxes("|") + ")");
    const StoreKind* kind = nullptr;
    try {
        kind = &stores.check(o.store);
    } catch (const Error& e) {
        usage("--store: " + std::string(e.what()));
    }

    o.naming = value_of(vm, "naming");
    if (o.naming.empty()) {
        const char* env = std::getenv("BLOBSTREAMING_NAMING");
        o.naming = env && *env ? env : "corbaname::127.0.0.1:2809";
    }
    if (vm.count("capacity")) {
        if (!kind->takes_capacity)
            usage("--capacity applies to a " + stores.schemes_that(&StoreKind::takes_capacity) + " store; a " +
                  kind->scheme + " store's size is in --store");
        o.store_settings.capacity = cli::parse_size("--capacity", value_of(vm, "capacity"));
        try {
            server::check_plausible_capacity("--capacity", value_of(vm, "capacity"), o.store_settings.capacity);
        } catch (const Error& e) {
            usage(e.what());
        }
    }
    o.store_settings.evict = vm["evict"].as<bool>();
    if (o.store_settings.evict && kind->takes_capacity && !vm.count("capacity"))
        usage("--evict on a " + kind->scheme +
              " store needs --capacity, the bytes the cache may hold: bounded only by what its medium has left, "
              "it would be emptied for nothing");
    for (const char* option : {"ceph-conf", "ceph-user", "ceph-grace"})
        if (vm.count(option) && !vm[option].defaulted() && !kind->takes_ceph)
            usage(std::string("--") + option + " applies to a " + stores.schemes_that(&StoreKind::takes_ceph) +
                  " store only");
    if (vm.count("ceph-conf")) {
        o.store_settings.ceph_conf = value_of(vm, "ceph-conf");
        std::ifstream conf(o.store_settings.ceph_conf);
        if (!conf)
            usage("--ceph-conf: cannot read " + in_quotes(o.store_settings.ceph_conf) + ": " + std::strerror(errno));
    }
    o.store_settings.ceph_user = value_of(vm, "ceph-user");
    if (o.store_settings.ceph_user.rfind("client.", 0) == 0) o.store_settings.ceph_user.erase(0, 7);
    if (o.store_settings.ceph_user.empty() || o.store_settings.ceph_user.find_first_of(" \t/") != std::string::npos)
        usage("--ceph-user: " + in_quotes(value_of(vm, "ceph-user")) +
              " is not a Ceph client id (e.g. admin or blobstore, for client.admin or client.blobstore)");
    o.store_settings.ceph_grace = cli::parse_duration("--ceph-grace", value_of(vm, "ceph-grace"), 100ms, 604800s);
    o.tier = parse_tier(vm.count("tier") ? value_of(vm, "tier") : kind->default_tier);
    o.control = parse_host_port("control-address", value_of(vm, "control-address"));
    o.data = parse_host_port("data-address", value_of(vm, "data-address"));
    if (vm.count("advertise")) o.advertise = parse_advertised_host(value_of(vm, "advertise"));
    if (vm.count("metrics-address"))
        o.metrics_address = parse_host_port("metrics-address", vm["metrics-address"].as<std::string>());
    if (vm.count("sdc-address")) {
        const HostPort sdc = parse_host_port("sdc-address", vm["sdc-address"].as<std::string>());
        o.sdc_address = sdc.host + ":" + std::to_string(sdc.port);
    }
    o.ticket_lifetime = cli::parse_duration("--ticket-lifetime", value_of(vm, "ticket-lifetime"), 1ms, 86400s);
    o.timeout = cli::parse_duration("--timeout", value_of(vm, "timeout"), 1ms, 86400s);
    o.handshake_timeout = cli::parse_duration("--handshake-timeout", value_of(vm, "handshake-timeout"), 100ms, 3600s);
    o.idle_timeout = cli::parse_duration("--idle-timeout", value_of(vm, "idle-timeout"), 100ms, 86400s);
    o.max_unauthenticated = parse_count("max-unauthenticated", value_of(vm, "max-unauthenticated"), 1, 1000000);
    o.max_unauthenticated_per_peer =
        parse_count("max-unauthenticated-per-peer", value_of(vm, "max-unauthenticated-per-peer"), 1, 1000000);
    o.max_control_connections =
        parse_count("max-control-connections", value_of(vm, "max-control-connections"), 16, 65536);
    o.max_control_connections_per_peer =
        parse_count("max-control-connections-per-peer", value_of(vm, "max-control-connections-per-peer"), 1, 4096);
    o.control_idle_timeout = std::chrono::ceil<std::chrono::seconds>(
        cli::parse_duration("--control-idle-timeout", value_of(vm, "control-idle-timeout"), 1s, 3600s));
    o.reservation_grace = cli::parse_duration("--reservation-grace", value_of(vm, "reservation-grace"), 1ms, 604800s);
    o.naming_check = cli::parse_duration("--naming-check", value_of(vm, "naming-check"), 100ms, 3600s);
    o.max_reservations = parse_count("max-reservations", value_of(vm, "max-reservations"), 1, 1000000);
    o.max_reservations_per_client =
        parse_count("max-reservations-per-client", value_of(vm, "max-reservations-per-client"), 1, 1000000);
    o.reservation_idle_at_limit = cli::parse_duration("--reservation-idle-at-limit",
                                                      value_of(vm, "reservation-idle-at-limit"), 1ms, 604800s);
    o.transporter_idle = cli::parse_duration("--transporter-idle", value_of(vm, "transporter-idle"), 100ms, 604800s);
    o.max_transporters = parse_count("max-transporters", value_of(vm, "max-transporters"), 1, 1000000);
    o.max_client_transporters =
        parse_count("max-client-transporters", value_of(vm, "max-client-transporters"), 1, 1000000);
    o.max_subscriptions = parse_count("max-subscriptions", value_of(vm, "max-subscriptions"), 1, 1000000);
    o.max_client_subscriptions =
        parse_count("max-client-subscriptions", value_of(vm, "max-client-subscriptions"), 1, 1000000);
    if (vm.count("socket-buffer")) {
        o.socket_buffer =
            static_cast<int>(cli::parse_size("--socket-buffer", value_of(vm, "socket-buffer"), 4096, 1ULL << 30));
    }
    o.checksum = cli::parse_checksum_algorithm("--checksum", value_of(vm, "checksum"));
    if (const std::string compress = value_of(vm, "compress"); compress == "zstd" || compress == "none")
        o.compress = compress == "zstd";
    else
        usage("--compress: " + in_quotes(compress) + " is not a compression mode (allowed: zstd, none)");
    o.local_fast_path = !vm["no-local"].as<bool>();
    o.read_through = vm["read-through"].as<bool>();
    o.default_store = value_of(vm, "default-store");
    if (vm.count("default-store") &&
        (o.default_store.empty() || o.default_store.find('/') != std::string::npos || o.default_store.find('.') == 0))
        usage("--default-store: " + in_quotes(o.default_store) +
              " is not a store name (not empty, no '/', not starting with '.')");
    o.fetch_timeout = cli::parse_duration("--fetch-timeout", value_of(vm, "fetch-timeout"), 100ms, 86400s);
    o.store_settings.sync = !vm["no-sync"].as<bool>();

    o.tls.cert = value_of(vm, "tls-cert");
    o.tls.key = value_of(vm, "tls-key");
    o.tls.ca = value_of(vm, "tls-ca");
    o.tls.check("--tls-");
    const std::pair<const char*, server::Permission> lists[] = {{"allow-read", server::Permission::read},
                                                                {"allow-write", server::Permission::write},
                                                                {"allow-delete", server::Permission::remove}};
    for (const auto& [option, permission] : lists) {
        if (!vm.count(option)) continue;
        if (!o.tls.enabled())
            usage(std::string("--") + option +
                  " needs TLS (--tls-cert, --tls-key, --tls-ca): without TLS clients "
                  "have no identity to check");
        for (const auto& subject : vm[option].as<std::vector<std::string>>())
            o.access.allow(permission, subject, std::string("--") + option);
    }
    o.access.enforce(o.tls.enabled());
    out.run = std::move(o);
    return out;
}

}  // namespace

}  // namespace blobstreaming::daemon
