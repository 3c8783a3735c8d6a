// blob: push, pull and query Blobs in the Blob Streaming stores (docs/CLI.md).
#include "Commands.h"
#include "Io.h"
#include "Output.h"

#include "../../dicom/Attributes.h"

#include <blobstreaming/cli/CommandLine.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/TlsFiles.h>
#include <blobstreaming/transporter/LibraryVersions.h>
#include <blobstreaming/transporter/Log.h>

#include <boost/program_options.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

namespace po = boost::program_options;
using namespace blobstreaming;
using namespace std::chrono_literals;
using cli::UsageError;

namespace {

constexpr const char* kExitCodes =
    "Exit codes: 0 success, 1 usage, 10-19 the input, 20-29 the Blob's state (20 no such blob), 30-39 "
    "resources, 40-49 local storage, 50-57 transport (52 unreachable), 58 partial: ls or locate across every "
    "store got no answer from some (named on stderr, `unreachable` in --json; the output is the others'); "
    "docs/CLI.md has the table.\n";

int fail(Errc code, const std::string& message, bool json, bool data_on_stdout)
{
    std::cerr << "blob: " << message << std::endl;
    if (json) (data_on_stdout ? std::cerr : std::cout) << cli::json_line(cli::error_json(code, message));
    return static_cast<int>(code);
}

/// A usage error: exit 1, the message on stderr and, when --json is on the
/// command line (which may not have parsed), as a JSON error on stdout.
int usage_error(const std::string& message, int argc, char** argv)
{
    std::cerr << "blob: " << message << std::endl;
    const bool json = std::any_of(argv + 1, argv + argc, [](const char* a) {
        return std::strcmp(a, "--json") == 0 || std::strcmp(a, "-j") == 0;
    });
    if (json) std::cout << cli::json_line({{"error", {{"code", 1}, {"name", "usage"}, {"message", message}}}});
    return 1;
}

/// Whether `fd` is a pipe or socket whose reader has gone (an earlier write
/// failed with EPIPE, and errno no longer says so).
bool reader_gone(int fd)
{
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return false;
    pollfd p{fd, POLLOUT, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP)) != 0;
}

/// Whatever went to standard output must have arrived (a full disk):
/// otherwise the command failed, exit 40. A reader that went away (EPIPE:
/// `blob ls | head -3`) ends the process quietly, as ls(1) ends, except
/// when standard output carries a pulled Blob's bytes (`data`): a consumer
/// that got part of a Blob is told it failed. `rc`: the command's exit code
/// so far.
int check_stdout(int rc, bool data)
{
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;  // std::cout writes through stdout
    const int err = errno;
    if (flushed && !std::ferror(stdout) && std::cout.good()) return rc;
    if ((err == EPIPE || reader_gone(STDOUT_FILENO)) && !data) cli::end_on_closed_output();
    if (rc != 0) return rc;  // the command's own failure was reported already
    std::cerr << "blob: cannot write standard output: " << (err != 0 ? std::strerror(err) : "write error") << std::endl;
    return static_cast<int>(Errc::io_error);
}

std::uint64_t size_option(const po::variables_map& vm, const char* option)
{
    return cli::parse_size(std::string("--") + option, vm[option].as<std::string>());
}

