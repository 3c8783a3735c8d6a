/// blobstored: serves one Blob store (docs/CLI.md). The work is in Daemon;
/// this file parses, starts, waits for SIGTERM/SIGINT and stops, and on
/// SIGHUP opens its log file again and rereads its configuration.

#include "Daemon.h"
#include "DaemonOptions.h"
#include "Notify.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Log.h>
#include <blobstreaming/transporter/SocketOptions.h>
#include <blobstreaming/transporter/daemon/LogFile.h>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>

#include <pthread.h>

namespace {

using blobstreaming::Error;

/// Blocks the signals the main loop waits for (shutdown, and SIGHUP) in this
/// thread and, by inheritance, in every thread started later (ORB,
/// reactor), so that only sigtimedwait() sees them: SIGHUP never ends the
/// daemon.
sigset_t block_handled_signals()
{
    sigset_t set;
    ::sigemptyset(&set);
    ::sigaddset(&set, SIGTERM);
    ::sigaddset(&set, SIGINT);
    ::sigaddset(&set, SIGHUP);
    ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
    return set;
}

/// The daemon's logger: standard error, or --log-file (returned, to be
/// opened again on SIGHUP). Throws Error when the file cannot be opened.
std::shared_ptr<blobstreaming::daemon::LogFileSink> setup_logging(const blobstreaming::daemon::DaemonOptions& o)
{
    std::shared_ptr<blobstreaming::daemon::LogFileSink> file;
    spdlog::sink_ptr sink;
    if (o.log_file.empty()) {
        sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    } else {
        file = std::make_shared<blobstreaming::daemon::LogFileSink>(o.log_file);
        sink = file;
    }
    auto logger = std::make_shared<spdlog::logger>("blobstored", sink);
    if (!file && blobstreaming::daemon::stderr_is_journal())
        logger->set_formatter(blobstreaming::daemon::journal_formatter());  // journald stamps and names the lines
    else logger->set_pattern("%Y-%m-%d %H:%M:%S.%e blobstored %l: %v");
    logger->set_level(o.log_level);
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
    blobstreaming::set_library_logger(logger);  // the transporter's lines (TLS refusals) in the same log
    return file;
}

/// SIGHUP (logrotate, a closed terminal): the log file opened again, the
/// configuration read again as at start and its live settings applied.
void on_sighup(blobstreaming::daemon::Daemon& daemon, blobstreaming::daemon::LogFileSink* log_file, int argc,
               char** argv)
{
    if (log_file) {
        const std::string why = log_file->reopen();
        if (why.empty()) spdlog::info("SIGHUP: log file {} opened again", log_file->path());
        else spdlog::error("SIGHUP: {}; still writing to the file opened before", why);
    }
    const std::string& config = daemon.options().config;
    const std::string source = config.empty() ? std::string("the command line (no --config file)")
                                              : "--config \"" + config + "\"" + " (the command line wins over it)";
    try {
        const auto next = blobstreaming::daemon::parse_command_line(argc, argv);
        if (next.run) daemon.reload(*next.run, source);
    } catch (const Error& e) {
        spdlog::error("SIGHUP: configuration not reloaded, the running settings stay: {}", e.what());
    }
}

}  // namespace

int main(int argc, char** argv)
{
    const sigset_t handled_signals = block_handled_signals();
    blobstreaming::ignore_sigpipe();

    blobstreaming::daemon::ParsedCommandLine command;
    try {
        command = blobstreaming::daemon::parse_command_line(argc, argv);
    } catch (const Error& e) {
        std::cerr << "blobstored: " << e.what() << " (see blobstored --help)\n";
        return 1;
    }
    if (!command.run) {
        std::cout << command.text << std::flush;
        return 0;
    }
    std::shared_ptr<blobstreaming::daemon::LogFileSink> log_file;
    try {
        log_file = setup_logging(*command.run);
    } catch (const Error& e) {
        std::cerr << "blobstored: " << e.what() << "\n";
        return static_cast<int>(e.code());
    }

    blobstreaming::daemon::Daemon daemon(*command.run);
    std::string ready;
    try {
        ready = daemon.start();
        std::cout << ready << std::endl;             // exactly one line, flushed
        blobstreaming::daemon::notify_ready(ready);  // after the Naming registration
    } catch (const Error& e) {
        std::cerr << "blobstored: " << e.what() << "\n";
        daemon.stop();
        return static_cast<int>(e.code());
    } catch (const CORBA::Exception& e) {
        std::cerr << "blobstored: CORBA " << e._name() << " while starting store \"" << command.run->name << "\"\n";
        daemon.stop();
        return static_cast<int>(blobstreaming::Errc::transfer_failed);
    }

    // Wait for SIGTERM/SIGINT; meanwhile, keep the naming entries alive,
    // watch the data plane and reload on SIGHUP. An interrupted wait
    // (SIGSTOP/SIGCONT, a debugger) is waited on again until the next check
    // is due.
    using Clock = std::chrono::steady_clock;
    const auto check = [&daemon] {
        return std::chrono::duration_cast<Clock::duration>(daemon.options().naming_check);  // live on SIGHUP
    };
    auto next_check = Clock::now() + check();
    int signal = -1;
    while (signal < 0) {
        const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::max(next_check - Clock::now(), Clock::duration::zero()));
        const timespec wait{static_cast<time_t>(left.count() / 1000000000),
                            static_cast<long>(left.count() % 1000000000)};
        signal = ::sigtimedwait(&handled_signals, nullptr, &wait);
        if (signal == SIGHUP) {
            blobstreaming::daemon::notify_reloading();
            on_sighup(daemon, log_file.get(), argc, argv);
            blobstreaming::daemon::notify_ready(ready);
            signal = -1;
            continue;
        }
        if (signal >= 0 || Clock::now() < next_check) continue;
        next_check = Clock::now() + check();
        const std::string failure = daemon.data_plane_failure();
        if (!failure.empty()) {
            spdlog::critical("store \"{}\": the data plane is down ({}); exiting so that it can be restarted",
                             command.run->name, failure);
            daemon.stop();
            return static_cast<int>(blobstreaming::Errc::transfer_failed);
        }
        daemon.maintain();
    }
    spdlog::info("{}: shutting down store \"{}\"", signal == SIGTERM ? "SIGTERM" : "SIGINT", command.run->name);
    blobstreaming::daemon::notify_stopping("shutting down store \"" + command.run->name + "\"");
    daemon.stop();
    spdlog::info("store \"{}\" stopped", command.run->name);
    return 0;
}
