#pragma once
/// Who may do what on blob-dicomd's DICOM port (docs/DICOM.md, "Security"):
/// the AE allow-list (--peer AE@HOST=RIGHTS) and the TLS certificate
/// subjects (--peer-subject SUBJECT=RIGHTS). Every decision of the gateway
/// about a peer goes through DicomSecurity::rights_of: the association's
/// acceptance (AssociationGate) and each operation (StorageScp: C-STORE,
/// C-FIND, C-GET, C-MOVE and its destinations).

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace blobstreaming {
class TlsContext;
}

namespace blobstreaming::dicom {

struct GatewayOptions;

/// What an admitted peer may do. C-ECHO needs no right.
struct Rights {
    bool store = false;     ///< C-STORE
    bool query = false;     ///< C-FIND
    bool retrieve = false;  ///< C-GET
    bool move = false;      ///< C-MOVE
    /// With move: the destination AE titles it may name; empty: any
    /// configured destination.
    std::set<std::string> move_destinations;

    /// Every right, any destination: the gateway without an allow-list.
    static Rights all();
    /// Whether a C-MOVE to `destination` (an AE title) is allowed.
    bool may_move_to(const std::string& destination) const;
    /// What both allow (the AE list and the subject list combined).
    Rights operator&(const Rights& other) const;
    /// What either allows (two rules of one AE title matching one host).
    Rights operator|(const Rights& other) const;
    /// "store,query,move:PACS+WS1", "none".
    std::string text() const;
};

/// Parses a comma list of store, query, retrieve, move and
/// move:AE+AE+...; throws Error(invalid_argument) starting with `context`
/// (the option and its whole value), naming the item and what is allowed.
Rights parse_rights(const std::string& context, const std::string& value);

/// One --peer value: AE@HOST=RIGHTS, HOST an IPv4 address, a host name
/// (resolved at start) or *.
struct PeerRule {
    std::string ae;
    std::string host;
    Rights rights;
    std::string text;  ///< as given
};

/// One --peer-subject value: SUBJECT=RIGHTS, SUBJECT as RFC 2253 text
/// ("CN=modality1,O=Radiology", the form blobstored's access lists use).
struct SubjectRule {
    std::string subject;
    Rights rights;
    std::string text;
};

/// Parses a --peer value; throws Error(invalid_argument) with the value and
/// the expected form.
PeerRule parse_peer_rule(const std::string& value);
/// Parses a --peer-subject value, likewise.
SubjectRule parse_subject_rule(const std::string& value);

class DicomSecurity {
public:
    /// From the options' rules: host names are resolved now (IPv4, every
    /// address) and the --tls-* files loaded; throws Error(invalid_argument)
    /// naming the --peer value whose host does not resolve, or the TLS file
    /// that failed and why.
    explicit DicomSecurity(const GatewayOptions& options);
    ~DicomSecurity();
    DicomSecurity(const DicomSecurity&) = delete;
    DicomSecurity& operator=(const DicomSecurity&) = delete;

    /// The DICOM port's TLS context (server role, the project's policy:
    /// TLS 1.2 or later, a client certificate of --tls-ca required); null
    /// for plain TCP.
    const TlsContext* tls() const { return tls_.get(); }

    /// No --peer and no --peer-subject: every peer may do everything (and
    /// the called AE title is not checked).
    bool open() const { return peers_.empty() && subjects_.empty(); }
    /// Whether associations must call this gateway's --aetitle.
    bool checks_called_ae() const { return !open(); }

    /// The rights of a peer: `calling_ae` (trailing and leading spaces
    /// ignored), its IPv4 address as text, the subject of its verified TLS
    /// certificate ("" without TLS). nullopt when the peer is not admitted
    /// at all; then `why` (when given) says which list refused it. With
    /// both lists configured a peer must be in both and gets what both
    /// allow; a list left empty restricts nothing.
    std::optional<Rights> rights_of(const std::string& calling_ae, const std::string& peer_address,
                                    const std::string& tls_subject, std::string* why = nullptr) const;

    /// The line logged at start: the rules, or the warning that the port is open.
    std::string describe() const;

private:
    struct ResolvedPeer {
        PeerRule rule;
        bool any_host = false;
        std::set<std::string> addresses;  ///< dotted IPv4
    };
    std::vector<ResolvedPeer> peers_;
    std::vector<SubjectRule> subjects_;
    std::unique_ptr<TlsContext> tls_;
};

}  // namespace blobstreaming::dicom
