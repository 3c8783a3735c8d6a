#pragma once
/// A oneway call to a client's callback object (a TransferObserver, an
/// EventSubscriber, a StudyEventSubscriber) from a NoticeDispatcher thread,
/// its failure as text.

#include <omniORB4/CORBA.h>

#include <exception>
#include <string>

namespace blobstreaming::daemon {

/// Runs `call` (the oneway call; it still connects and writes, bounded by
/// the reference's call timeout of `timeout_ms`). Returns "" when it went
/// out, otherwise why not; `item` names what had no room ("notice", "event").
template <class Call>
std::string oneway_call(Call&& call, CORBA::ULong timeout_ms, const char* item) noexcept
{
    try {
        call();
        return {};
    } catch (const CORBA::TIMEOUT&) {
        return std::string("CORBA TIMEOUT: no connection or no room for the ") + item + " within " +
               std::to_string(timeout_ms) + " ms";
    } catch (const CORBA::Exception& e) {
        return std::string("CORBA ") + e._name();
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown failure";
    }
}

}  // namespace blobstreaming::daemon
