#include "DicomSecurity.h"

#include "GatewayOptions.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/transporter/Tls.h>

#include <algorithm>
#include <iterator>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace blobstreaming::dicom {

namespace {

[[noreturn]] void usage(const std::string& message) { throw Error(Errc::invalid_argument, message); }

std::string trimmed(const std::string& s)
{
    const auto first = s.find_first_not_of(' ');
    if (first == std::string::npos) return {};
    return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

/// An AE title as --aetitle accepts it: 1-16 characters, not all spaces,
/// no backslash or control character; "" when it is one, else what is wrong.
std::string ae_problem(const std::string& ae)
{
    if (ae.empty() || ae.size() > 16) return "expected 1 to 16 characters";
    if (trimmed(ae).empty()) return "all spaces";
    for (char c : ae)
        if (c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
            return "no backslash or control character allowed";
    return {};
}

constexpr const char* kRightsAllowed =
    "a comma list of store, query, retrieve, move (any destination) and move:AE+AE (those destinations)";

}  // namespace

Rights Rights::all()
{
    Rights r;
    r.store = r.query = r.retrieve = r.move = true;
    return r;
}

bool Rights::may_move_to(const std::string& destination) const
{
    return move && (move_destinations.empty() || move_destinations.count(trimmed(destination)) > 0);
}

Rights Rights::operator&(const Rights& other) const
{
    Rights r;
    r.store = store && other.store;
    r.query = query && other.query;
    r.retrieve = retrieve && other.retrieve;
    r.move = move && other.move;
    if (r.move) {
        if (move_destinations.empty()) {
            r.move_destinations = other.move_destinations;
        } else if (other.move_destinations.empty()) {
            r.move_destinations = move_destinations;
        } else {
            std::set_intersection(move_destinations.begin(), move_destinations.end(), other.move_destinations.begin(),
                                  other.move_destinations.end(),
                                  std::inserter(r.move_destinations, r.move_destinations.end()));
            r.move = !r.move_destinations.empty();
        }
    }
    return r;
}

Rights Rights::operator|(const Rights& other) const
{
    Rights r;
    r.store = store || other.store;
    r.query = query || other.query;
    r.retrieve = retrieve || other.retrieve;
    r.move = move || other.move;
    // Any destination when either allows any; else both lists.
    if ((move && move_destinations.empty()) || (other.move && other.move_destinations.empty())) return r;
    r.move_destinations = move_destinations;
    r.move_destinations.insert(other.move_destinations.begin(), other.move_destinations.end());
    return r;
}

std::string Rights::text() const
{
    std::string out;
    auto add = [&out](const std::string& s) { out += (out.empty() ? "" : ",") + s; };
    if (store) add("store");
    if (query) add("query");
    if (retrieve) add("retrieve");
    if (move && move_destinations.empty()) add("move");
    if (move && !move_destinations.empty()) {
        std::string list;
        for (const std::string& d : move_destinations) list += (list.empty() ? "" : "+") + d;
        add("move:" + list);
    }
    return out.empty() ? "none" : out;
}

Rights parse_rights(const std::string& option, const std::string& value)
{
    Rights r;
    std::size_t begin = 0;
    for (;;) {
        const std::size_t comma = value.find(',', begin);
        const std::string item = value.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
        if (item == "store") {
            r.store = true;
        } else if (item == "query") {
            r.query = true;
        } else if (item == "retrieve") {
            r.retrieve = true;
        } else if (item == "move") {
            r.move = true;
            r.move_destinations.clear();
        } else if (item.rfind("move:", 0) == 0) {
            std::set<std::string> destinations;
            std::size_t from = 5;
            for (;;) {
                const std::size_t plus = item.find('+', from);
                const std::string ae = item.substr(from, plus == std::string::npos ? std::string::npos : plus - from);
                if (const std::string problem = ae_problem(ae); !problem.empty())
                    usage(option + ": move destination \"" + ae + "\": " + problem +
                          " (move:AE+AE names destination AE titles)");
                destinations.insert(trimmed(ae));
                if (plus == std::string::npos) break;
                from = plus + 1;
            }
            // "move" anywhere in the list already allows any destination.
            if (!r.move || !r.move_destinations.empty()) r.move_destinations.insert(destinations.begin(), destinations.end());
            r.move = true;
        } else {
            usage(option + ": unknown right \"" + item + "\"; expected " + kRightsAllowed);
        }
        if (comma == std::string::npos) break;
        begin = comma + 1;
    }
    return r;
}

PeerRule parse_peer_rule(const std::string& value)
{
    const std::string form = " (expected AE@HOST=RIGHTS, HOST an IPv4 address, a host name or *, RIGHTS " +
                             std::string(kRightsAllowed) + ")";
    const std::size_t equals = value.rfind('=');
    if (equals == std::string::npos) usage("--peer " + value + ": no =RIGHTS" + form);
    const std::size_t at = value.rfind('@', equals);
    if (at == std::string::npos) usage("--peer " + value + ": no @HOST" + form);
    PeerRule rule;
    rule.text = value;
    rule.ae = value.substr(0, at);
    rule.host = value.substr(at + 1, equals - at - 1);
    if (const std::string problem = ae_problem(rule.ae); !problem.empty())
        usage("--peer " + value + ": AE title \"" + rule.ae + "\": " + problem + form);
    rule.ae = trimmed(rule.ae);
    if (rule.host.empty()) usage("--peer " + value + ": empty HOST" + form);
    if (rule.host.find_first_of(" ,=@/") != std::string::npos)
        usage("--peer " + value + ": host \"" + rule.host + "\" is not an address, a host name or *" + form);
    rule.rights = parse_rights("--peer " + value, value.substr(equals + 1));
    return rule;
}

SubjectRule parse_subject_rule(const std::string& value)
{
    const std::string form = " (expected SUBJECT=RIGHTS, SUBJECT as RFC 2253 text such as CN=modality1,O=Radiology, "
                             "RIGHTS " + std::string(kRightsAllowed) + ")";
    // The subject holds '=' itself: RIGHTS follow the last one.
    const std::size_t equals = value.rfind('=');
    if (equals == std::string::npos || equals == 0) usage("--peer-subject " + value + ": no SUBJECT=RIGHTS" + form);
    SubjectRule rule;
    rule.text = value;
    rule.subject = value.substr(0, equals);
    if (rule.subject.find('=') == std::string::npos)
        usage("--peer-subject " + value + ": subject \"" + rule.subject + "\" has no attribute (such as CN=)" + form);
    rule.rights = parse_rights("--peer-subject " + value, value.substr(equals + 1));
    return rule;
}

DicomSecurity::DicomSecurity(const GatewayOptions& options) : subjects_(options.peer_subjects)
{
    for (const PeerRule& rule : options.peers) {
        ResolvedPeer peer{rule, rule.host == "*", {}};
        in_addr literal{};
        if (peer.any_host) {
            // any address
        } else if (::inet_pton(AF_INET, rule.host.c_str(), &literal) == 1) {
            peer.addresses.insert(rule.host);
        } else {
            addrinfo hints{};
            hints.ai_family = AF_INET;
            hints.ai_socktype = SOCK_STREAM;
            addrinfo* found = nullptr;
            const int rc = ::getaddrinfo(rule.host.c_str(), nullptr, &hints, &found);
            if (rc != 0)
                usage("--peer " + rule.text + ": host \"" + rule.host + "\" does not resolve to an IPv4 address: " +
                      ::gai_strerror(rc));
            for (const addrinfo* a = found; a; a = a->ai_next) {
                char text[INET_ADDRSTRLEN] = "";
                ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof text);
                peer.addresses.insert(text);
            }
            ::freeaddrinfo(found);
        }
        peers_.push_back(std::move(peer));
    }
    if (options.tls.enabled()) tls_ = std::make_unique<TlsContext>(TlsContext::Role::server, options.tls);
}

DicomSecurity::~DicomSecurity() = default;

std::optional<Rights> DicomSecurity::rights_of(const std::string& calling_ae, const std::string& peer_address,
                                               const std::string& tls_subject, std::string* why) const
{
    if (open()) return Rights::all();
    std::optional<Rights> rights;
    if (!peers_.empty()) {
        const std::string ae = trimmed(calling_ae);
        bool known = false;
        for (const ResolvedPeer& p : peers_) {
            if (p.rule.ae != ae) continue;
            known = true;
            if (p.any_host || p.addresses.count(peer_address)) rights = rights ? *rights | p.rule.rights : p.rule.rights;
        }
        if (!rights) {
            if (why)
                *why = known ? "calling AE title \"" + ae + "\" may not connect from " + peer_address + " (--peer)"
                             : "calling AE title \"" + ae + "\" is not in the allow-list (--peer)";
            return std::nullopt;
        }
    }
    if (!subjects_.empty()) {
        std::optional<Rights> of_subject;
        for (const SubjectRule& s : subjects_)
            if (!tls_subject.empty() && s.subject == tls_subject)
                of_subject = of_subject ? *of_subject | s.rights : s.rights;
        if (!of_subject) {
            if (why) *why = "certificate subject \"" + tls_subject + "\" is not in the allow-list (--peer-subject)";
            return std::nullopt;
        }
        rights = rights ? *rights & *of_subject : *of_subject;
    }
    return rights;
}

std::string DicomSecurity::describe() const
{
    if (open() && tls_)
        return "the DICOM port admits every peer whose client certificate chains to --tls-ca: any calling AE title, "
               "any subject may store, query and retrieve (give --peer or --peer-subject to restrict it)";
    if (open())
        return "the DICOM port is open to every peer: any calling AE title from any host may store, query and "
               "retrieve (give --peer or --peer-subject to restrict it)";
    std::string out = "DICOM port allow-list:";
    for (const ResolvedPeer& p : peers_) {
        out += " " + p.rule.ae + "@" + p.rule.host;
        if (!p.any_host && p.rule.host != *p.addresses.begin()) {
            std::string list;
            for (const std::string& a : p.addresses) list += (list.empty() ? "" : ",") + a;
            out += "(" + list + ")";
        }
        out += "=" + p.rule.rights.text() + ";";
    }
    for (const SubjectRule& s : subjects_) out += " subject \"" + s.subject + "\"=" + s.rights.text() + ";";
    out.pop_back();
    return out + "; other peers are rejected";
}

}  // namespace blobstreaming::dicom
