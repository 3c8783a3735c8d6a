/// blob-dicomd: the DICOM gateway (docs/DICOM.md). Parses its options, opens
/// the Session and the index, prints one ready line, serves associations on
/// a listener thread (StorageScp), opens its --log-file again on SIGHUP and
/// ends at once on SIGTERM/SIGINT: a
/// C-STORE in progress is then not answered, and the modality sends it again
/// (a resend of the same data set succeeds without a second copy).

#include "DicomSecurity.h"
#include "EventIndexer.h"
#include "GatewayOptions.h"
#include "InstanceStore.h"
#include "ListenPort.h"
#include "Spool.h"
#include "StableTracker.h"
#include "StorageScp.h"
#include "StudyEvents.h"
#include "web/DicomWeb.h"
#include "web/HttpServer.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Log.h>
#include <blobstreaming/transporter/SocketOptions.h>
#include <blobstreaming/transporter/daemon/LogFile.h>

#include <dcmtk/oflog/oflog.h>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <pthread.h>
#include <unistd.h>

namespace {

using namespace blobstreaming;
using namespace blobstreaming::dicom;

std::string g_listen_failure;
std::atomic<bool> g_listener_ended{false};

/// The gateway's logger: standard error, or --log-file (returned, to be
/// opened again on SIGHUP). Throws Error when the file cannot be opened.
std::shared_ptr<daemon::LogFileSink> set_up_logging(const GatewayOptions& o)
{
    std::shared_ptr<daemon::LogFileSink> file;
    spdlog::sink_ptr sink;
    if (o.log_file.empty()) {
        sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    } else {
        file = std::make_shared<daemon::LogFileSink>(o.log_file);
        sink = file;
    }
    const spdlog::level::level_enum level = o.log_level;
    auto logger = std::make_shared<spdlog::logger>("blob-dicomd", sink);
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e blob-dicomd %l: %v");
    logger->set_level(level);
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
    set_library_logger(logger);
    // DCMTK's own lines (association errors, rejections) on standard error,
    // also with --log-file (the journal under systemd).
    OFLog::configure(level <= spdlog::level::trace   ? OFLogger::DEBUG_LOG_LEVEL
                     : level <= spdlog::level::debug ? OFLogger::INFO_LOG_LEVEL
                     : level <= spdlog::level::warn  ? OFLogger::WARN_LOG_LEVEL
                                                     : OFLogger::ERROR_LOG_LEVEL);
    return file;
}

/// The store must be registered: a typo is found at start, not at the first study.
void check_store(client::Session& session, const GatewayOptions& o)
{
    for (const client::StoreStatus& s : session.stores()) {
        if (s.name == o.store) return;
    }
    throw Error(Errc::unknown_store,
                "store \"" + o.store + "\" is not registered in the naming service at " + o.naming);
}

}  // namespace

