#include "GatewayOptions.h"

#include <blobstreaming/cli/CommandLine.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/LibraryVersions.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

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
        ("aetitle,a", po::value<std::string>()->value_name("AE"), "this gateway's application entity title (1-16 characters); associations to any called AE title are accepted")
        ("port,p", po::value<unsigned>()->value_name("PORT"), "TCP port to listen on, all interfaces (1-65535; 0: a free port, named in the ready line)")
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
        ("log-file", po::value<std::string>()->value_name("FILE"), "append the log to FILE instead of standard error; opened again on SIGHUP (log rotation)")
        ("config", po::value<std::string>()->value_name("FILE"), "read `option = value` lines (long option names) from FILE; the command line wins")
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
    if (vm.count("log-file")) {
        o.log_file = vm["log-file"].as<std::string>();
        if (o.log_file.empty()) usage("--log-file: expected a file name (leave the option out for standard error)");
    }
    try {
        using namespace std::chrono_literals;
        o.timeout = cli::parse_duration("--timeout", vm["timeout"].as<std::string>(), 1s, 3600s);
        o.stable_after = cli::parse_duration("--stable-after", vm["stable-after"].as<std::string>(), 1ms, 86400s);
        o.rescan = cli::parse_duration("--rescan", vm["rescan"].as<std::string>(), 0ms, 86400s);
    } catch (const std::exception& e) {
        usage(e.what());
    }
    if (vm.count("destination")) {
        const auto* values = boost::any_cast<std::vector<std::string>>(&vm["destination"].value());
        if (values) o.destinations = parse_destinations(*values);
    }
    return o;
}

}  // namespace blobstreaming::dicom
