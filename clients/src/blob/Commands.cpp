#include "Commands.h"

#include "Io.h"
#include "Output.h"

#include <blobstreaming/client/Session.h>
#include <blobstreaming/common/BlobName.h>
#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/UniqueFd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace blobstreaming::cli {

namespace {

using client::Mode;
using client::Result;
using client::Session;

const std::map<std::string, std::pair<std::size_t, std::size_t>>& commands()
{
    static const std::map<std::string, std::pair<std::size_t, std::size_t>> table = {
        {"push", {1, kMaxPushFiles}},
        {"pull", {1, 2}},
        {"stat", {1, 1}},
        {"verify", {1, 1}},
        {"ls", {0, 0}},
        {"rm", {1, 1}},
        {"locate", {1, 1}},
        {"stores", {0, 0}},
        {"checksum", {1, 64}},
        {"watch", {0, 0}},
        {"copy", {1, kMaxCopyNames}},
        {"find", {0, 64}},
        {"help", {0, 1}},
    };
    return table;
}

/// The last component of `path`, trailing slashes ignored ("study/" is
/// "study").
std::string base_name(std::string path)
{
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

void print_summary(const char* verb, const char* dir, const std::string& name, const Result& r, bool resume)
{
    const double mbps = r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds / 1e6 : 0.0;
    const std::string resumed = resume && r.offset > 0 ? " (resumed at byte " + std::to_string(r.offset) + ")" : "";
    std::fprintf(stderr, "%s %s %s store \"%s\": %llu bytes in %.3f s (%.2f MB/s) %s%s%s\n", verb,
                 quote_name(name).c_str(), dir, r.store.c_str(), static_cast<unsigned long long>(r.bytes), r.seconds,
                 mbps, r.info.checksum.text().c_str(), r.local ? " (local)" : "", resumed.c_str());
}

}  // namespace

std::string cli_message(const std::string& message, Errc code, const std::string& command)
{
    // The stores and the library speak of the API; the CLI's user needs its flag.
    if (code == Errc::already_exists && (command == "push" || command == "copy") &&
        message.find("--replace") == std::string::npos)
        return message + "; `blob " + command + " --replace` overwrites it";
    return message;
}

namespace {

/// One FILE of `blob push` and the Blob name it is stored under.
struct PushInput {
    std::string file;
    std::string name;
};

/// The Blob name of `file`, found under directory `dir` (push -r): its path
/// relative to `dir`, each '/' a '_' (a Blob name has no '/').
std::string name_under(const std::filesystem::path& dir, const std::filesystem::path& file)
{
    std::string name = file.lexically_relative(dir).generic_string();
    std::replace(name.begin(), name.end(), '/', '_');
    return name;
}

/// The regular files under `dir` (push -r), sorted by path; hidden files and
/// folders (a Blob name cannot start with '.') and anything that is not a
/// regular file are skipped, and said so on stderr unless `quiet`.
std::vector<PushInput> files_under(const std::string& dir, bool quiet)
{
    namespace fs = std::filesystem;
    std::vector<PushInput> found;
    std::size_t hidden = 0, special = 0;
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, ec), end;
    if (ec) throw Error(Errc::io_error, "push -r " + dir + ": cannot read the directory: " + ec.message());
    for (; it != end; it.increment(ec)) {
        if (ec) throw Error(Errc::io_error, "push -r " + dir + ": cannot read " + it->path().string() + ": " + ec.message());
        const std::string leaf = it->path().filename().string();
        if (!leaf.empty() && leaf[0] == '.') {
            ++hidden;
            if (it->is_directory(ec)) it.disable_recursion_pending();
            continue;
        }
        if (it->is_directory(ec)) continue;
        if (!it->is_regular_file(ec)) {
            ++special;
            continue;
        }
        if (found.size() == kMaxPushFiles)
            throw Error(Errc::limit_reached, "push -r " + dir + ": more than " + std::to_string(kMaxPushFiles) +
                                                 " files; push its folders one at a time");
        found.push_back({it->path().string(), name_under(dir, it->path())});
    }
    if (ec) throw Error(Errc::io_error, "push -r " + dir + ": cannot read the directory: " + ec.message());
    if (!quiet && (hidden != 0 || special != 0))
        std::fprintf(stderr, "blob: push -r %s: skipped %zu hidden (name starting with '.') and %zu special file(s)\n",
                     dir.c_str(), hidden, special);
    std::sort(found.begin(), found.end(), [](const PushInput& a, const PushInput& b) { return a.file < b.file; });
    return found;
}

/// The FILEs of `blob push FILE...` with their Blob names (--name, else
/// each FILE's base name; with -r each directory's files, named by their
/// path below it), checked before anything is read or pushed:
/// Errc::invalid_name, Errc::invalid_argument for standard input without
/// --name, a directory without -r, or two FILEs of one Blob name.
std::vector<PushInput> push_inputs(const Invocation& call)
{
    std::vector<PushInput> inputs;
    for (const auto& file : call.args) {
        if (file == "-" && !call.name)
            throw Error(Errc::invalid_argument,
                        "push from standard input needs --name NAME (a single FILE): blob push --name NAME -");
        struct stat st {};
        if (file != "-" && ::stat(file.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            if (!call.recursive)
                throw Error(Errc::invalid_argument, "push: " + file +
                                                        " is a directory: push the files in it with -r "
                                                        "(--recursive), each named by its path below it");
            auto under = files_under(file, call.quiet);
            if (under.empty()) throw Error(Errc::invalid_argument, "push -r " + file + ": no files in the directory");
            inputs.insert(inputs.end(), std::make_move_iterator(under.begin()), std::make_move_iterator(under.end()));
            continue;
        }
        inputs.push_back({file, call.name ? *call.name : base_name(file)});
    }
    if (inputs.size() > kMaxPushFiles)
        throw Error(Errc::limit_reached, "push: " + std::to_string(inputs.size()) + " files; at most " +
                                             std::to_string(kMaxPushFiles) + " per command");
    std::map<std::string, std::string> seen;  // name -> the FILE it came from
    for (const PushInput& in : inputs) {
        validate_blob_name(in.name);
        const auto [it, fresh] = seen.emplace(in.name, in.file);
        if (!fresh)
            throw Error(Errc::invalid_argument, "push: " + it->second + " and " + in.file +
                                                    " would both be stored as " + quote_name(in.name) +
                                                    (call.recursive ? " (the files of a directory are named by "
                                                                      "their path below it, '/' as '_')"
                                                                    : " (each FILE is stored under its base name)"));
    }
    return inputs;
}

/// The notices the store sends (--notices send), taken by the command
/// once its transfer has ended.
class NoticeInbox {
public:
    client::NoticeCallback callback()
    {
        return [this](const client::TransferNotice& n) {
            std::lock_guard lock(mutex_);
            notices_.push_back(n);
            arrived_.notify_all();
        };
    }
    /// The first notice, waiting up to `bound` for it.
    std::optional<client::TransferNotice> wait(std::chrono::milliseconds bound)
    {
        std::unique_lock lock(mutex_);
        if (!arrived_.wait_for(lock, bound, [this] { return !notices_.empty(); })) return std::nullopt;
        return notices_.front();
    }

private:
    std::mutex mutex_;
    std::condition_variable arrived_;
    std::vector<client::TransferNotice> notices_;
};

/// --notices: the store's notice of the transfer that ended with `r`,
/// waiting up to --timeout (queue: polling the store every 20 ms).
/// Errc::timeout when none came. nullopt without --notices.
std::optional<client::TransferNotice> notice_of(Session& session, const Invocation& call, NoticeInbox& inbox,
                                                const std::string& what, const Result& r)
{
    if (call.notices == client::NoticeMode::none) return std::nullopt;
    std::optional<client::TransferNotice> notice;
    if (call.notices == client::NoticeMode::send) {
        notice = inbox.wait(call.timeout);
    } else {
        const auto deadline = std::chrono::steady_clock::now() + call.timeout;
        for (;;) {
            auto got = session.poll_notices(r.store);
            if (!got.empty()) {
                notice = got.front();
                break;
            }
            if (std::chrono::steady_clock::now() >= deadline) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    if (!notice)
        throw Error(Errc::timeout, what + ": the transfer succeeded, but store \"" + r.store +
                                       "\" gave no notice of it within " + std::to_string(call.timeout.count()) +
                                       " ms (--notices " + client::to_string(call.notices) + ")");
    return notice;
}

/// Prints a transfer's notice beside its summary: a line on stderr, or a
/// "notice" member of the transfer's JSON object.
void report_notice(const std::optional<client::TransferNotice>& notice, nlohmann::json* json)
{
    if (!notice) return;
    if (json) (*json)["notice"] = notice_json(*notice);
    else std::fprintf(stderr, "%s\n", notice_line(*notice).c_str());
}

client::PushOptions push_options(const Invocation& call)
{
    client::PushOptions options;
    options.store = call.store;
    options.tier = call.tier;
    options.replace = call.replace;
    options.resume = call.resume;
    options.checksum = call.checksum;
    options.streams = call.streams;
    options.notices = call.notices;
    options.max_size = call.max_size;
    options.compress = call.compress;
    return options;
}

/// `blob push FILE FILE...`: every FILE under its base name, as one series
/// (several in flight, Session::push_series); a line per FILE (stderr), or
/// {"pushes":[...]} with --json. A FILE that fails does not stop the
/// others; the exit code is the highest of the failures (0: none failed).
int push_files(Session& session, const Invocation& call, const std::vector<PushInput>& inputs)
{
    const std::size_t n = inputs.size();
    std::vector<Result> results(n);
    std::vector<client::PushSlice> slices;
    std::vector<std::size_t> file_of_slice;
    for (std::size_t i = 0; i < n; ++i) {
        try {
            slices.push_back(
                {open_push_input(inputs[i].file, "push " + quote_name(inputs[i].name), std::nullopt, call.timeout),
                 inputs[i].name});
            file_of_slice.push_back(i);
        } catch (const Error& e) {
            results[i].error = e.error_code();
            results[i].message = e.what();
        }
    }
    client::SeriesResult series;
    session.push_series(std::move(slices), push_options(call), Mode::Sync,
                        [&series](const client::SeriesResult& r) { series = r; });
    for (std::size_t k = 0; k < series.slices.size(); ++k) results[file_of_slice[k]] = series.slices[k];

    int rc = 0;
    nlohmann::json list = nlohmann::json::array();
    for (std::size_t i = 0; i < n; ++i) {
        const Result& r = results[i];
        if (!r.ok()) rc = std::max(rc, static_cast<int>(r.errc()));
        if (call.json) {
            nlohmann::json j =
                r.ok() ? transfer_json("push", inputs[i].name, r)
                       : error_json(r.errc(), cli_message(r.message, r.errc(), "push"));
            j["path"] = inputs[i].file;
            if (!r.ok()) j["name"] = inputs[i].name;
            list.push_back(j);
        } else if (!r.ok()) {
            std::fprintf(stderr, "blob: %s\n", cli_message(r.message, r.errc(), "push").c_str());
        } else if (!call.quiet) {
            print_summary("pushed", "to", inputs[i].name, r, call.resume);
        }
    }
    if (call.json) std::cout << json_line({{"pushes", list}});
    return rc;
}

int push(Session& session, const Invocation& call, NoticeInbox& inbox)
{
    const std::vector<PushInput> inputs = push_inputs(call);  // before reading a stream for them
    if (inputs.size() > 1 || call.recursive) return push_files(session, call, inputs);
    const std::string& file = inputs[0].file;
    const std::string& name = inputs[0].name;
    // Without --size a stream's length is known at its end; a push that
    // needs it up front (parts, a resume) reads the stream into memory.
    const bool spool = call.streams > 1 || call.resume;
    std::function<std::optional<client::PushSource>()> fallback;
    client::PushSource source =
        open_push_input(file, "push " + quote_name(name), call.size, call.timeout, spool, &fallback);
    ProgressBar bar(stderr, !call.quiet && !call.json, "push " + name);
    struct stat st {};
    if (call.resume && ::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        bar.set_whole(static_cast<std::uint64_t>(st.st_size));  // the store keeps the rest's start
    client::PushOptions options = push_options(call);
    options.progress = [&bar](std::uint64_t done, std::uint64_t total) { bar.update(done, total); };
    Result result;
    session.push(source, name, options, Mode::Sync, [&result](const Result& r) { result = r; });
    if (result.error == Errc::refused && source.kind() == client::PushSource::Kind::stream && fallback &&
        result.message.find("of unknown length") != std::string::npos) {
        // A store that needs the size (RADOS, an earlier release), asked
        // before anything was read: push the stream as read into memory.
        if (auto spooled = fallback()) {
            bar.clear();
            if (!call.quiet) std::fprintf(stderr, "blob: %s; reading it into memory to push it with its size\n",
                                          result.message.c_str());
            source = std::move(*spooled);
            session.push(source, name, options, Mode::Sync, [&result](const Result& r) { result = r; });
        }
    }
    bar.clear();
    result.throw_if_error();
    const auto notice = notice_of(session, call, inbox, "push " + quote_name(name), result);
    if (call.json) {
        auto j = transfer_json("push", name, result);
        report_notice(notice, &j);
        std::cout << json_line(j);
    } else {
        if (!call.quiet) print_summary("pushed", "to", name, result, call.resume);
        report_notice(notice, nullptr);
    }
    return 0;
}

int pull(Session& session, const Invocation& call, NoticeInbox& inbox)
{
    const std::string& name = call.args[0];
    validate_blob_name(name);  // before using it as a file name
    const std::string file = call.args.size() > 1 ? call.args[1] : name;
    ProgressBar bar(stderr, !call.quiet && !call.json, "pull " + name);
    struct stat st {};
    if (call.resume && ::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        bar.set_base(static_cast<std::uint64_t>(st.st_size));  // what FILE holds already
    client::PullOptions options;
    options.store = call.store;
    options.offset = call.offset;
    options.length = call.length;
    options.resume = call.resume;
    options.verify = call.verify;
    options.streams = call.streams;
    options.notices = call.notices;
    options.compress = call.compress;
    options.progress = [&bar](std::uint64_t done, std::uint64_t total) { bar.update(done, total); };
    const PullOutput output(file, "pull " + quote_name(name), call.resume, call.timeout);
    Result result;
    session.pull(name, output.sink(), options, Mode::Sync, [&result](const Result& r) { result = r; });
    bar.clear();
    result.throw_if_error();
    const auto notice = notice_of(session, call, inbox, "pull " + quote_name(name), result);
    if (call.json) {
        auto j = transfer_json("pull", name, result);
        report_notice(notice, &j);
        (is_standard_output(file) ? std::cerr : std::cout) << json_line(j);
    } else {
        if (!call.quiet) print_summary("pulled", "from", name, result, call.resume);
        report_notice(notice, nullptr);
    }
    return 0;
}

int stat(Session& session, const Invocation& call)
{
    Result r;
    session.stat(call.args[0], call.store, Mode::Sync, [&r](const Result& x) { r = x; });
    r.throw_if_error();
    if (call.json) {
        std::cout << json_line(blob_json(r.store, r.info));
        return 0;
    }
    std::printf("store:     %s\nname:      %s\nsize:      %llu\nchecksum:  %s\ncommitted: %s\n", r.store.c_str(),
                r.info.name.c_str(), static_cast<unsigned long long>(r.info.size), r.info.checksum.text().c_str(),
                rfc3339(r.info.committed).c_str());
    return 0;
}

int verify(Session& session, const Invocation& call)
{
    Result r;
    session.verify(call.args[0], call.store, Mode::Sync, [&r](const Result& x) { r = x; });
    r.throw_if_error();
    if (call.json) {
        auto j = blob_json(r.store, r.info);
        j["verified"] = true;
        std::cout << json_line(j);
    } else if (!call.quiet) {
        std::printf("verified %s in store \"%s\": %llu bytes, %s\n", quote_name(r.info.name).c_str(), r.store.c_str(),
                    static_cast<unsigned long long>(r.info.size), r.info.checksum.text().c_str());
    }
    return 0;
}

/// The stores that did not answer a command across every store: a line
/// each on stderr, and the exit code of a partial result (0 when all answered).
int report_unreachable(const std::vector<client::UnreachableStore>& unreachable)
{
    for (const auto& u : unreachable)
        std::fprintf(stderr, "blob: partial result: store \"%s\" did not answer (%s)\n", u.name.c_str(),
                     u.error.c_str());
    return unreachable.empty() ? 0 : static_cast<int>(Errc::partial);
}

nlohmann::json unreachable_json(const std::vector<client::UnreachableStore>& unreachable)
{
    nlohmann::json list = nlohmann::json::array();
    for (const auto& u : unreachable) list.push_back({{"store", u.name}, {"error", u.error}});
    return list;
}

int ls(Session& session, const Invocation& call)
{
    Result r;
    session.list(call.store, Mode::Sync, [&r](const Result& x) { r = x; });
    r.throw_if_error();
    if (call.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& b : r.blobs) list.push_back(blob_json(b.store, b.info));
        std::cout << json_line({{"blobs", list}, {"unreachable", unreachable_json(r.unreachable)}});
    } else {
        for (const auto& b : r.blobs)
            std::printf("%-12s %14llu  %s  %s  %s\n", b.store.c_str(), static_cast<unsigned long long>(b.info.size),
                        rfc3339(b.info.committed).c_str(), b.info.checksum.text().c_str(), b.info.name.c_str());
    }
    return report_unreachable(r.unreachable);
}

int rm(Session& session, const Invocation& call)
{
    Result r;
    session.remove(call.args[0], call.store, Mode::Sync, [&r](const Result& x) { r = x; });
    r.throw_if_error();
    if (call.json) std::cout << json_line({{"store", r.store}, {"name", call.args[0]}, {"removed", true}});
    else if (!call.quiet)
        std::fprintf(stderr, "removed %s from store \"%s\"\n", quote_name(call.args[0]).c_str(), r.store.c_str());
    return 0;
}

int locate(Session& session, const Invocation& call)
{
    Result r;
    session.locate(call.args[0], Mode::Sync, [&r](const Result& x) { r = x; });
    r.throw_if_error();
    if (r.locations.empty()) {
        std::string silent;
        for (const auto& u : r.unreachable) silent += (silent.empty() ? "" : ", ") + u.name;
        throw Error(Errc::no_such_blob,
                    "locate " + quote_name(call.args[0]) + ": no registered store " +
                        (silent.empty() ? "holds it" : "that answered holds it (did not answer: " + silent + ")"));
    }
    if (call.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& l : r.locations)
            list.push_back({{"store", l.store}, {"tier", client::tier_name(l.tier)}, {"holds", l.holds}});
        std::cout << json_line(
            {{"name", call.args[0]}, {"locations", list}, {"unreachable", unreachable_json(r.unreachable)}});
    } else {
        for (const auto& l : r.locations)
            std::printf("%-16s %s%s\n", l.store.c_str(), client::tier_name(l.tier),
                        l.holds ? "" : " (read-through: fetches it on the first pull)");
    }
    return report_unreachable(r.unreachable);
}

/// `blob copy NAME... --to A[,B...]`: Session::copy; a line per Blob and
/// destination as each ends (stderr; with --json one object per line on
/// stdout), then a line per destination. Exit code: the highest failure.
int copy(Session& session, const Invocation& call)
{
    client::CopyOptions options;
    options.to = call.to;
    options.from = call.from;
    options.overwrite = call.replace;
    options.chain = call.chain;
    options.window = call.window;
    const std::size_t m = options.to.size();
    std::vector<std::size_t> done(m, 0);
    const std::size_t n = call.args.size();
    const client::SeriesResult series = [&] {
        client::SeriesResult out;
        session.copy(
            call.args, options, Mode::Sync, [&out](const client::SeriesResult& r) { out = r; },
            [&](std::size_t slot, const Result& r) {
                const std::size_t i = slot / m, k = slot % m;
                ++done[k];
                const std::string& name = call.args[i];
                if (call.json) {
                    nlohmann::json j = r.ok() ? transfer_json("copy", name, r)
                                               : error_json(r.errc(), cli_message(r.message, r.errc(), "copy"));
                    j["name"] = name;
                    j["store"] = options.to[k];
                    std::cout << json_line(j);
                } else if (!r.ok()) {
                    std::fprintf(stderr, "blob: %s\n", cli_message(r.message, r.errc(), "copy").c_str());
                } else if (!call.quiet) {
                    const double mbps = r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds / 1e6 : 0.0;
                    std::fprintf(
                        stderr, "copied %s to store \"%s\" (%zu of %zu): %llu bytes in %.3f s (%.2f MB/s) %s\n",
                        quote_name(name).c_str(), options.to[k].c_str(), done[k], n,
                        static_cast<unsigned long long>(r.bytes), r.seconds, mbps, r.info.checksum.text().c_str());
                }
            });
        return out;
    }();
    int rc = 0;
    for (std::size_t k = 0; k < m; ++k) {
        std::size_t ok = 0, failed = 0;
        std::uint64_t bytes = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const Result& r = series.slices[i * m + k];
            if (r.ok()) {
                ++ok;
                bytes += r.bytes;
            } else {
                ++failed;
                rc = std::max(rc, static_cast<int>(r.errc()));
            }
        }
        if (call.json) {
            std::cout << json_line({{"command", "copy"},
                                    {"store", options.to[k]},
                                    {"copied", ok},
                                    {"failed", failed},
                                    {"bytes", bytes},
                                    {"seconds", series.seconds}});
        } else if (!call.quiet || failed > 0) {
            std::fprintf(stderr, "store \"%s\": %zu of %zu Blob(s) copied, %llu bytes, %zu failed (%.3f s in all)\n",
                         options.to[k].c_str(), ok, n, static_cast<unsigned long long>(bytes), failed, series.seconds);
        }
    }
    return rc;
}

int stores(Session& session, const Invocation& call)
{
    Result r;
    if (call.prune) session.prune_stores(Mode::Sync, [&r](const Result& x) { r = x; });
    else session.stores(Mode::Sync, [&r](const Result& x) { r = x; });
    r.throw_if_error();
    const auto& all = r.stores;
    for (const auto& p : r.pruned)
        if (!call.json)
            std::printf("pruned %s: its daemon at %s is gone (%s); entry removed\n", p.name.c_str(), p.control.c_str(),
                        p.reason.c_str());
    if (call.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& s : all) {
            nlohmann::json j = {{"name", s.name},
                                {"kind", s.kind},
                                {"tier", client::tier_name(s.tier)},
                                {"capacity", s.capacity},
                                {"used", s.used},
                                {"reserved", s.reserved},
                                {"blobs", s.blobs},
                                {"data", s.data_endpoint},
                                {"host", s.host},
                                {"local_files", s.local_files}};
            if (!s.reachable) j = {{"name", s.name}, {"error", s.error}};
            list.push_back(j);
        }
        nlohmann::json out{{"stores", list}};
        if (call.prune) {
            nlohmann::json pruned = nlohmann::json::array();
            for (const auto& p : r.pruned)
                pruned.push_back({{"name", p.name}, {"control", p.control}, {"reason", p.reason}});
            out["pruned"] = pruned;
        }
        std::cout << json_line(out);
        return 0;
    }
    for (const auto& s : all) {
        if (!s.reachable) {
            std::printf("%-16s unreachable: %s\n", s.name.c_str(), s.error.c_str());
            continue;
        }
        // Capacity 0: bounded only by the store's medium (a file store without --capacity).
        const std::string capacity = s.capacity == 0 ? "unlimited" : std::to_string(s.capacity);
        std::printf("%-16s %-6s %-11s capacity %s used %llu reserved %llu blobs %llu data %s\n", s.name.c_str(),
                    s.kind.c_str(), client::tier_name(s.tier), capacity.c_str(),
                    static_cast<unsigned long long>(s.used), static_cast<unsigned long long>(s.reserved),
                    static_cast<unsigned long long>(s.blobs), s.data_endpoint.c_str());
    }
    return 0;
}

/// The checksum of a local file ("-": standard input), read through a 1 MiB
/// buffer: what a stored Blob's checksum is compared with, without a store.
std::pair<std::uint64_t, Checksum> checksum_of_file(const std::string& path, ChecksumAlgorithm algorithm)
{
    const bool stdin_input = path == "-";
    UniqueFd owned;
    if (!stdin_input) {
        owned.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
        if (!owned) throw Error(Errc::io_error, "checksum: cannot open " + path + ": " + std::strerror(errno));
    }
    const int fd = stdin_input ? STDIN_FILENO : owned.get();
    ChecksumState state(algorithm);
    std::error_code ec;
    const std::uint64_t size = state.update_from(fd, ec);
    if (ec)
        throw Error(Errc::io_error, "checksum: cannot read " + (stdin_input ? std::string("standard input") : path) +
                                        " after " + std::to_string(size) + " bytes: " + ec.message());
    return {size, state.finish()};
}

/// Needs no store: every FILE's checksum, as `sha256sum` prints it.
int checksum(const Invocation& call)
{
    const ChecksumAlgorithm algorithm = call.checksum.value_or(kDefaultChecksum);
    nlohmann::json list = nlohmann::json::array();
    for (const auto& path : call.args) {
        const auto [size, sum] = checksum_of_file(path, algorithm);
        if (call.json) list.push_back({{"path", path}, {"size", size}, {"checksum", sum.text()}});
        else std::printf("%s  %s\n", sum.text().c_str(), path.c_str());
    }
    if (call.json) std::cout << json_line({{"files", list}});
    return 0;
}

}  // namespace

bool known_command(const std::string& command) { return commands().count(command) != 0; }

std::pair<std::size_t, std::size_t> arity(const std::string& command) { return commands().at(command); }

client::SessionOptions session_options(const Invocation& call)
{
    client::SessionOptions options;
    options.naming_url = call.naming;
    options.callback_address = call.callback_address;
    options.default_store = call.command == "push" ? call.store : std::string();
    options.send_buffer = call.socket_buffer;
    options.receive_buffer = call.socket_buffer;
    options.timeout = call.timeout;
    options.local_fast_path = call.local;
    options.max_connections_per_endpoint =
        std::max<unsigned>(options.max_connections_per_endpoint, static_cast<unsigned>(call.streams));
    options.tls_cert = call.tls_cert;
    options.tls_key = call.tls_key;
    options.tls_ca = call.tls_ca;
    return options;
}

int run(const Invocation& call)
{
    if (call.command == "checksum") return checksum(call);
    if (call.command == "watch") return watch(call);
    if (call.command == "find") return find(call);
    if (call.command == "pull" && (!call.study.empty() || !call.series.empty())) return pull_instances(call);
    NoticeInbox inbox;  // outlives the Session, which calls it
    client::SessionOptions options = session_options(call);
    if (call.notices == client::NoticeMode::send) options.on_notice = inbox.callback();
    Session session(options);
    if (call.command == "push") return push(session, call, inbox);
    if (call.command == "pull") return pull(session, call, inbox);
    if (call.command == "stat") return stat(session, call);
    if (call.command == "verify") return verify(session, call);
    if (call.command == "ls") return ls(session, call);
    if (call.command == "rm") return rm(session, call);
    if (call.command == "locate") return locate(session, call);
    if (call.command == "copy") return copy(session, call);
    return stores(session, call);
}

}  // namespace blobstreaming::cli
