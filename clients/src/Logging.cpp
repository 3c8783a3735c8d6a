// The public face of the library logger (transporter/Log.h).
#include <blobstreaming/client/Logging.h>

#include <blobstreaming/transporter/Log.h>

namespace blobstreaming::client {

void set_logger(std::shared_ptr<spdlog::logger> logger) { set_library_logger(std::move(logger)); }

std::shared_ptr<spdlog::logger> logger() noexcept { return library_log(); }

}  // namespace blobstreaming::client
