#include "AccessList.h"

#include <blobstreaming/common/Error.h>

#include <algorithm>

namespace blobstreaming::server {

const char* permission_name(Permission p) noexcept
{
    switch (p) {
    case Permission::read: return "read";
    case Permission::write: return "write";
    case Permission::remove: return "delete";
    }
    return "unknown";
}

void AccessList::allow(Permission p, const std::string& subject, const std::string& option)
{
    const bool wildcard = subject == "*";
    const auto eq = subject.find('=');
    if (!wildcard && (eq == std::string::npos || eq == 0 || eq + 1 == subject.size()))
        throw Error(Errc::invalid_argument, option + ": \"" + subject +
                                                "\" is not a certificate subject (RFC 2253, e.g. CN=workstation1 or "
                                                "CN=ws1,O=Radiology) nor * (every verified client)");
    if (subject.find_first_of("\r\n") != std::string::npos || subject.size() > 1024)
        throw Error(Errc::invalid_argument, option + ": a subject is one line of at most 1024 characters");
    auto& list = allowed_[static_cast<std::size_t>(p)];
    if (std::find(list.begin(), list.end(), subject) == list.end()) list.push_back(subject);
}

bool AccessList::empty() const noexcept
{
    return std::all_of(allowed_.begin(), allowed_.end(), [](const auto& l) { return l.empty(); });
}

bool AccessList::permits(const std::string& subject, Permission p) const
{
    if (!enforced_) return true;
    if (subject.empty()) return false;
    const auto& list = allowed_[static_cast<std::size_t>(p)];
    return std::any_of(list.begin(), list.end(), [&](const std::string& s) { return s == "*" || s == subject; });
}

void AccessList::require(const std::string& subject, Permission p) const
{
    if (permits(subject, p)) return;
    if (subject.empty())
        throw Error(Errc::refused, std::string("permission denied: a client without a verified certificate may not ") +
                                       permission_name(p));
    throw Error(Errc::refused, "permission denied: client \"" + subject + "\" may not " + permission_name(p));
}

std::string AccessList::describe() const
{
    std::string out;
    for (Permission p : {Permission::read, Permission::write, Permission::remove}) {
        const auto& list = allowed_[static_cast<std::size_t>(p)];
        std::string names;
        for (const auto& s : list) names += (names.empty() ? "" : ", ") + s;
        out += (out.empty() ? "" : "; ") + std::string(permission_name(p)) + ": " + (names.empty() ? "none" : names);
    }
    return out;
}

}  // namespace blobstreaming::server