po::options_description describe()
{
    const char* env = std::getenv("BLOBSTREAMING_NAMING");
    po::options_description o("Options");
    // clang-format off
    o.add_options()
        ("help,h", "show the commands and the options every command takes, and exit (blob help COMMAND: a "
                   "command's own)")
        ("help-all", "show every option of every command, and exit")
        ("version", "show the version and exit")
        ("naming,n", po::value<std::string>()->default_value(env ? env : "corbaname::127.0.0.1:2809"),
         "Naming Service URL (env BLOBSTREAMING_NAMING)")
        ("store,s", po::value<std::vector<std::string>>()->composing(), "store name (push: default where the locator places it, docs/CLI.md; pull/stat/rm: default nearest holder; watch: repeatable)")
        ("tier", po::value<std::string>()->value_name("TIER"), "push without --store: a store of TIER (memory, workstation, cluster, central) with room for the Blob, nearest first (default: the locator's default store, then any tier)")
        ("to", po::value<std::string>()->value_name("STORE[,STORE...]"), "copy: the destination stores")
        ("from", po::value<std::string>()->value_name("STORE"), "copy: the source store (default: for each Blob the nearest store holding it that is not a destination)")
        ("no-chain", "copy: every destination fetches from the source (default: each from the one before it, so the source sends each Blob once)")
        ("window", po::value<std::string>()->value_name("N"), "copy: copies in flight per destination (1 to 64, default 4)")
        ("events", po::value<std::string>()->value_name("KINDS"), "watch: the kinds to print, comma-separated: committed, removed, study-stable (default: committed,removed)")
        ("gateway", po::value<std::vector<std::string>>()->composing()->value_name("AE"), "watch --events study-stable: a gateway's AE title (repeatable; default: every registered gateway)")
        ("json,j", "one JSON object on stdout")
        ("socket-buffer,b", po::value<std::string>()->default_value("0"), "SO_SNDBUF/SO_RCVBUF, bytes or K, M, G (0: autotuning; at most 1G)")
        ("timeout,t", po::value<std::string>()->default_value("30"), "inactivity timeout, seconds unless a unit is given "
         "(500ms, 2m; 0.001 to 86400 s): the data connection, a FIFO's writer or reader, a stream's next byte")
        ("no-local", "never read a same-host store's file directly")
        ("callback-address", po::value<std::string>()->value_name("HOST[:PORT]"), "watch, --notices send: where this process listens for the stores' callbacks (default: 127.0.0.1 when the naming service is on a loopback address, else every interface, for stores on other hosts)")
        ("tls-cert", po::value<std::string>()->value_name("FILE"), "TLS on both planes: this client's certificate (PEM); needs --tls-key and --tls-ca")
        ("tls-key", po::value<std::string>()->value_name("FILE"), "the certificate's private key (PEM, unencrypted)")
        ("tls-ca", po::value<std::string>()->value_name("FILE"), "CA certificates (PEM) that stores' certificates must chain to")
        ("name", po::value<std::string>()->value_name("NAME"), "push: the Blob's name, for a single FILE (default: each FILE's base name)")
        ("replace", "push, copy: overwrite an existing Blob (copy: at the destinations)")
        ("recursive,r", "push: each DIR's files, in every folder below it, each named by its path below DIR ('/' as "
                        "'_'; hidden files skipped)")
        ("checksum", po::value<std::string>()->value_name("ALGORITHM"),
         "push: the Blob's checksum, crc32c (fast) or sha256 (cryptographic), default: the store's (crc32c unless "
         "blobstored --checksum says otherwise); checksum: the algorithm (default crc32c)")
        ("size", po::value<std::string>()->value_name("BYTES"),
         "push: stream exactly BYTES from FILE ('-', a FIFO, a device) instead of reading it to its end first; "
         "fewer fail the push (exit 23); a regular FILE must have this size (K, M, G, T: x1024); without it such "
         "a FILE is pushed as its bytes come, its length known at its end")
        ("max-size", po::value<std::string>()->value_name("BYTES"),
         "push of a stream without --size: the most the Blob may hold (default: what the store can hold); more "
         "fail the push, out of space (exit 25)")
        ("offset,o", po::value<std::string>()->default_value("0"), "pull: first byte of the range")
        ("length,l", po::value<std::string>()->default_value("0"), "pull: bytes of the range (0: to the end)")
        ("resume", "push/pull: continue an interrupted transfer where it stopped (push: the store's kept "
                   "reservation; pull: the bytes FILE already holds)")
        ("streams", po::value<std::string>()->value_name("N"),
         "push/pull: N data connections, each a contiguous range of at least 1 MiB (1 to 64, or auto; default "
         "auto: one to a data endpoint on loopback, where more are slower, else 4 from 64 MiB; -v says which; "
         "fewer for a shorter Blob or range; one with --resume, a FIFO, a device or standard input/output, and "
         "for a SHA-256 checksum)")
        ("compress", po::value<std::string>()->value_name("MODE"),
         "push/pull: compression of the data connection (of the wire only: the store keeps the original bytes "
         "and checksum): auto (the default: off towards a loopback address, else while compressing outruns the "
         "link), zstd (always), none; one stream only, not for a push of unknown length")
        ("notices", po::value<std::string>()->value_name("MODE"),
         "push/pull of one Blob: after it succeeded, print the store's notice of the transfer (send: the store "
         "calls this client back; queue: the store keeps it and this client polls for it), waiting up to "
         "--timeout; one stream, never the same-host fast path")
        ("verify", "pull: check the whole Blob's checksum against the store's (the default for whole-Blob pulls)")
        ("no-verify", "pull: skip the check of the whole Blob's checksum")
        ("index", po::value<std::string>()->value_name("URL"), "find, pull --study/--series: the study index, sqlite:PATH or postgresql://... (env BLOBSTREAMING_INDEX)")
        ("level", po::value<std::string>()->value_name("LEVEL"), "find: patient, study (default), series or instance")
        ("study", po::value<std::string>()->value_name("UID"), "pull --study UID DIR: every instance of the study (from --index) to DIR/SOPInstanceUID.dcm")
        ("series", po::value<std::string>()->value_name("UID"), "pull --series UID DIR: every instance of the series, likewise")
        ("prune", "stores: remove the Naming Service entries of stores whose daemon is gone (connection refused), "
                  "only those; each one removed is reported");
    // clang-format on
    cli::add_logging_options(o, spdlog::level::warn);
    return o;
}

