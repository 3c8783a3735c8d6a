// GCC 12 reports a -Wnull-dereference in std::vector inlined into
// Boost.Program_options' typed_value<std::vector<std::string>>::notify (the
// repeatable --peer, --peer-subject); the pointer is never null. A pragma
// reaches it only from before the file's first include.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "GatewayOptions.h"

#include <blobstreaming/cli/CommandLine.h>
#include <blobstreaming/cli/Values.h>
#include <blobstreaming/client/Options.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/LibraryVersions.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <arpa/inet.h>
#include <netinet/in.h>

namespace po = boost::program_options;

namespace blobstreaming::dicom {

namespace {

constexpr const char* kEpilogue =
    "Instances are stored as Blobs named by --name-pattern; the C-STORE is answered Success only after the\n"
    "store's durable, verified acknowledgement. Failure statuses: A700 out of resources (store full or busy),\n"
    "0110 processing failure (store unreachable, push failed), C000 cannot understand (malformed object,\n"
    "no SOP Instance UID), C011 the instance is stored already with another data set (--on-conflict refuse).\n"
    "Exit codes: 0 success, 1 usage, 10-19 the input, 40 the spool or index, 52 naming service or store\n"
    "unreachable, 26 --store not registered; docs/DICOM.md.\n";

[[noreturn]] void usage(const std::string& message) { throw Error(Errc::invalid_argument, message); }

po::options_description describe()
{
    const char* env = std::getenv("BLOBSTREAMING_NAMING");
    const char* tmp = std::getenv("TMPDIR");
    po::options_description d(
        "Usage: blob-dicomd --aetitle AE --port PORT --store STORE [options]\n"
        "A DICOM Storage SCP (C-STORE, C-ECHO) that stores each instance as a Blob and indexes it; with --index\n"
        "it answers C-FIND, C-GET, C-MOVE (to a --destination) and Storage Commitment.\nOptions");
    // clang-format off
    d.add_options()
        ("help,h", "show this help and exit")
        ("version", "show the version and exit")
        ("aetitle,a", po::value<std::string>()->value_name("AE"), "this gateway's application entity title (1-16 characters); associations to any called AE title are accepted, to this one only with --peer or --peer-subject")
        ("port,p", po::value<unsigned>()->value_name("PORT"), "TCP port to listen on (1-65535; 0: a free port, named in the ready line)")
        ("address", po::value<std::string>()->value_name("HOST"), "the IPv4 address of this host the DICOM port listens on (default: every interface)")
        ("callback-address", po::value<std::string>()->value_name("HOST[:PORT]"), "where the gateway's CORBA endpoint listens: the stores' event callbacks (--index) and study-event subscribers (default: 127.0.0.1 when the naming service is on a loopback address, else every interface)")
        ("store,s", po::value<std::string>()->value_name("STORE"), "the Blob store receiving the instances")
        ("naming,n", po::value<std::string>()->default_value(env ? env : "corbaname::127.0.0.1:2809"), "Naming Service URL (env BLOBSTREAMING_NAMING)")
        ("index", po::value<std::string>()->value_name("URL"), "the study index: sqlite:PATH (created when missing) or postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DB (the schema created when missing); every DICOM Blob committed to any store is recorded")
        ("name-pattern", po::value<std::string>()->default_value("{SOPInstanceUID}.dcm"), "the Blob name of an instance: {SOPInstanceUID} (required), {SOPClassUID}, {StudyInstanceUID}, {SeriesInstanceUID}, {Modality}")
        ("max-associations", po::value<unsigned>()->default_value(8), "associations served at once, one thread each (1-256); more are rejected (transient, local limit exceeded)")
        ("max-associations-per-peer", po::value<unsigned>()->value_name("N"), "associations from one IP address at once, counting connections still sending their association request (1 to --max-associations; default half of --max-associations, at least 1); more are rejected (transient, local limit exceeded)")
        ("max-pdu", po::value<unsigned>()->default_value(131072), "largest PDU received, bytes (4096-131072)")
        ("on-conflict", po::value<std::string>()->default_value("refuse"), "an instance already stored with another data set: refuse (status C011) or replace")
        ("spool", po::value<std::string>()->default_value(tmp ? tmp : "/tmp"), "directory holding each received instance until its push has ended (env TMPDIR)")
        ("timeout,t", po::value<std::string>()->default_value("30"), "network and store inactivity timeout, and the deadline of each whole PDU and each whole DIMSE command a peer sends (the association request counted from the connection's accept): a peer that has not sent it by then loses its association; seconds unless a unit is given (1 to 3600 s)")
        ("stable-after", po::value<std::string>()->default_value("60"), "a study with no new instance indexed for this long is stable and published as a study-stable event (with --index; blob watch --events study-stable), seconds unless a unit is given (0.001 to 86400 s, fractions allowed)")
        ("rescan", po::value<std::string>()->default_value("300"), "with --index: how often every registered store's Blobs are compared with the index, seconds unless a unit is given (0 to 86400 s; 0: only at start). A rescan watches stores registered since the last, subscribes again to each (a restarted store forgets its subscribers), indexes what was committed unseen (the gateway down, events dropped) and removes the entries of Blobs gone")
        ("kept-mappings", po::value<unsigned>()->default_value(256), "store files of this host that retrievals served in place kept open and mapped for the next retrieval of the same version, the least recently served dropped first (0-65536; 0: none kept); each serve still checks the Blob's checksum")
        ("kept-mapping-bytes", po::value<std::string>()->default_value("1G"), "the most bytes of those mappings, K/M/G suffixes allowed (1M to 1T)")
        ("log-file", po::value<std::string>()->value_name("FILE"), "append the log to FILE instead of standard error; opened again on SIGHUP (log rotation)")
        ("config", po::value<std::string>()->value_name("FILE"), "read `option = value` lines (long option names) from FILE; the command line wins")
        // Security: docs/DICOM.md, "Security".
        ("peer", po::value<std::vector<std::string>>()->composing()->value_name("AE@HOST=RIGHTS"), "allow calling AE title AE from HOST (an IPv4 address, a host name resolved at start, or *) with RIGHTS, a comma list of store, query, retrieve, move (any destination) and move:DEST+DEST (those destinations); repeatable. With any --peer or --peer-subject, other peers are rejected (permanent, calling AE title not recognized), operations without their right are refused (status 0124) and the called AE title must be --aetitle")
        ("peer-subject", po::value<std::vector<std::string>>()->composing()->value_name("SUBJECT=RIGHTS"), "with --tls-*: allow the client certificate subject SUBJECT (RFC 2253, e.g. CN=modality1,O=Radiology) with RIGHTS; repeatable. With both lists a peer must be in both and gets what both allow")
        ("tls-cert", po::value<std::string>()->value_name("FILE"), "DICOM TLS on --port (PS3.15 B.1, TLS 1.2 or later, TLS only): this gateway's certificate (PEM); needs --tls-key and --tls-ca")
        ("tls-key", po::value<std::string>()->value_name("FILE"), "the private key of --tls-cert (PEM, unencrypted)")
        ("tls-ca", po::value<std::string>()->value_name("FILE"), "the CA certificates (PEM) that every peer's client certificate must chain to: peers without one are refused in the handshake")
        ("store-tls-cert", po::value<std::string>()->value_name("FILE"), "TLS to the Blob stores (both planes; what blob --tls-cert is): this gateway's client certificate (PEM); needs --store-tls-key and --store-tls-ca")
        ("store-tls-key", po::value<std::string>()->value_name("FILE"), "the private key of --store-tls-cert (PEM, unencrypted)")
        ("store-tls-ca", po::value<std::string>()->value_name("FILE"), "the CA certificates (PEM) the stores' certificates must chain to")
        // DICOMweb (gateway/src/web/)
        ("http-address", po::value<std::string>()->value_name("HOST:PORT"), "serve DICOMweb (QIDO-RS, WADO-RS, STOW-RS under /dicom-web) on HOST:PORT (port 0: a free port, named in the ready line); needs --index")
        ("http-max-connections", po::value<unsigned>()->default_value(64), "DICOMweb connections at once (1-4096); at the cap a newcomer ends a connection of the address holding the most, if it holds two more, else it is closed")
        ("http-max-connections-per-peer", po::value<unsigned>()->value_name("N"), "DICOMweb connections from one IP address (1 to --http-max-connections; default an eighth of it, at least 1); more are closed at once")
        ("http-timeout", po::value<std::string>()->default_value("30"), "a DICOMweb request (the TLS handshake, the headers and the body) must arrive whole within this time of the accept or of the previous response, and each write of a response must progress within it, else the connection is closed; seconds unless a unit is given (1 to 3600 s)")
        ("http-max-body", po::value<std::string>()->default_value("256M"), "largest request body (STOW-RS) in bytes, K/M/G suffixes allowed (1K to 16G); a larger one is answered 413")
        ("http-max-parts", po::value<unsigned>()->default_value(1000), "most instances in one STOW-RS request (1-100000); more are answered 413")
        ("http-tls-cert", po::value<std::string>()->value_name("FILE"), "serve DICOMweb over TLS only (https) with this PEM certificate (chain); needs --http-tls-key")
        ("http-tls-key", po::value<std::string>()->value_name("FILE"), "the private key (PEM, unencrypted) of --http-tls-cert")
        ("http-tls-ca", po::value<std::string>()->value_name("FILE"), "with --http-tls-cert: require a client certificate that verifies against these PEM CA certificates")
        ("http-token-file", po::value<std::string>()->value_name("FILE"), "require `Authorization: Bearer TOKEN` on every DICOMweb request, TOKEN being a line of FILE (read at start; empty lines and lines starting with # ignored)")
        ("http-cors-origin", po::value<std::string>()->value_name("ORIGIN"), "answer cross-origin requests (CORS, preflight OPTIONS included) of this origin, e.g. https://viewer.example.org, or * for any")
        // C-MOVE and Storage Commitment:
        ("destination", po::value<std::vector<std::string>>()->composing()->value_name("AET=HOST:PORT"), "a C-MOVE destination and where it listens (repeatable; several `destination = ...` lines in --config); a C-MOVE to another AE title is refused (A801). Storage Commitment results whose association has ended go to the requesting AE's destination. AE title 1-16 characters, no backslash; a host name or IPv4 address; port 1-65535");
    // clang-format on
    cli::add_logging_options(d, spdlog::level::info);
    return d;
}

std::string required(const po::variables_map& vm, const char* key)
{
    if (!vm.count(key)) usage(std::string("--") + key + " is required");
    return vm[key].as<std::string>();
}

void check_name_pattern(const std::string& pattern)
{
    if (pattern.find("{SOPInstanceUID}") == std::string::npos)
        usage("--name-pattern " + pattern + ": must contain {SOPInstanceUID} (one Blob per instance)");
    const std::string sample = expand_name_pattern(pattern, [&pattern](const std::string& key) -> std::string {
        if (key == "SOPInstanceUID" || key == "SOPClassUID" || key == "StudyInstanceUID" || key == "SeriesInstanceUID")
            return "1.2.3";
        if (key == "Modality") return "CT";
        usage("--name-pattern " + pattern + ": unknown field {" + key +
              "} (SOPInstanceUID, SOPClassUID, StudyInstanceUID, SeriesInstanceUID, Modality)");
    });
    if (const auto problem = blob_name_problem(sample)) usage("--name-pattern " + pattern + ": " + *problem);
}

std::string optional_string(const po::variables_map& vm, const char* key)
{
    return vm.count(key) ? vm[key].as<std::string>() : std::string();
}

/// --peer, --peer-subject, --tls-*, --store-tls-*.
void parse_security_options(const po::variables_map& vm, GatewayOptions& o)
{
    if (vm.count("peer"))
        for (const std::string& value : vm["peer"].as<std::vector<std::string>>())
            o.peers.push_back(parse_peer_rule(value));
    if (vm.count("peer-subject"))
        for (const std::string& value : vm["peer-subject"].as<std::vector<std::string>>())
            o.peer_subjects.push_back(parse_subject_rule(value));
    o.tls = {optional_string(vm, "tls-cert"), optional_string(vm, "tls-key"), optional_string(vm, "tls-ca")};
    o.store_tls = {optional_string(vm, "store-tls-cert"), optional_string(vm, "store-tls-key"),
                   optional_string(vm, "store-tls-ca")};
    if (o.tls.enabled()) o.tls.check("--tls-");
    if (o.store_tls.enabled()) o.store_tls.check("--store-tls-");
    if (!o.peer_subjects.empty() && !o.tls.enabled())
        usage("--peer-subject " + o.peer_subjects.front().text +
              ": certificate subjects need DICOM TLS (--tls-cert, --tls-key, --tls-ca)");
}

/// The DICOMweb block (--http-*).
void parse_http_options(const po::variables_map& vm, GatewayOptions& o)
{
    const bool any = vm.count("http-tls-cert") || vm.count("http-tls-key") || vm.count("http-tls-ca") ||
                     vm.count("http-token-file") || vm.count("http-cors-origin") || !vm["http-max-connections"].defaulted() ||
                     vm.count("http-max-connections-per-peer") || !vm["http-timeout"].defaulted() ||
                     !vm["http-max-body"].defaulted() || !vm["http-max-parts"].defaulted();
    if (!vm.count("http-address")) {
        if (any) usage("the --http-* options need --http-address HOST:PORT");
        return;
    }
    const std::string address = vm["http-address"].as<std::string>();
    const auto colon = address.rfind(':');
    const std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
    if (colon == std::string::npos || colon == 0 || port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos || std::stoul(port) > 65535)
        usage("--http-address \"" + address + "\": expected HOST:PORT, e.g. 127.0.0.1:8042 (port 0-65535; 0: a free port)");
    o.http_host = address.substr(0, colon);
    if (o.http_host.size() > 2 && o.http_host.front() == '[' && o.http_host.back() == ']')
        o.http_host = o.http_host.substr(1, o.http_host.size() - 2);
    o.http_port = static_cast<unsigned>(std::stoul(port));
    if (o.index.empty()) usage("--http-address needs --index: DICOMweb answers from the study index");
    o.http_max_connections = vm["http-max-connections"].as<unsigned>();
    if (o.http_max_connections < 1 || o.http_max_connections > 4096)
        usage("--http-max-connections " + std::to_string(o.http_max_connections) + ": expected 1 to 4096");
    o.http_max_connections_per_peer = std::max(1u, o.http_max_connections / 8);
    if (vm.count("http-max-connections-per-peer")) {
        o.http_max_connections_per_peer = vm["http-max-connections-per-peer"].as<unsigned>();
        if (o.http_max_connections_per_peer < 1 || o.http_max_connections_per_peer > o.http_max_connections)
            usage("--http-max-connections-per-peer " + std::to_string(o.http_max_connections_per_peer) +
                  ": expected 1 to " + std::to_string(o.http_max_connections) + " (--http-max-connections)");
    }
    o.http_max_parts = vm["http-max-parts"].as<unsigned>();
    if (o.http_max_parts < 1 || o.http_max_parts > 100000)
        usage("--http-max-parts " + std::to_string(o.http_max_parts) + ": expected 1 to 100000");
    try {
        using namespace std::chrono_literals;
        o.http_timeout = cli::parse_duration("--http-timeout", vm["http-timeout"].as<std::string>(), 1s, 3600s);
        o.http_max_body = cli::parse_size("--http-max-body", vm["http-max-body"].as<std::string>(), 1024, 16ull << 30);
    } catch (const std::exception& e) {
        usage(e.what());
    }
    if (vm.count("http-tls-cert")) o.http_tls_cert = vm["http-tls-cert"].as<std::string>();
    if (vm.count("http-tls-key")) o.http_tls_key = vm["http-tls-key"].as<std::string>();
    if (vm.count("http-tls-ca")) o.http_tls_ca = vm["http-tls-ca"].as<std::string>();
    if (o.http_tls_cert.empty() != o.http_tls_key.empty())
        usage(o.http_tls_cert.empty() ? "--http-tls-key needs --http-tls-cert" : "--http-tls-cert needs --http-tls-key");
    if (!o.http_tls_ca.empty() && o.http_tls_cert.empty()) usage("--http-tls-ca needs --http-tls-cert and --http-tls-key");
    if (vm.count("http-token-file")) {
        o.http_token_file = vm["http-token-file"].as<std::string>();
        if (o.http_token_file.empty()) usage("--http-token-file: expected a file name");
    }
    if (vm.count("http-cors-origin")) {
        o.http_cors_origin = vm["http-cors-origin"].as<std::string>();
        if (o.http_cors_origin.empty() || o.http_cors_origin.find_first_of(" \t\r\n,") != std::string::npos)
            usage("--http-cors-origin \"" + o.http_cors_origin +
                  "\": expected one origin (scheme://host[:port]) or *, without spaces or commas");
    }
}

}  // namespace

std::optional<GatewayOptions> parse_gateway_options(int argc, char** argv, std::string& text)
{
    const po::options_description desc = describe();
    po::variables_map vm;
    try {
        po::store(cli::command_line_parser(argc, argv).options(desc).run(), vm);
        if (vm.count("config")) {
            const std::string file = vm["config"].as<std::string>();
            std::ifstream in(file);
            if (!in) usage("--config: cannot read \"" + file + "\"");
            po::store(po::parse_config_file(in, desc), vm);
        }
        po::notify(vm);
    } catch (const po::error& e) {
        usage(e.what());
    }
    if (auto shown = cli::help_or_version(vm, desc, "blob-dicomd", transporter_library_versions(), kEpilogue)) {
        text = *shown;
        return std::nullopt;
    }
    GatewayOptions o;
    try {
        o.log_level = cli::log_level(vm, spdlog::level::info);
    } catch (const std::exception& e) {
        usage(e.what());
    }
    o.aetitle = required(vm, "aetitle");
    if (o.aetitle.empty() || o.aetitle.size() > 16 || o.aetitle.find_first_of("\\\r\n\t") != std::string::npos ||
        o.aetitle.find_first_not_of(' ') == std::string::npos)
        usage("--aetitle \"" + o.aetitle + "\": expected 1 to 16 characters, not all spaces, no backslash or control");
    if (!vm.count("port")) usage("--port is required");
    o.port = vm["port"].as<unsigned>();
    if (o.port > 65535) usage("--port " + std::to_string(o.port) + ": expected 1 to 65535, or 0 for a free port");
    if (vm.count("address")) {
        o.address = vm["address"].as<std::string>();
        in_addr parsed{};
        if (::inet_pton(AF_INET, o.address.c_str(), &parsed) != 1)
            usage("--address \"" + o.address + "\": expected an IPv4 address of this host, e.g. 127.0.0.1 (default: every "
                  "interface)");
    }
    if (vm.count("callback-address")) {
        o.callback_address = vm["callback-address"].as<std::string>();
        client::SessionOptions check;
        check.callback_address = o.callback_address;
        try {
            client::callback_endpoint(check);
        } catch (const Error& e) {
            usage(std::string("--callback-address: ") + e.what());
        }
    }
    o.store = required(vm, "store");
    if (o.store.empty()) usage("--store: expected a store name");
    o.naming = vm["naming"].as<std::string>();
    if (vm.count("index")) o.index = vm["index"].as<std::string>();
    o.name_pattern = vm["name-pattern"].as<std::string>();
    check_name_pattern(o.name_pattern);
    o.max_associations = vm["max-associations"].as<unsigned>();
    if (o.max_associations < 1 || o.max_associations > 256)
        usage("--max-associations " + std::to_string(o.max_associations) + ": expected 1 to 256");
    o.max_associations_per_peer = std::max(1u, o.max_associations / 2);
    if (vm.count("max-associations-per-peer")) {
        o.max_associations_per_peer = vm["max-associations-per-peer"].as<unsigned>();
        if (o.max_associations_per_peer < 1 || o.max_associations_per_peer > o.max_associations)
            usage("--max-associations-per-peer " + std::to_string(o.max_associations_per_peer) + ": expected 1 to " +
                  std::to_string(o.max_associations) + " (--max-associations)");
    }
    o.max_pdu = vm["max-pdu"].as<unsigned>();
    if (o.max_pdu < 4096 || o.max_pdu > 131072)
        usage("--max-pdu " + std::to_string(o.max_pdu) + ": expected 4096 to 131072");
    const std::string conflict = vm["on-conflict"].as<std::string>();
    if (conflict == "refuse") o.on_conflict = OnConflict::refuse;
    else if (conflict == "replace") o.on_conflict = OnConflict::replace;
    else usage("--on-conflict " + conflict + ": expected refuse or replace");
    o.spool = vm["spool"].as<std::string>();
    o.kept_mappings = vm["kept-mappings"].as<unsigned>();
    if (o.kept_mappings > 65536)
        usage("--kept-mappings " + std::to_string(o.kept_mappings) + ": expected 0 to 65536");
    if (vm.count("log-file")) {
        o.log_file = vm["log-file"].as<std::string>();
        if (o.log_file.empty()) usage("--log-file: expected a file name (leave the option out for standard error)");
    }
    try {
        using namespace std::chrono_literals;
        o.timeout = cli::parse_duration("--timeout", vm["timeout"].as<std::string>(), 1s, 3600s);
        o.stable_after = cli::parse_duration("--stable-after", vm["stable-after"].as<std::string>(), 1ms, 86400s);
        o.rescan = cli::parse_duration("--rescan", vm["rescan"].as<std::string>(), 0ms, 86400s);
        o.kept_mapping_bytes =
            cli::parse_size("--kept-mapping-bytes", vm["kept-mapping-bytes"].as<std::string>(), 1ull << 20, 1ull << 40);
    } catch (const std::exception& e) {
        usage(e.what());
    }
    parse_security_options(vm, o);
    parse_http_options(vm, o);
    if (vm.count("destination")) {
        const auto* values = boost::any_cast<std::vector<std::string>>(&vm["destination"].value());
        if (values) o.destinations = parse_destinations(*values);
    }
    return o;
}

}  // namespace blobstreaming::dicom
