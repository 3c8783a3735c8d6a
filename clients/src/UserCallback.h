#pragma once
/// Calls into the application from inside a transfer: producers, consumers
/// and progress callbacks run on the reactor thread, where an exception that
/// escaped would end the process (std::terminate) or leave the transfer
/// without its completion. Each such call goes through call_user(), which
/// turns whatever the callback throws into the failure of that transfer.

#include <blobstreaming/common/Error.h>

#include <functional>
#include <string>
#include <utility>

namespace blobstreaming::client {

/// Throws the exception being handled as an Error: a blobstreaming::Error
/// unchanged (a callback's way to fail its transfer with a code and message
/// of its own); anything else as Errc::io_error "<what>: the <role> threw:
/// <its what()>" (or "... threw an exception that is not a std::exception").
/// Call only from a catch block.
[[noreturn]] void rethrow_from_callback(const char* role, const std::string& what);

/// Runs `callback()`, a callback whose exceptions can no longer fail
/// anything (a completion: its operation has ended); logs what it throws as
/// "<role> threw: <what()>" and drops it.
void call_logged(const char* role, const std::function<void()>& callback) noexcept;

/// Runs `callback(args...)`; what it throws becomes an Error as
/// rethrow_from_callback() says. `role` names the callback in messages
/// ("producer", "consumer", "progress callback"); `what` is the transfer's
/// message prefix (`push "N"`, `pull "N": store "S"`).
template <class Callback, class... Args>
decltype(auto) call_user(const char* role, const std::string& what, const Callback& callback, Args&&... args)
{
    try {
        return callback(std::forward<Args>(args)...);
    } catch (...) {
        rethrow_from_callback(role, what);
    }
}

}  // namespace blobstreaming::client