/// What `blob COMMAND --help` shows: the command's synopsis, what it does,
/// its own options, then the options every command takes.
struct CommandHelp {
    const char* command;
    const char* summary;  ///< one line of `blob --help`
    const char* synopsis;
    const char* what;
    std::vector<const char*> options;  ///< its own (the others are everyone's)
};

const std::vector<CommandHelp>& command_help()
{
    static const std::vector<CommandHelp> table = {
        {"push", "store files (-r: folders) as Blobs, verified and durable",
         "push FILE... | push -r DIR... | push --name NAME FILE",
         "Store each FILE ('-': standard input; a FIFO, a device) under its base name, several in flight, or one "
         "FILE under --name. The store acknowledges once the Blob is committed durably and its checksum verified.",
         {"name", "recursive", "replace", "checksum", "size", "max-size", "resume", "streams", "compress", "notices", "tier", "callback-address"}},
        {"pull", "retrieve a Blob, whole or a range, to a file, a FIFO or stdout, or a DICOM study or series",
         "pull NAME [FILE] | pull --study UID DIR | pull --series UID DIR",
         "Retrieve NAME to FILE (default ./NAME; '-': standard output; a FIFO, a device), whole or a range. A "
         "regular FILE is replaced only once every byte is in and checked. --study/--series: every instance the "
         "study index lists, in parallel, verified, to DIR/SOPInstanceUID.dcm.",
         {"offset", "length", "resume", "streams", "compress", "notices", "verify", "no-verify", "study", "series", "index", "callback-address"}},
        {"stat", "size, checksum and commit time of a Blob", "stat NAME", "Size, checksum and commit time of NAME.", {}},
        {"verify", "have the store reread a Blob and check its checksum", "verify NAME", "Have the store reread NAME and check its checksum.", {}},
        {"ls", "the Blobs of a store, or of every store", "ls", "The Blobs of --store, or of every registered store.", {}},
        {"rm", "remove a Blob", "rm NAME", "Remove NAME.", {}},
        {"locate", "the stores holding a Blob, nearest first", "locate NAME", "The stores holding NAME, nearest tier first.", {}},
        {"stores", "the registered stores: tier, usage, data endpoint", "stores", "The registered stores with tier, usage and data endpoint.", {"prune"}},
        {"checksum", "the checksum of local files, to compare with a Blob's", "checksum FILE...", "The checksum of local files ('-': standard input); no store.", {"checksum"}},
        {"copy", "have stores fetch Blobs from another store (no bytes through this client)",
         "copy NAME... --to STORE[,STORE...] [--from STORE]",
         "Have each destination store fetch each NAME from the source store (a third-party transfer: the bytes go "
         "from store to store, never through this client), verified against the source's checksum and committed "
         "atomically. Several destinations form a chain: each fetches from the one before it while the next Blobs "
         "flow behind, so the source sends each Blob once. --replace overwrites a Blob of the same name.",
         {"to", "from", "no-chain", "window", "replace"}},
        {"watch", "print the stores' and gateways' events as they happen",
         "watch",
         "Print the stores' events (committed, removed) as they happen, until interrupted; --store S (repeatable; "
         "default: every registered store). --events study-stable: also (or only) the DICOM gateways' studies that "
         "had no new instance for their --stable-after; --gateway AE (repeatable; default: every gateway registered "
         "in the naming service).",
         {"events", "gateway", "callback-address"}},
        {"find", "search the DICOM study index",
         "find [--level patient|study|series|instance] KEY=VALUE...",
         "The patients, studies, series or instances of the study index (--index) matching every KEY=VALUE with "
         "DICOM's rules: * and ? wildcards, date and time ranges A-B, A-, -B, UID lists UID\\UID. No store.",
         {"index", "level"}},
    };
    return table;
}

