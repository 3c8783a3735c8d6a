#pragma once
// http:// and https:// URLs as the SDC module uses them (XAddrs, NotifyTo,
// EndTo, hosted service addresses). Internal.

#include "blobstreaming/sdc/SdcError.h"

#include <string>

namespace blobstreaming::sdc {

struct Url {
    bool tls = false;
    std::string host;
    std::string port;
    std::string path;

    std::string netloc() const { return host + ":" + port; }
};

/// Throws SdcError(invalid_argument) naming the URL and what is wrong.
inline Url parse_url(const std::string& url)
{
    Url u;
    std::string rest;
    if (url.compare(0, 7, "http://") == 0) {
        rest = url.substr(7);
    } else if (url.compare(0, 8, "https://") == 0) {
        u.tls = true;
        rest = url.substr(8);
    } else {
        throw SdcError(Errc::invalid_argument, "URL \"" + url + "\": only http:// and https:// are supported");
    }
    const auto host_end = rest.find('/');
    const std::string netloc = rest.substr(0, host_end);
    const auto colon = netloc.rfind(':');
    u.host = netloc.substr(0, colon);
    if (!u.host.empty() && u.host.front() == '[' && u.host.back() == ']') u.host = u.host.substr(1, u.host.size() - 2);
    u.port = colon == std::string::npos ? (u.tls ? "443" : "80") : netloc.substr(colon + 1);
    u.path = host_end == std::string::npos ? "/" : rest.substr(host_end);
    if (u.host.empty()) throw SdcError(Errc::invalid_argument, "URL \"" + url + "\": no host");
    if (u.port.empty() || u.port.find_first_not_of("0123456789") != std::string::npos || u.port.size() > 5 ||
        std::stoul(u.port) > 65535)
        throw SdcError(Errc::invalid_argument, "URL \"" + url + "\": the port must be 0..65535");
    return u;
}

}  // namespace blobstreaming::sdc
