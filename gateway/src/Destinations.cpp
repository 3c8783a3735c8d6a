#include "Destinations.h"

#include <blobstreaming/common/Error.h>

#include <map>

namespace blobstreaming::dicom {

namespace {

[[noreturn]] void refuse(const std::string& value, const std::string& why)
{
    throw Error(Errc::invalid_argument, "--destination \"" + value + "\": " + why);
}

bool host_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

}  // namespace

std::string trimmed_aetitle(const std::string& aetitle)
{
    const auto first = aetitle.find_first_not_of(' ');
    if (first == std::string::npos) return {};
    return aetitle.substr(first, aetitle.find_last_not_of(' ') - first + 1);
}

Destination parse_destination(const std::string& value)
{
    const auto equals = value.find('=');
    if (equals == std::string::npos) refuse(value, "expected AET=HOST:PORT (e.g. VIEWER=10.0.0.7:104)");
    const std::string ae = value.substr(0, equals);
    const std::string address = value.substr(equals + 1);
    for (char c : ae) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u > 0x7E || c == '\\')
            refuse(value, "AE title \"" + ae +
                              "\": expected 1 to 16 characters of the default repertoire (printable ASCII), no "
                              "backslash or control character");
    }
    Destination d;
    d.aetitle = trimmed_aetitle(ae);
    if (d.aetitle.empty() || ae.size() > 16)
        refuse(value, "AE title \"" + ae + "\": expected 1 to 16 characters, not only spaces");
    const auto colon = address.rfind(':');
    if (colon == std::string::npos) refuse(value, "expected AET=HOST:PORT: no port after the host");
    d.host = address.substr(0, colon);
    const std::string port = address.substr(colon + 1);
    if (d.host.empty() || d.host.size() > 253 || d.host.front() == '-' || d.host.front() == '.')
        refuse(value, "host \"" + d.host + "\": expected a host name or an IPv4 address");
    for (char c : d.host)
        if (!host_name_char(c))
            refuse(value,
                   "host \"" + d.host + "\": expected a host name or an IPv4 address (letters, digits, '.' and '-')");
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(port) < 1 || std::stoul(port) > 65535)
        refuse(value, "port \"" + port + "\": expected 1 to 65535");
    d.port = static_cast<unsigned>(std::stoul(port));
    return d;
}

std::vector<Destination> parse_destinations(const std::vector<std::string>& values)
{
    std::vector<Destination> out;
    std::map<std::string, std::string> seen;  // AE title -> the value that named it
    for (const std::string& value : values) {
        Destination d = parse_destination(value);
        if (const auto it = seen.find(d.aetitle); it != seen.end())
            refuse(value, "AE title \"" + d.aetitle + "\" is given twice (also \"" + it->second +
                              "\"): one address per move destination");
        seen.emplace(d.aetitle, value);
        out.push_back(std::move(d));
    }
    return out;
}

const Destination* find_destination(const std::vector<Destination>& table, const std::string& aetitle)
{
    const std::string ae = trimmed_aetitle(aetitle);
    for (const Destination& d : table)
        if (d.aetitle == ae) return &d;
    return nullptr;
}

}  // namespace blobstreaming::dicom