/// `blob --help` and `blob help`: the commands, one line each, and the
/// options every command takes.
std::string overview_text(const po::options_description& visible)
{
    std::set<std::string> owned;
    for (const CommandHelp& h : command_help()) owned.insert(h.options.begin(), h.options.end());
    po::options_description common("Options of every command");
    for (const auto& option : visible.options())
        if (!owned.count(option->long_name())) common.add(option);
    std::ostringstream text;
    text << "Usage: blob [options] COMMAND ...\n\nCommands:\n";
    for (const CommandHelp& h : command_help()) {
        std::string name = h.command;
        name.resize(std::max<std::size_t>(name.size() + 2, 10), ' ');
        text << "  " << name << h.summary << "\n";
    }
    text << "\n`blob help COMMAND` (or `blob COMMAND --help`) shows a command's own options; `blob --help-all` every "
            "option of every command.\n\n"
         << common << "\n"
         << kExitCodes;
    return text.str();
}

/// `blob COMMAND --help`, or nullopt for another command.
std::optional<std::string> command_help_text(const std::string& command, const po::options_description& visible)
{
    const auto& table = command_help();
    const auto it =
        std::find_if(table.begin(), table.end(), [&](const CommandHelp& h) { return command == h.command; });
    if (it == table.end()) return std::nullopt;
    std::set<std::string> own(it->options.begin(), it->options.end()), anyones;
    for (const CommandHelp& h : table) anyones.insert(h.options.begin(), h.options.end());
    po::options_description mine(std::string("Options of ") + it->command);
    po::options_description common("Options of every command");
    for (const auto& option : visible.options()) {
        const std::string& name = option->long_name();
        if (own.count(name)) mine.add(option);
        else if (!anyones.count(name)) common.add(option);
    }
    std::ostringstream text;
    text << "Usage: blob [options] " << it->synopsis << "\n" << it->what << "\n\n";
    if (!own.empty()) text << mine << "\n";
    text << common << "\n" << kExitCodes;
    return text.str();
}

