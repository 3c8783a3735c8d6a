#include "CallerAddress.h"

#include <blobstreaming/transporter/corba/Security.h>

#include <omniORB4/CORBA.h>
#include <omniORB4/omniInterceptors.h>

#include <atomic>

namespace blobstreaming::corba {
namespace {

thread_local std::string current_host;
std::atomic<bool> installed{false};

CORBA::Boolean on_receive_request(omni::omniInterceptors::serverReceiveRequest_T::info_T& info)
{
    const char* peer = info.peeraddress();
    current_host = peer ? host_of_peer(peer) : std::string();
    return true;
}

CORBA::Boolean on_send_reply(omni::omniInterceptors::serverSendReply_T::info_T&)
{
    current_host.clear();
    return true;
}

CORBA::Boolean on_send_exception(omni::omniInterceptors::serverSendException_T::info_T&)
{
    current_host.clear();
    return true;
}

}  // namespace

std::string host_of_peer(const std::string& peer)
{
    std::string rest = peer;
    if (rest.rfind("giop:", 0) == 0) {
        const auto colon = rest.find(':', 5);
        const std::string transport = rest.substr(5, colon == std::string::npos ? std::string::npos : colon - 5);
        if (transport == "unix") return "local";
        rest = colon == std::string::npos ? std::string() : rest.substr(colon + 1);
    }
    if (!rest.empty() && rest.front() == '[') {
        const auto close = rest.find(']');
        return close == std::string::npos ? rest : rest.substr(1, close - 1);
    }
    const auto colon = rest.rfind(':');
    return colon == std::string::npos ? rest : rest.substr(0, colon);
}

void install_caller_address()
{
    if (installed.exchange(true)) return;
    omni::omniInterceptors* interceptors = omniORB::getInterceptors();
    interceptors->serverReceiveRequest.add(&on_receive_request);
    interceptors->serverSendReply.add(&on_send_reply);
    interceptors->serverSendException.add(&on_send_exception);
}

std::string caller_host() { return current_host; }

std::string caller_identity()
{
    std::string subject = caller_subject();
    return subject.empty() ? caller_host() : subject;
}

}  // namespace blobstreaming::corba
