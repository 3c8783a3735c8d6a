#include <blobstreaming/transporter/Log.h>

#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>

namespace blobstreaming {
namespace {

std::shared_ptr<spdlog::logger> make_default()
{
    // Not registered with spdlog: the application's logger names stay its own.
    auto logger = std::make_shared<spdlog::logger>("blobstreaming", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e blobstreaming %l: %v");
    logger->set_level(spdlog::level::warn);
    return logger;
}

std::shared_ptr<spdlog::logger>& current()
{
    static std::shared_ptr<spdlog::logger> logger = make_default();
    return logger;
}

}  // namespace

std::shared_ptr<spdlog::logger> library_log() noexcept { return std::atomic_load(&current()); }

void set_library_logger(std::shared_ptr<spdlog::logger> logger)
{
    std::atomic_store(&current(), logger ? std::move(logger) : make_default());
}

}  // namespace blobstreaming