/// find's and pull --study/--series's options, checked against the command.
void parse_dicom_options(const po::variables_map& vm, cli::Invocation& call)
{
    const char* env = std::getenv("BLOBSTREAMING_INDEX");
    call.index = vm.count("index") ? vm["index"].as<std::string>() : env ? env : "";
    if (vm.count("level")) {
        if (call.command != "find") throw UsageError("--level applies to find only, not " + call.command);
        call.level = vm["level"].as<std::string>();
        try {
            dicom::parse_level(call.level);
        } catch (const Error& e) {
            throw UsageError(e.what());
        }
    }
    for (const char* key : {"study", "series"}) {
        if (!vm.count(key)) continue;
        if (call.command != "pull")
            throw UsageError(std::string("--") + key + " applies to pull only, not " + call.command);
        (std::string(key) == "study" ? call.study : call.series) = vm[key].as<std::string>();
    }
    if (!call.study.empty() && !call.series.empty()) throw UsageError("pull: --study and --series exclude each other");
    const bool instances = !call.study.empty() || !call.series.empty();
    if (instances && call.args.size() != 1)
        throw UsageError(std::string("pull --") + (call.study.empty() ? "series" : "study") +
                         " UID DIR: expected one argument, the directory");
    if (instances && (call.offset != 0 || call.length != 0 || call.resume))
        throw UsageError("pull --study/--series pulls whole instances: no --offset, --length or --resume");
    if ((call.command == "find" || instances) && call.index.empty())
        throw UsageError(call.command + ": no study index given (--index sqlite:PATH or BLOBSTREAMING_INDEX)");
    if (vm.count("index") && call.command != "find" && !instances)
        throw UsageError("--index applies to find and pull --study/--series only, not " + call.command);
}

