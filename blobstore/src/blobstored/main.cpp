/// blobstored: serves one Blob store (docs/CLI.md). The work is in Daemon;
/// this file parses, starts, waits for SIGTERM/SIGINT and stops.

#include "Daemon.h"
#include "DaemonOptions.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Log.h>
#include <blobstreaming/transporter/SocketOptions.h>

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

/// Blocks the shutdown signals in this thread and, by inheritance, in every
/// thread started later (ORB, reactor), so that only sigwait() sees them.
sigset_t block_shutdown_signals()
{
    sigset_t set;
    ::sigemptyset(&set);
    ::sigaddset(&set, SIGTERM);
    ::sigaddset(&set, SIGINT);
    ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
    return set;
}

void setup_logging(spdlog::level::level_enum level)
{
    auto logger = spdlog::stderr_logger_mt("blobstored");
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e blobstored %l: %v");
    logger->set_level(level);
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
    blobstreaming::set_library_logger(logger);  // the transporter's lines (TLS refusals) in the same log
}

}  // namespace

int main(int argc, char** argv)
{
    const sigset_t shutdown_signals = block_shutdown_signals();
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
    setup_logging(command.run->log_level);

    blobstreaming::daemon::Daemon daemon(*command.run);
    try {
        const std::string ready = daemon.start();
        std::cout << ready << std::endl;  // exactly one line, flushed
    } catch (const Error& e) {
        std::cerr << "blobstored: " << e.what() << "\n";
        daemon.stop();
        return static_cast<int>(e.code());
    } catch (const CORBA::Exception& e) {
        std::cerr << "blobstored: CORBA " << e._name() << " while starting store \"" << command.run->name << "\"\n";
        daemon.stop();
        return static_cast<int>(blobstreaming::Errc::transfer_failed);
    }

    // Wait for SIGTERM/SIGINT; meanwhile, keep the naming entries alive and
    // watch the data plane. An interrupted wait (SIGSTOP/SIGCONT, a debugger)
    // is waited on again until the next check is due.
    using Clock = std::chrono::steady_clock;
    const auto check = std::chrono::duration_cast<Clock::duration>(command.run->naming_check);
    auto next_check = Clock::now() + check;
    int signal = -1;
    while (signal < 0) {
        const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::max(next_check - Clock::now(), Clock::duration::zero()));
        const timespec wait{static_cast<time_t>(left.count() / 1000000000),
                            static_cast<long>(left.count() % 1000000000)};
        signal = ::sigtimedwait(&shutdown_signals, nullptr, &wait);
        if (signal >= 0 || Clock::now() < next_check) continue;
        next_check = Clock::now() + check;
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
    daemon.stop();
    spdlog::info("store \"{}\" stopped", command.run->name);
    return 0;
}