int main(int argc, char** argv)
{
    sigset_t handled;
    ::sigemptyset(&handled);
    for (int s : {SIGTERM, SIGINT, SIGUSR1, SIGHUP}) ::sigaddset(&handled, s);
    ::pthread_sigmask(SIG_BLOCK, &handled, nullptr);  // every later thread inherits it: only sigwait sees them
    ignore_sigpipe();
    // DCMTK leaves Nagle on unless TCP_NODELAY=1 is in the environment: each
    // C-STORE response would then wait ~40 ms for the peer's delayed ACK.
    ::setenv("TCP_NODELAY", "1", 0);

    std::string text;
    std::optional<GatewayOptions> parsed;
    try {
        parsed = parse_gateway_options(argc, argv, text);
    } catch (const Error& e) {
        std::cerr << "blob-dicomd: " << e.what() << " (see blob-dicomd --help)\n";
        return 1;
    }
    if (!parsed) {
        std::cout << text << std::flush;
        return 0;
    }
    GatewayOptions& o = *parsed;
    std::shared_ptr<daemon::LogFileSink> log_file;
    try {
        log_file = set_up_logging(o);
    } catch (const Error& e) {
        std::cerr << "blob-dicomd: " << e.what() << "\n";
        return static_cast<int>(e.code());
    }

    std::unique_ptr<client::Session> session;
    std::unique_ptr<StudyIndex> index;
    std::unique_ptr<EventIndexer> indexer;
    std::unique_ptr<StudyEvents> events;
    std::unique_ptr<StableTracker> tracker;
    std::unique_ptr<InstanceStore> store;
    std::optional<PortReservation> port;
    std::unique_ptr<DicomSecurity> security;
    try {
        // Who may use the DICOM port, and its TLS: host names resolved and
        // certificate files loaded before the ready line.
        security = std::make_unique<DicomSecurity>(o);
        // Before the ORB opens its endpoints: none of them may take the port.
        port.emplace(o.port, o.address);
        o.port = port->port();
        if (::access(o.spool.c_str(), W_OK) != 0)
            throw Error(Errc::io_error, "--spool " + o.spool + ": not a writable directory: " + std::strerror(errno));
        // Before the first association: this gateway's files are none of them.
        remove_stale_spool(o.spool);
        client::SessionOptions so;
        so.naming_url = o.naming;
        so.callback_address = o.callback_address;
        so.default_store = o.store;
        so.timeout = o.timeout;
        so.kept_mappings = o.kept_mappings;
        so.kept_mapping_bytes = o.kept_mapping_bytes;
        so.tls_cert = o.store_tls.cert;  // TLS-only stores (--store-tls-*)
        so.tls_key = o.store_tls.key;
        so.tls_ca = o.store_tls.ca;
        session = std::make_unique<client::Session>(so);
        check_store(*session, o);
        if (!o.index.empty()) {
            index = std::make_unique<StudyIndex>(o.index, true);
            // study-stable: every instance indexed (C-STORE here or a
            // commit the EventIndexer reads) puts its study's deadline back.
            events = std::make_unique<StudyEvents>(so, o.aetitle);
            StudyEvents* publisher = events.get();
            tracker = std::make_unique<StableTracker>(*index, o.stable_after,
                                                      [publisher](const StableStudy& s) { publisher->publish(s); });
            StableTracker* stability = tracker.get();
            index->on_put([stability](const std::string& study, std::int64_t ns) { stability->instance(study, ns); });
        }
        store = std::make_unique<InstanceStore>(o, *session, index.get());
        if (index) {
            // Every DICOM Blob committed to any store, whoever pushed it; not
            // those this gateway is storing and indexes itself.
            InstanceStore* gateway = store.get();
            indexer = std::make_unique<EventIndexer>(
                o, so, *session, *index, [gateway](const std::string& name) { return gateway->storing(name); });
        }
    } catch (const Error& e) {
        std::cerr << "blob-dicomd: " << e.what() << "\n";
        return static_cast<int>(e.code());
    }
    if (security->open()) spdlog::warn("{}", security->describe());
    else spdlog::info("{}", security->describe());
    std::thread listener([&o, &store, &index, &session, &security] {
        g_listen_failure = serve_associations(o, *store, index.get(), *session, *security);
        g_listener_ended = true;
        ::kill(::getpid(), SIGUSR1);
    });
    listener.detach();  // the accept loop does not stop: the process ends around it
    // Ready means answering: the line below comes once the listener listens.
    if (!port->await_listener(g_listener_ended, std::chrono::seconds(30))) {
        spdlog::critical("{}", g_listener_ended
                                   ? g_listen_failure
                                   : "the gateway did not listen on port " + std::to_string(o.port) + " in 30 s");
        std::_Exit(static_cast<int>(Errc::unreachable));
    }
    // DICOMweb (--http-address): once the DIMSE side answers.
    std::unique_ptr<web::DicomWeb> dicom_web;
    std::unique_ptr<web::HttpServer> http;
    if (!o.http_host.empty()) {
        try {
            dicom_web = std::make_unique<web::DicomWeb>(o, *store, *index, *session);
            web::DicomWeb* service = dicom_web.get();
            http = std::make_unique<web::HttpServer>(
                o, [service](const web::Request& request, web::Reply& reply) { service->handle(request, reply); });
        } catch (const Error& e) {
            spdlog::critical("{}", e.what());
            std::_Exit(static_cast<int>(e.code()));
        }
    }
    std::cout << "blob-dicomd ready aetitle=" << o.aetitle << " port=" << o.port << " store=" << o.store
              << " index=" << (o.index.empty() ? "-" : redacted_index_url(o.index));
    if (indexer) {
        std::string watched;
        for (const std::string& s : indexer->stores()) watched += (watched.empty() ? "" : ",") + s;
        std::cout << " watching=" << watched;
    }
    if (http) std::cout << " http=" << http->scheme() << "://" << http->address() << "/dicom-web";
    std::cout << std::endl;

    int signal = 0;
    for (;;) {
        ::sigwait(&handled, &signal);
        if (signal != SIGHUP) break;
        if (!log_file) {
            spdlog::info("SIGHUP: no --log-file to open again; serving on");
            continue;
        }
        const std::string why = log_file->reopen();
        if (why.empty()) spdlog::info("SIGHUP: log file {} opened again", log_file->path());
        else spdlog::error("SIGHUP: {}; still writing to the file opened before", why);
    }
    if (signal == SIGUSR1) {
        spdlog::critical("{}", g_listen_failure);
        std::_Exit(static_cast<int>(Errc::unreachable));
    }
    spdlog::info("{}: stopping", ::strsignal(signal));
    // The index entries of what was acknowledged (the rescan at the next
    // start makes any left over).
    if (store && !store->drain_index(std::chrono::seconds(5)))
        spdlog::warn("index entries still queued after 5 s: the rescan at the next start makes them");
    if (events) events->withdraw();  // watchers find no stale registration
    spdlog::default_logger()->flush();
    // Associations in progress answer their current C-STORE from the store's
    // acknowledgement or not at all: a modality resends what was not answered.
    std::_Exit(0);
}