cli::Invocation parse(int argc, char** argv, const po::options_description& visible, po::variables_map& vm)
{
    po::options_description all;
    all.add(visible);
    all.add_options()("command", po::value<std::string>())("args", po::value<std::vector<std::string>>());
    po::positional_options_description positional;
    positional.add("command", 1).add("args", -1);
    po::store(cli::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
    if (vm.count("help") || vm.count("version") || vm.count("help-all")) {
        cli::Invocation call;
        if (vm.count("command")) call.command = vm["command"].as<std::string>();
        return call;
    }

    cli::Invocation call;
    if (!vm.count("command")) throw UsageError("no command given (try --help)");
    call.command = vm["command"].as<std::string>();
    if (!cli::known_command(call.command))
        throw UsageError("unknown command " + call.command +
                         " (push, pull, stat, verify, ls, rm, locate, stores, checksum, watch, copy, find; "
                         "blob help lists them)");
    if (vm.count("args")) call.args = vm["args"].as<std::vector<std::string>>();
    if (call.command == "help") {
        if (call.args.size() > 1)
            throw UsageError("help: expected at most one command, got " + std::to_string(call.args.size()));
        return call;
    }
    const auto [low, high] = cli::arity(call.command);
    if (call.args.size() < low || call.args.size() > high)
        throw UsageError(call.command + ": expected " + std::to_string(low) +
                         (low == high ? "" : " to " + std::to_string(high)) + " argument(s), got " +
                         std::to_string(call.args.size()));
    call.naming = vm["naming"].as<std::string>();
    if (vm.count("callback-address")) {
        call.callback_address = vm["callback-address"].as<std::string>();
        client::SessionOptions check;
        check.callback_address = call.callback_address;
        try {
            client::callback_endpoint(check);
        } catch (const Error& e) {
            throw UsageError(std::string("--callback-address: ") + e.what());
        }
    }
    if (vm.count("store")) call.stores = vm["store"].as<std::vector<std::string>>();
    if (call.stores.size() > 1 && call.command != "watch")
        throw UsageError("--store given " + std::to_string(call.stores.size()) + " times: only watch takes several");
    for (const std::string& s : call.stores)
        if (s.empty() && call.command == "watch") throw UsageError("--store: expected a store name, got \"\"");
    if (!call.stores.empty()) call.store = call.stores.back();
    if (vm.count("events")) call.events = cli::watch_events(call.command, vm["events"].as<std::string>());
    if (vm.count("gateway")) {
        call.gateways = vm["gateway"].as<std::vector<std::string>>();
        if (std::find(call.events.begin(), call.events.end(), "study-stable") == call.events.end())
            throw UsageError("--gateway applies to watch --events study-stable only");
        for (const std::string& g : call.gateways)
            if (g.empty()) throw UsageError("--gateway: expected a gateway's AE title, got \"\"");
    }
    if (vm.count("tier")) {
        if (call.command != "push") throw UsageError("--tier applies to push only, not " + call.command);
        if (!call.store.empty())
            throw UsageError("--tier and --store: give one (--store NAME pushes there; --tier TIER lets the "
                             "locator choose a store of TIER)");
        const std::string tier = vm["tier"].as<std::string>();
        const client::Tier tiers[] = {client::Tier::memory, client::Tier::workstation, client::Tier::cluster,
                                      client::Tier::central};
        for (client::Tier t : tiers)
            if (tier == client::tier_name(t)) call.tier = t;
        if (!call.tier)
            throw UsageError("--tier: \"" + tier + "\" is not a tier (memory, workstation, cluster, central)");
    }
    call.json = vm.count("json") != 0;
    call.socket_buffer =
        static_cast<int>(cli::parse_size("--socket-buffer", vm["socket-buffer"].as<std::string>(), 0, 1ULL << 30));
    call.timeout = cli::parse_duration("--timeout", vm["timeout"].as<std::string>(), 1ms, 86400s);
    call.local = vm.count("no-local") == 0;
    const char* tls_names[] = {"tls-cert", "tls-key", "tls-ca"};
    std::string* tls_values[] = {&call.tls_cert, &call.tls_key, &call.tls_ca};
    for (int i = 0; i < 3; ++i) {
        if (!vm.count(tls_names[i])) continue;
        *tls_values[i] = vm[tls_names[i]].as<std::string>();
        if (tls_values[i]->empty()) throw UsageError(std::string("--") + tls_names[i] + ": expected a file name");
    }
    try {
        TlsFiles{call.tls_cert, call.tls_key, call.tls_ca}.check("--tls-");
    } catch (const Error& e) {
        throw UsageError(e.what());
    }
    call.quiet = cli::quiet(vm);
    call.replace = vm.count("replace") != 0;
    call.recursive = vm.count("recursive") != 0;
    if (call.recursive) {
        // -r meant --replace before it meant --recursive: say which is which.
        if (call.command != "push")
            throw UsageError("-r (--recursive) applies to push only, not " + call.command +
                             (call.command == "copy" ? " (to overwrite at the destinations, say --replace)" : ""));
        const bool directory = std::any_of(call.args.begin(), call.args.end(), [](const std::string& a) {
            struct stat st {};
            return ::stat(a.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
        });
        if (!directory)
            throw UsageError("push -r (--recursive) pushes directories, and no FILE given is one (to overwrite an "
                             "existing Blob, say --replace)");
        if (vm.count("name")) throw UsageError("--name names one Blob: not with -r (--recursive)");
        if (vm.count("size")) throw UsageError("--size applies to a single FILE: not with -r (--recursive)");
    }
    call.offset = size_option(vm, "offset");
    call.length = size_option(vm, "length");
    call.resume = vm.count("resume") != 0;
    if (vm.count("size")) {
        if (call.command != "push") throw UsageError("--size applies to push only, not " + call.command);
        if (call.args.size() > 1)
            throw UsageError("--size applies to a single FILE, not to the " + std::to_string(call.args.size()) +
                             " given");
        call.size = size_option(vm, "size");
    }
    if (vm.count("max-size")) {
        if (call.command != "push") throw UsageError("--max-size applies to push only, not " + call.command);
        if (vm.count("size"))
            throw UsageError("--max-size applies to a stream of unknown length: not with --size, which gives it");
        call.max_size = size_option(vm, "max-size");
        if (call.max_size == 0) throw UsageError("--max-size 0: expected at least 1 byte");
    }
    if (vm.count("name")) {
        if (call.command != "push") throw UsageError("--name applies to push only, not " + call.command);
        if (call.args.size() > 1)
            throw UsageError("--name names one Blob: give a single FILE (without --name each of the " +
                             std::to_string(call.args.size()) + " FILEs is stored under its base name)");
        call.name = vm["name"].as<std::string>();
    }
    if (vm.count("checksum")) {
        if (call.command != "push" && call.command != "checksum")
            throw UsageError("--checksum applies to push and checksum only, not " + call.command +
                             " (a Blob keeps the checksum it was pushed with)");
        call.checksum = cli::parse_checksum_algorithm("--checksum", vm["checksum"].as<std::string>());
    }
    call.verify = vm.count("no-verify") == 0;
    if (vm.count("verify") && vm.count("no-verify")) throw UsageError("--verify and --no-verify contradict each other");
    if ((vm.count("verify") || vm.count("no-verify")) && call.command != "pull")
        throw UsageError(std::string("--") + (vm.count("verify") ? "verify" : "no-verify") +
                         " applies to pull only, not " + call.command + " (a push is always verified by the store)");
    if (vm.count("verify") && (call.offset != 0 || call.length != 0))
        throw UsageError("--verify checks the whole Blob's checksum: a range (--offset, --length) has no recorded "
                         "checksum to check; use `blob verify NAME` to have the store check the stored Blob");
    const bool copying = call.command == "copy";
    for (const char* option : {"to", "from", "no-chain", "window"})
        if (vm.count(option) && !copying)
            throw UsageError(std::string("--") + option + " applies to copy only, not " + call.command);
    if (copying) {
        if (!call.stores.empty()) throw UsageError("copy: give the stores with --from and --to, not --store");
        if (!vm.count("to")) throw UsageError("copy: no destination given (use --to STORE[,STORE...])");
        const std::string to = vm["to"].as<std::string>();
        std::size_t start = 0;
        for (;;) {
            const auto comma = to.find(',', start);
            const std::string one = to.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            if (one.empty()) throw UsageError("--to: an empty store name in \"" + to + "\" (STORE[,STORE...])");
            if (std::find(call.to.begin(), call.to.end(), one) != call.to.end())
                throw UsageError("--to: store \"" + one + "\" is given twice");
            call.to.push_back(one);
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
        if (vm.count("from")) {
            call.from = vm["from"].as<std::string>();
            if (call.from.empty()) throw UsageError("--from: expected a store name, got \"\"");
            if (std::find(call.to.begin(), call.to.end(), call.from) != call.to.end())
                throw UsageError("--from: store \"" + call.from + "\" is also a destination (--to)");
        }
        call.chain = vm.count("no-chain") == 0;
        if (vm.count("window"))
            call.window = static_cast<std::size_t>(cli::parse_count("--window", vm["window"].as<std::string>(), 1, 64));
    }
    if (vm.count("streams")) {
        if (call.command != "pull" && call.command != "push")
            throw UsageError("--streams applies to push and pull only, not " + call.command);
        const std::string streams = vm["streams"].as<std::string>();
        try {
            call.streams = streams == "auto" ? client::kAutoStreams
                                             : cli::parse_count("--streams", streams, 1, client::kMaxStreams);
        } catch (const UsageError& e) {
            throw UsageError(std::string(e.what()) + "; or auto");
        }
    }
    if (vm.count("compress")) {
        if (call.command != "pull" && call.command != "push")
            throw UsageError("--compress applies to push and pull only, not " + call.command);
        const std::string text = vm["compress"].as<std::string>();
        if (text == "auto") call.compress = client::Compression::automatic;
        else if (text == "zstd") call.compress = client::Compression::zstd;
        else if (text == "none") call.compress = client::Compression::none;
        else throw UsageError("--compress " + text + ": expected auto, zstd or none");
    }
    parse_dicom_options(vm, call);
    if (vm.count("notices")) {
        const std::string text = vm["notices"].as<std::string>();
        if (call.command != "pull" && call.command != "push")
            throw UsageError("--notices applies to push and pull only, not " + call.command);
        const auto mode = client::notice_mode_of(text);
        if (!mode) throw UsageError("--notices " + text + ": expected none, send or queue");
        call.notices = *mode;
        if (call.notices != client::NoticeMode::none &&
            ((call.args.size() > 1 && call.command == "push") || !call.study.empty() || !call.series.empty()))
            throw UsageError("--notices applies to the transfer of one Blob (a single FILE, no --study/--series)");
    }
    if (vm.count("streams") && (!call.study.empty() || !call.series.empty()))
        throw UsageError("pull --study/--series pulls its instances in parallel already: no --streams");
    call.prune = vm.count("prune") != 0;
    if (call.prune && call.command != "stores") throw UsageError("--prune applies to stores only, not " + call.command);
    if (call.resume && call.command != "push" && call.command != "pull")
        throw UsageError("--resume applies to push and pull only, not " + call.command);
    if (call.resume && (call.offset != 0 || call.length != 0))
        throw UsageError("--resume continues a whole-Blob pull: it cannot be combined with --offset or --length");
    return call;
}

void set_up_logging(const po::variables_map& vm)
{
    // The library's lines (one per transfer at -v) go to the same stderr logger.
    auto logger = spdlog::stderr_color_mt("blob");
    logger->set_level(cli::log_level(vm, spdlog::level::warn));
    spdlog::set_default_logger(logger);
    set_library_logger(logger);
}

}  // namespace

int main(int argc, char** argv)
{
    const po::options_description visible = describe();
    po::variables_map vm;
    cli::Invocation call;
    try {
        call = parse(argc, argv, visible, vm);
        if (vm.count("help-all")) {
            std::cout << "Usage: blob [options] COMMAND ...\n\n" << visible << "\n" << kExitCodes << std::flush;
            return 0;
        }
        // `blob help [COMMAND]` as `git help`; `blob COMMAND --help` the same.
        std::optional<std::string> topic;
        if (call.command == "help" && !call.args.empty()) topic = call.args[0];
        else if (vm.count("help") && vm.count("command") && vm["command"].as<std::string>() != "help")
            topic = vm["command"].as<std::string>();
        if (topic) {
            const auto text = command_help_text(*topic, visible);
            if (!text) throw UsageError("unknown command " + *topic + " (blob help lists them)");
            std::cout << *text << std::flush;
            return 0;
        }
        if (call.command == "help" || vm.count("help")) {
            std::cout << overview_text(visible) << std::flush;
            return 0;
        }
        if (const auto text = cli::help_or_version(vm, visible, "blob", transporter_library_versions(), kExitCodes)) {
            std::cout << *text << std::flush;
            return 0;
        }
        set_up_logging(vm);
    } catch (const po::error& e) {
        return usage_error(std::string(e.what()) + " (try --help)", argc, argv);
    } catch (const UsageError& e) {
        return usage_error(e.what(), argc, argv);
    }
    const bool data_on_stdout = call.command == "pull" && call.args.size() > 1 && cli::is_standard_output(call.args[1]);
    // A file size limit (RLIMIT_FSIZE) makes a write fail with EFBIG, reported
    // like any other write error, instead of killing the process.
    std::signal(SIGXFSZ, SIG_IGN);
    // Output leaves in one write at the end (lines end in '\n', not
    // std::endl), so that check_stdout() sees the reason of a failure.
    if (::isatty(STDOUT_FILENO) == 0) std::setvbuf(stdout, nullptr, _IOFBF, 1 << 20);
    int rc = 0;
    try {
        rc = cli::run(call);
    } catch (const Error& e) {
        rc = fail(e.code(), cli::cli_message(e.what(), e.code(), call.command), call.json, data_on_stdout);
    } catch (const std::exception& e) {
        rc = fail(Errc::io_error, e.what(), call.json, data_on_stdout);
    }
    return check_stdout(rc, data_on_stdout);
}
