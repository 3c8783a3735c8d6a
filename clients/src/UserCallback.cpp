// The one place where exceptions from application callbacks become Errors.
#include "UserCallback.h"

#include <blobstreaming/transporter/Log.h>

#include <exception>

namespace blobstreaming::client {

void rethrow_from_callback(const char* role, const std::string& what)
{
    try {
        throw;
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        throw Error(Errc::io_error, what + ": the " + role + " threw: " + e.what());
    } catch (...) {
        throw Error(Errc::io_error, what + ": the " + role + " threw an exception that is not a std::exception");
    }
}

void call_logged(const char* role, const std::function<void()>& callback) noexcept
{
    try {
        callback();
    } catch (const std::exception& e) {
        library_log()->error("{} threw: {}", role, e.what());
    } catch (...) {
        library_log()->error("{} threw", role);
    }
}

}  // namespace blobstreaming::client
